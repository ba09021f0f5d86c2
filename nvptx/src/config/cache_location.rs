//! Where the cache lives: beside the driver's own JIT cache when the user moved that
//! (`CUDA_CACHE_PATH` for CUDA; the backend names its variable), else in the user's
//! cache directory (`$XDG_CACHE_HOME`, else `~/.cache`), always in a subdirectory of
//! ours. Pure code: the caller passes the variables' values (`super::link_cache_setting`, with
//! the other settings).

use std::path::PathBuf;

/// The subdirectory the entries live in.
pub const SUBDIR: &str = "gomp-plugin-rs";

/// The cache directory from the driver's cache path, `XDG_CACHE_HOME` and `HOME`
/// (each `None` when unset); `None` when none gives a directory. Empty values count as
/// unset; a relative `XDG_CACHE_HOME` is ignored, as the XDG specification says.
pub fn directory(
    driver_path: Option<&str>,
    xdg: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    let set = |v: Option<&str>| v.filter(|s| !s.is_empty()).map(PathBuf::from);
    if let Some(p) = set(driver_path) {
        return Some(p.join(SUBDIR));
    }
    if let Some(p) = set(xdg).filter(|p| p.is_absolute()) {
        return Some(p.join(SUBDIR));
    }
    set(home).map(|h| h.join(".cache").join(SUBDIR))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order() {
        let d = |a, b, c| directory(a, b, c).map(|p| p.to_string_lossy().into_owned());
        assert_eq!(
            d(Some("/cc"), Some("/x"), Some("/h")).as_deref(),
            Some("/cc/gomp-plugin-rs")
        );
        assert_eq!(
            d(Some(""), Some("/x"), Some("/h")).as_deref(),
            Some("/x/gomp-plugin-rs")
        );
        assert_eq!(
            d(None, Some("rel"), Some("/h")).as_deref(),
            Some("/h/.cache/gomp-plugin-rs")
        );
        assert_eq!(
            d(None, None, Some("/h")).as_deref(),
            Some("/h/.cache/gomp-plugin-rs")
        );
        assert_eq!(d(None, Some(""), Some("")), None);
        assert_eq!(d(None, None, None), None);
    }
}
