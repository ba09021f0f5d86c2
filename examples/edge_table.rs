//! edge_table: the files produced from the entry-point table (src/edge/table.rs).
//!
//! usage: cargo run -p gomp-plugin --example edge_table -- write | check | rust-decls PRODUCT
//!   write        rewrite libgomp.map, libgomp-gcn.map, abi-tests/entry_points.inc and the
//!                generated tables of docs/plugin-abi.md; lists what changed
//!   check        exit 1 listing the files that differ from the table (the unit test
//!                edge::generated::tests does the same)
//!   rust-decls P the Rust declarations of product P's entry points on stdout (cbindgen
//!                input for include/generate.sh)

use gomp_plugin::edge::generated;
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let usage = "usage: edge_table write | check | rust-decls PRODUCT";
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["rust-decls", p] => match generated::product(p) {
            Some(p) => {
                print!("{}", generated::rust_decls(p));
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("edge_table: unknown product '{p}'");
                ExitCode::from(2)
            }
        },
        _ => gomp_plugin::generate::main("edge_table", usage, root, generated::outputs),
    }
}
