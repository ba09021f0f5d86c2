//! The process's store, opened once from the linked-image cache's setting
//! (`crate::config::link_cache_setting::Setting`, read with every other setting): the store
//! the linked-image cache (`crate::image::link_cache`) uses and the words of the
//! `GOMP_NVPTX_INFO` device line on it.
//!
//! Threading: the store is opened once per process (a `OnceCell`) and is process- and
//! thread-safe.

use super::store::Store;
use crate::config::link_cache_setting::Setting;
use once_cell::sync::OnceCell;

/// The process's store, opened (and its directory created and checked) on first use:
/// the store, or why there is none (the cache is off or the directory unusable; said
/// once with `GOMP_DEBUG`).
fn opened(setting: &Setting) -> &'static std::result::Result<Store, String> {
    static STORE: OnceCell<std::result::Result<Store, String>> = OnceCell::new();
    STORE.get_or_init(|| {
        let r = match setting {
            Setting::Off(why) => Err(why.clone()),
            Setting::On { dir, limit } => Store::open(dir.clone(), *limit),
        };
        match &r {
            Ok(s) => log::debug!(
                "linked-image cache {} (at most {} bytes)",
                s.dir().display(),
                s.limit()
            ),
            Err(why) => log::debug!("linked-image cache off: {why}"),
        }
        r
    })
}

/// The process's store (see [`opened`]); `None` when the cache is off. Thread-safe.
pub fn store(setting: &Setting) -> Option<&'static Store> {
    opened(setting).as_ref().ok()
}

/// The cache's state for the `GOMP_NVPTX_INFO` device line (opens the store).
/// Thread-safe.
pub fn describe(setting: &Setting) -> String {
    match opened(setting) {
        Ok(s) => format!(
            "linked-image cache {} (at most {} bytes)",
            s.dir().display(),
            s.limit()
        ),
        Err(why) => format!("linked-image cache off ({why})"),
    }
}
