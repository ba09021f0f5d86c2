//! The observability switches ([`Switches`]): plain data, read with every other setting
//! and handed to the observe module's entry points (kept apart from `observe`'s body so
//! that [`super::info`] names a sibling, not its parent).

use std::path::PathBuf;

/// The observability switches of the process (`GOMP_NVPTX_INFO`, `GOMP_NVPTX_PROFILE`,
/// `GOMP_NVPTX_TRACE`, `GOMP_NVPTX_NVTX` with NVTX's `NVTX_INJECTION64_PATH`), read
/// with every other setting (`crate::config`) and handed to this module's entry
/// points. Plain data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Switches {
    /// `GOMP_NVPTX_INFO`: info lines.
    pub info: bool,
    /// `GOMP_NVPTX_PROFILE`: the table at exit.
    pub profile: bool,
    /// `GOMP_NVPTX_TRACE`: the trace file.
    pub trace: Option<PathBuf>,
    /// `GOMP_NVPTX_NVTX`: NVTX ranges when a tool is attached (default on).
    pub nvtx: bool,
    /// The NVTX tool to attach: `NVTX_INJECTION64_PATH` while `nvtx` is on.
    pub nvtx_tool: Option<PathBuf>,
}

impl Default for Switches {
    /// Nothing recorded; NVTX on, no tool named.
    fn default() -> Switches {
        Switches {
            info: false,
            profile: false,
            trace: None,
            nvtx: true,
            nvtx_tool: None,
        }
    }
}

impl Switches {
    /// Whether anything is recorded (profile or trace).
    pub fn recording(&self) -> bool {
        self.profile || self.trace.is_some()
    }
}
