//! The observability switches ([`Switches`]): plain data, read with every other setting
//! (`crate::config`) and handed to `crate::observe`'s entry points, which import them
//! from here; with the variable NVTX names its tool by and the JIT-cache words of the
//! `GOMP_NVPTX_INFO` line, read at the same moment ([`jit_cache`]).

use std::path::PathBuf;

/// The observability switches of the process (`GOMP_NVPTX_INFO`, `GOMP_NVPTX_PROFILE`,
/// `GOMP_NVPTX_TRACE`, `GOMP_NVPTX_NVTX` with NVTX's `NVTX_INJECTION64_PATH`), read
/// with every other setting (`crate::config`) and handed to `crate::observe`'s entry
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

/// The variable that names the NVTX tool (64-bit processes; NVTX v3's load sequence,
/// `crate::observe::nvtx::abi`), read into [`Switches::nvtx_tool`].
pub const INJECTION_PATH_VARIABLE: &str = "NVTX_INJECTION64_PATH";

/// Whether and where the driver caches JIT output, from `CUDA_CACHE_DISABLE` and
/// `CUDA_CACHE_PATH` (read through `get`), as the `GOMP_NVPTX_INFO` device line says it.
/// Pure.
pub fn jit_cache(get: impl Fn(&str) -> Option<String>) -> String {
    if get("CUDA_CACHE_DISABLE").is_some_and(|v| v.trim() == "1") {
        return "JIT cache disabled (CUDA_CACHE_DISABLE=1)".into();
    }
    match get("CUDA_CACHE_PATH").filter(|p| !p.is_empty()) {
        Some(p) => format!("JIT cache {p} (CUDA_CACHE_PATH)"),
        None => "JIT cache ~/.nv/ComputeCache (driver default)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jit_cache_words() {
        let env = gomp_plugin::settings::lookup;
        assert!(jit_cache(env(&[])).contains("driver default"));
        assert!(jit_cache(env(&[
            ("CUDA_CACHE_DISABLE", "1"),
            ("CUDA_CACHE_PATH", "/c")
        ]))
        .contains("disabled"));
        assert_eq!(
            jit_cache(env(&[("CUDA_CACHE_PATH", "/c")])),
            "JIT cache /c (CUDA_CACHE_PATH)"
        );
        assert!(jit_cache(env(&[("CUDA_CACHE_DISABLE", "0")])).contains("driver default"));
    }
}
