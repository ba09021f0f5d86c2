//! The linked-image cache: the JIT link's output (a cubin) kept on disk, so that the
//! next process loading the same image loads the cubin (`cuModuleLoadData`) instead
//! of linking. The store itself (directory, format, checksum, atomic writes, size
//! bound) is the plugin's [`crate::cache`]; this module says what an entry's
//! key is made of, where the store lives for CUDA, and when it is off.
//!
//! - Key: every PTX object of the image in order, the JIT options that decide the
//!   output, the device's compute capability, the driver (`cuDriverGetVersion` and the
//!   kernel module's version line), the plugin version ([`key`]).
//! - Where: `$CUDA_CACHE_PATH/gomp-plugin-rs`, else `$XDG_CACHE_HOME/gomp-plugin-rs`,
//!   else `~/.cache/gomp-plugin-rs`; at most `GOMP_NVPTX_LINK_CACHE_SIZE` bytes
//!   (default [`DEFAULT_LIMIT`]).
//! - Off with `CUDA_CACHE_DISABLE=1` (the driver's own switch) or
//!   `GOMP_NVPTX_LINK_CACHE=0`, or when the directory is not private to the user.
//! - Never fails a load: a corrupt, truncated or foreign entry, an entry the driver
//!   refuses, or a failed write is a `GOMP_DEBUG` line, and the image is linked as
//!   without a cache (and the entry stored again).
//!
//! Other kinds of derived data (per-kernel launch choices, say) go in the same store
//! under their own kind with a key built the same way ([`image_key`] gives the image's
//! key to extend).
//!
//! Threading: the store is opened once per process ([`store`]); loads on several
//! threads or devices use it at once (the store's operations are process- and
//! thread-safe).

use crate::cache::{Key, KeyBuilder, Lookup, Store};
use crate::cuda::safe::Module;
use crate::cuda::sys::CUjit_option;
use crate::image::link::{link_ptx, Linked};
use crate::observe::nvtx::{self, Kind};
use gomp_plugin::error::Result;
use once_cell::sync::OnceCell;

/// The cache's setting is the settings' (`crate::config::link_cache_setting`), its store, opened
/// once per process, the cache's (`crate::cache::opened`); named here too, where the
/// cache is used.
pub use crate::cache::opened::{describe, store};
pub use crate::config::link_cache_setting::{Setting, DEFAULT_LIMIT};

/// The entry kind of a linked image.
pub const KIND: &str = "cubin";
/// The key's domain; the number changes when what goes into a key or how the plugin
/// links changes.
const DOMAIN: &str = "gomp-plugin-rs nvptx linked image 1";

/// What the driver is, for the key: `cuDriverGetVersion` says the CUDA release only,
/// the kernel module's version line the exact driver build (its JIT compiler).
pub fn driver_identity(version: i32) -> String {
    static NVRM: OnceCell<String> = OnceCell::new();
    let nvrm = NVRM.get_or_init(|| {
        std::fs::read_to_string("/proc/driver/nvidia/version")
            .ok()
            .and_then(|t| t.lines().next().map(str::to_string))
            .unwrap_or_default()
    });
    format!("{version} {nvrm}")
}

/// The facts of the device and driver an image is linked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Compute capability.
    pub cc: (i32, i32),
    /// [`driver_identity`].
    pub driver: String,
}

/// The key of the image made of `ptx` linked under `options` for `target`, as a
/// builder to finish (or to extend, for data derived from the linked image). Pure.
pub fn image_key<T: AsRef<[u8]>>(
    ptx: &[T],
    options: &[(CUjit_option, usize)],
    target: &Target,
) -> KeyBuilder {
    let mut k = KeyBuilder::new(DOMAIN);
    k.field("plugin", env!("CARGO_PKG_VERSION").as_bytes())
        .field("driver", target.driver.as_bytes())
        .int("cc major", target.cc.0 as i64)
        .int("cc minor", target.cc.1 as i64)
        .int("options", options.len() as i64);
    for &(o, v) in options {
        k.int("option", o as i64).int("value", v as i64);
    }
    k.int("objects", ptx.len() as i64);
    for p in ptx {
        k.field("ptx", p.as_ref());
    }
    k
}

/// The key of a linked image ([`image_key`] finished).
pub fn key<T: AsRef<[u8]>>(ptx: &[T], options: &[(CUjit_option, usize)], target: &Target) -> Key {
    image_key(ptx, options, target).finish()
}

/// How an image's module was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Linked, the cache being off.
    Off,
    /// Loaded from the cache.
    Hit,
    /// Linked; `stored`: the cubin was stored; `replaced`: why the file that was there
    /// could not be used (`None`: there was none).
    Miss {
        /// Whether the cubin is in the cache now.
        stored: bool,
        /// Why an entry present was not used.
        replaced: Option<String>,
    },
}

impl Outcome {
    /// A few words for `GOMP_NVPTX_INFO` and the profile.
    pub fn describe(&self) -> String {
        match self {
            Outcome::Off => "linked (linked-image cache off)".into(),
            Outcome::Hit => "linked-image cache hit".into(),
            Outcome::Miss { stored, replaced } => format!(
                "linked-image cache miss{}, linked{}",
                replaced
                    .as_ref()
                    .map_or(String::new(), |why| format!(" (entry unusable: {why})")),
                if *stored { ", stored" } else { ", not stored" }
            ),
        }
    }
}

/// Loads the module of the image `ptx` for `target` (asked only when there is a
/// store): from `store` when it holds the
/// image, else by linking under `options` (then stored). Errors only where linking
/// without a cache would fail. Also returns the image's key (`None` without a store),
/// which the entries of data derived from the image start from.
pub fn load<T: AsRef<[u8]>>(
    ptx: &[T],
    options: &[(CUjit_option, usize)],
    target: impl FnOnce() -> Target,
    store: Option<&Store>,
) -> Result<(Module, Outcome, Option<Key>)> {
    let Some(store) = store else {
        let _r = nvtx::range(Kind::Image, None, || {
            "JIT link (linked-image cache off)".into()
        });
        return Ok((link_ptx(ptx, options, false)?.module, Outcome::Off, None));
    };
    let key = key(ptx, options, &target());
    let path = store.path(KIND, &key);
    let replaced = match store.get(KIND, &key) {
        Lookup::Hit(payload) => {
            let size = payload.bytes().len() as u64;
            let _r = nvtx::range(Kind::Image, Some(size), || "linked-image cache hit".into());
            // SAFETY: a complete cubin (checked entry), alive during the call.
            match unsafe { Module::load_data(payload.bytes().as_ptr().cast()) } {
                Ok(m) => {
                    log::debug!(
                        "linked-image cache hit: {} ({} bytes)",
                        path.display(),
                        payload.bytes().len()
                    );
                    return Ok((m, Outcome::Hit, Some(key)));
                }
                Err(e) => Some(format!("the driver refused it: {e}")),
            }
        }
        Lookup::Miss => None,
        Lookup::Unusable(why) => Some(why),
    };
    if let Some(why) = &replaced {
        log::debug!(
            "linked-image cache: ignoring {}: {why}; linking",
            path.display()
        );
    }
    let jit = nvtx::range(Kind::Image, None, || {
        "JIT link (linked-image cache miss)".into()
    });
    let Linked { module, cubin } = link_ptx(ptx, options, true)?;
    drop(jit);
    let stored = match cubin.as_deref().map(|c| store.put(KIND, &key, c)) {
        Some(Ok(())) => {
            log::debug!("linked-image cache: stored {}", path.display());
            true
        }
        Some(Err(e)) => {
            log::debug!("linked-image cache: not stored: {e}");
            false
        }
        None => false,
    };
    Ok((module, Outcome::Miss { stored, replaced }, Some(key)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::sys::*;

    fn setting(pairs: &[(&str, &str)]) -> Setting {
        setting_limit(pairs, true, DEFAULT_LIMIT)
    }

    fn setting_limit(pairs: &[(&str, &str)], on: bool, limit: u64) -> Setting {
        Setting::resolve(on, limit, &gomp_plugin::settings::lookup(pairs))
    }

    fn on(dir: &str, limit: u64) -> Setting {
        Setting::On {
            dir: dir.into(),
            limit,
        }
    }

    #[test]
    fn settings() {
        let home = ("HOME", "/h");
        assert_eq!(
            setting(&[home]),
            on("/h/.cache/gomp-plugin-rs", DEFAULT_LIMIT)
        );
        assert_eq!(
            setting(&[home, ("CUDA_CACHE_PATH", "/cc"), ("XDG_CACHE_HOME", "/x")]),
            on("/cc/gomp-plugin-rs", DEFAULT_LIMIT)
        );
        assert_eq!(
            setting_limit(&[home, ("XDG_CACHE_HOME", "/x")], true, 1 << 20),
            on("/x/gomp-plugin-rs", 1 << 20)
        );
        assert_eq!(
            setting(&[home, ("CUDA_CACHE_DISABLE", "1")]),
            Setting::Off("CUDA_CACHE_DISABLE=1".into())
        );
        assert_eq!(
            setting(&[home, ("CUDA_CACHE_DISABLE", "0")]),
            on("/h/.cache/gomp-plugin-rs", DEFAULT_LIMIT)
        );
        assert_eq!(
            setting_limit(&[home], false, DEFAULT_LIMIT),
            Setting::Off("GOMP_NVPTX_LINK_CACHE=0".into())
        );
        assert_eq!(
            setting_limit(&[home], true, 0),
            Setting::Off("GOMP_NVPTX_LINK_CACHE_SIZE=0".into())
        );
        assert!(matches!(setting(&[]), Setting::Off(w) if w.starts_with("no cache directory")));
    }

    #[test]
    fn key_covers_every_input() {
        let ptx = vec![b"// a\0".to_vec(), b"// b\0".to_vec()];
        let t = Target {
            cc: (9, 0),
            driver: "13000 NVRM 580".into(),
        };
        let base = key(&ptx, &[], &t);
        assert_eq!(base, key(&ptx.clone(), &[], &t.clone()), "deterministic");
        let others = [
            key(&[ptx[1].clone(), ptx[0].clone()], &[], &t),
            key(&[b"// a\0// b\0".to_vec()], &[], &t),
            key(&ptx[..1], &[], &t),
            key(&[b"// a\0".to_vec(), b"// c\0".to_vec()], &[], &t),
            key(&ptx, &[(CU_JIT_OPTIMIZATION_LEVEL, 3)], &t),
            key(&ptx, &[(CU_JIT_OPTIMIZATION_LEVEL, 2)], &t),
            key(&ptx, &[(CU_JIT_MAX_REGISTERS, 3)], &t),
            key(
                &ptx,
                &[],
                &Target {
                    cc: (8, 0),
                    ..t.clone()
                },
            ),
            key(
                &ptx,
                &[],
                &Target {
                    cc: (9, 1),
                    ..t.clone()
                },
            ),
            key(
                &ptx,
                &[],
                &Target {
                    driver: "13000 NVRM 581".into(),
                    ..t.clone()
                },
            ),
        ];
        for (i, o) in others.iter().enumerate() {
            assert_ne!(&base, o, "variant {i}");
            for (j, p) in others.iter().enumerate().skip(i + 1) {
                assert_ne!(o, p, "variants {i} and {j}");
            }
        }
    }

    #[test]
    fn outcomes() {
        assert_eq!(Outcome::Hit.describe(), "linked-image cache hit");
        assert_eq!(
            Outcome::Miss {
                stored: true,
                replaced: None
            }
            .describe(),
            "linked-image cache miss, linked, stored"
        );
        assert!(Outcome::Miss {
            stored: false,
            replaced: Some("truncated".into())
        }
        .describe()
        .contains("(entry unusable: truncated), linked, not stored"));
        assert!(Outcome::Off.describe().contains("off"));
    }
}
