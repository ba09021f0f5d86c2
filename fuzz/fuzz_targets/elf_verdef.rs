//! ELF version-definition parsing (libgomp detection) on arbitrary bytes: never panics,
//! and whatever it returns is consistent with the version classifier.
#![no_main]
use gomp_plugin::libgomp::{verdef, version};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(nodes) = verdef::version_nodes(data) {
        let _ = version::newer_node(nodes.iter().map(String::as_str));
    }
});
