//! Link the cdylib as GCC's plugin is linked: SONAME libgomp-plugin-nvptx.so.1 and only
//! the `GOMP_OFFLOAD_*` symbols of `libgomp.map` exported; with the cargo feature `gcn`,
//! SONAME libgomp-plugin-gcn.so.1 and `libgomp-gcn.map`.

fn main() {
    let gcn = std::env::var_os("CARGO_FEATURE_GCN").is_some();
    let (soname, script) = if gcn {
        ("libgomp-plugin-gcn.so.1", "libgomp-gcn.map")
    } else {
        ("libgomp-plugin-nvptx.so.1", "libgomp.map")
    };
    let map = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(script);
    println!("cargo:rerun-if-changed={}", map.display());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
}
