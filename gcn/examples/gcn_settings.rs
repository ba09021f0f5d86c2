//! gcn_settings: the files produced from the gcn plugin's settings table
//! (gcn/src/config.rs's `VARIABLES`): the README's table and
//! conformance/src/gcn_variables.rs (for the tests' support module, shared by
//! both products).
//!
//! usage: cargo run -p gomp-plugin-gcn --example gcn_settings -- write | check
//!   write   rewrite the files that differ from the table; lists what changed
//!   check   exit 1 listing the files that differ (the unit test
//!           config::tests::generated_files_agree_with_the_table does the same)

use gomp_plugin_gcn::config::generated;
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lies in the workspace");
    let usage = "usage: gcn_settings write | check";
    gomp_plugin::generate::main("gcn_settings", usage, root, generated)
}
