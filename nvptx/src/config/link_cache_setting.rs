//! The linked-image cache's setting (`GOMP_NVPTX_LINK_CACHE`,
//! `GOMP_NVPTX_LINK_CACHE_SIZE`, the driver's `CUDA_CACHE_*` variables): on or off, and
//! in which directory ([`cache_location`](super::cache_location)) with which bound. The
//! process's store it opens, once, is `crate::cache::opened`'s; what an entry holds and
//! its key are `crate::image::link_cache`'s.
//!
//! Threading: [`Setting`] is plain data.

use crate::config::cache_location as location;
use std::path::PathBuf;

/// Default `GOMP_NVPTX_LINK_CACHE_SIZE`.
pub const DEFAULT_LIMIT: u64 = 256 << 20;

/// The cache setting of the process. Plain data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Setting {
    /// Off: the variable (and value) that turned it off, or why there is no directory.
    Off(String),
    /// In `dir`, at most `limit` bytes.
    On {
        /// The store's directory.
        dir: PathBuf,
        /// Its size bound.
        limit: u64,
    },
}

impl Setting {
    /// The cache setting from `GOMP_NVPTX_LINK_CACHE` (`on`) and
    /// `GOMP_NVPTX_LINK_CACHE_SIZE` (`limit`), both read and checked with the other
    /// settings (`crate::config`), and from `CUDA_CACHE_DISABLE`,
    /// `CUDA_CACHE_PATH`, `XDG_CACHE_HOME` and `HOME`, read through `get` at the same
    /// moment. Pure.
    pub fn resolve(on: bool, limit: u64, get: &impl Fn(&str) -> Option<String>) -> Setting {
        if !on {
            return Setting::Off("GOMP_NVPTX_LINK_CACHE=0".into());
        }
        if get("CUDA_CACHE_DISABLE").is_some_and(|v| v.trim() == "1") {
            return Setting::Off("CUDA_CACHE_DISABLE=1".into());
        }
        if limit == 0 {
            return Setting::Off("GOMP_NVPTX_LINK_CACHE_SIZE=0".into());
        }
        let (cuda, xdg, home) = (get("CUDA_CACHE_PATH"), get("XDG_CACHE_HOME"), get("HOME"));
        match location::directory(cuda.as_deref(), xdg.as_deref(), home.as_deref()) {
            Some(dir) => Setting::On { dir, limit },
            None => Setting::Off(
                "no cache directory (CUDA_CACHE_PATH, XDG_CACHE_HOME and HOME unset)".into(),
            ),
        }
    }
}
