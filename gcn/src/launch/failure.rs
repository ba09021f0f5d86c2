//! How a launch on a gcn device fails or ends (docs/gcn-launch.md §4): a kernel that
//! cannot be launched is refused before its dispatch ([`check_launchable`]); a kernel's
//! end, decoded from its return value, is acted on as the stock plugin does
//! ([`finish`]: `exit`, `abort`, a corrupt value). Functions; thread-safe.

use super::protocol::*;
use crate::image::Kernel;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::report;

/// Refuses a kernel that cannot be launched: no kernel descriptor, or more explicit
/// kernel arguments than the protocol's one pointer.
pub fn check_launchable(k: &Kernel) -> Result<()> {
    if k.object == 0 {
        return Err(Error::invalid(format!(
            "GCN fatal error: kernel '{}' has no kernel descriptor in its code object: it cannot be launched",
            k.name
        )));
    }
    if k.meta
        .as_ref()
        .is_some_and(|m| m.kernarg_segment_size > MAX_EXPLICIT_KERNARGS)
    {
        return Err(Error::invalid(format!(
            "GCN fatal error: Unexpectedly large kernargs segment requested (kernel '{}')",
            k.name
        )));
    }
    Ok(())
}

/// Acts on how a kernel ended: nothing for a normal end; the host exits or aborts
/// as the stock plugin does (§4); `gcn_debug` (`GCN_DEBUG`) says "GCN Kernel aborted"
/// first.
pub fn finish(ending: Ending, gcn_debug: bool) {
    match ending {
        Ending::Normal => {}
        Ending::Exit(code) => {
            log::debug!("the kernel called exit({code}): the program exits with {code}");
            std::process::exit(code as i32);
        }
        Ending::Abort => {
            if gcn_debug {
                eprintln!("GCN Kernel aborted");
            }
            std::process::abort();
        }
        Ending::Signal(s) => {
            log::debug!("the kernel ended with signal {s}: aborting");
            std::process::abort();
        }
        Ending::Corrupt(v) => {
            // The stock plugin's message ends with its own newline (a blank line
            // follows it).
            report::error(&format!(
                "Possible kernel exit value corruption, 2 most significant bytes aren't 0xffff or 0xcafe: {v:#x}\n"
            ));
            std::process::abort();
        }
    }
}
