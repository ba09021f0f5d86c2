//! Link the cdylib as GCC's plugin is linked: SONAME libgomp-plugin-nvptx.so.1 and only
//! the `GOMP_OFFLOAD_*` symbols of `libgomp.map` exported.

fn main() {
    let map = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("libgomp.map");
    println!("cargo:rerun-if-changed={}", map.display());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libgomp-plugin-nvptx.so.1");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
}
