//! Link the cdylib as GCC's plugin is linked: SONAME libgomp-plugin-nvptx.so.1. The
//! exported set is what the crate defines `#[no_mangle]` (the shells of the framework's
//! entry-point table and the plugin's own API); rustc exports exactly those, so no
//! version script of our own is passed to the linker (a second one breaks GNU ld:
//! "anonymous version tag cannot be combined"). libgomp.map, generated from the table, is
//! only the list the exports are checked against.
//! abi-tests/check-exports.sh checks the set against libgomp.map and the stock plugin.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libgomp-plugin-nvptx.so.1");
}
