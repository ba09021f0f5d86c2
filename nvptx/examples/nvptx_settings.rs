//! nvptx_settings: the files produced from the nvptx plugin's settings tables
//! (nvptx/src/config.rs's `VARIABLES`, tune.rs's `GOMP_NVPTX_TUNE` keys with the copy
//! paths' own knobs): the README's tables and conformance/src/nvptx_variables.rs.
//!
//! usage: cargo run -p gomp-plugin-nvptx --example nvptx_settings -- write | check
//!   write   rewrite the files that differ from the tables; lists what changed
//!   check   exit 1 listing the files that differ (the unit test
//!           config::tests::generated_files_agree_with_the_tables does the same)

use gomp_plugin_nvptx::config::generated;
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lies in the workspace");
    let usage = "usage: nvptx_settings write | check";
    gomp_plugin::generate::main("nvptx_settings", usage, root, generated)
}
