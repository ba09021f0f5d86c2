//! Environment variables the nvptx plugin reads, parsed and validated. Garbage never
//! crashes: the plugin warns (`libgomp: ...`) and uses the default.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `GOMP_NVPTX_JIT` | `-O0`..`-O4`: PTX JIT optimisation level | driver default |
//! | `GOMP_NVPTX_LOWLAT_POOL` | bytes of dynamic shared memory per team for `omp_low_lat_mem_space` | 8192 |
//! | `GOMP_NVPTX_NATIVE_GPU_THREAD_STACK_SIZE` | CUDA per-thread stack (`CU_LIMIT_STACK_SIZE`) | driver default |
//! | `GOMP_NVPTX_SOFT_STACK_SIZE` | OpenMP soft stack per warp, bytes | 131072 |
//! | `GOMP_NVPTX_HEAP_SIZE` | device `malloc` heap (`CU_LIMIT_MALLOC_HEAP_SIZE`), bytes | driver default (8 MiB) |
//! | `GOMP_REVERSE_OFFLOAD_THREADS` | most reverse-offload host functions running at once (1–1024) | 8 |
//! | `GOMP_NVPTX_DEVICE_CACHE` | device memory kept per device for reuse once freed, bytes | 256 MiB |
//! | `GOMP_NVPTX_PINNED_CACHE` | page-locked host memory kept per device for reuse once freed, bytes | 256 MiB |
//! | `GOMP_NVPTX_LINK_CACHE` | `0`: no linked-image cache (also off with `CUDA_CACHE_DISABLE=1`) | 1 |
//! | `GOMP_NVPTX_LINK_CACHE_SIZE` | most bytes the linked-image cache keeps (0: off) | 256 MiB |
//!
//! Experiment knobs of the launch shape and the JIT: `GOMP_NVPTX_TUNE` ([`Tune`]).
//!
//! Not for users (an experiment knob, deliberately left out of the README):
//! `GOMP_NVPTX_STAGING="threads,chunk_bytes,buffers"` shapes the staging engine of large
//! pageable copies ([`StagingParams`]; default: 3 lanes per 4 processors, at most 12, `4m`, 2).

use crate::device::tune::Tune;
use crate::host::staging::StagingParams;
use crate::image::link_cache;

/// Parsed settings. Plain data, read once per device initialisation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `CU_JIT_OPTIMIZATION_LEVEL`, if requested.
    pub jit_opt_level: Option<u32>,
    /// Dynamic shared memory per launch, bytes.
    pub lowlat_pool: usize,
    /// CUDA per-thread stack size, if requested.
    pub native_stack: Option<usize>,
    /// Soft-stack bytes per warp.
    pub soft_stack: usize,
    /// Device `malloc` heap size, if requested.
    pub heap: Option<usize>,
    /// Most reverse-offload requests served at once, process-wide.
    pub reverse_offload_threads: usize,
    /// Shape of the staging engine for large pageable copies.
    pub staging: StagingParams,
    /// `GOMP_NVPTX_TUNE`: experiment knobs of the launch shape and the JIT.
    pub tune: Tune,
    /// Most bytes of freed device memory kept for reuse per device (see
    /// `crate::device::memory`).
    pub device_cache: usize,
    /// Most bytes of freed page-locked host memory kept for reuse per device (see
    /// `crate::host::pinned_pool`).
    pub pinned_cache: usize,
    /// The linked-image cache (`GOMP_NVPTX_LINK_CACHE*`, `CUDA_CACHE_*`).
    pub link_cache: link_cache::Setting,
}

/// Default `GOMP_NVPTX_LOWLAT_POOL` (as GCC's plugin).
pub const DEFAULT_LOWLAT_POOL: usize = 8 * 1024;
/// Default `GOMP_REVERSE_OFFLOAD_THREADS` (as the devel/omp branch that introduced it).
pub const DEFAULT_REVERSE_OFFLOAD_THREADS: usize = 8;
/// Default soft stack per warp (as GCC's plugin).
pub const DEFAULT_SOFT_STACK: usize = 128 * 1024;
/// Default `GOMP_NVPTX_DEVICE_CACHE`: enough for the hot paths (alloc+free loops, the
/// mapped blocks of a target region) to need no driver call, little beside the memory
/// of a GPU that other processes may want.
pub const DEFAULT_DEVICE_CACHE: usize = 256 << 20;
/// Default `GOMP_NVPTX_PINNED_CACHE`.
pub const DEFAULT_PINNED_CACHE: usize = 256 << 20;

pub use gomp_plugin::settings::parse_size;

/// The byte-count variables and their accepted ranges (inclusive). A value outside its
/// range is reported and replaced by the default, like one that does not parse.
pub const SIZE_BOUNDS: [(&str, usize, usize); 7] = [
    ("GOMP_NVPTX_LOWLAT_POOL", 0, 1 << 20),
    ("GOMP_NVPTX_NATIVE_GPU_THREAD_STACK_SIZE", 0, 1 << 30),
    // Below 1 KiB per warp not even GCC's device runtime's own frames fit.
    ("GOMP_NVPTX_SOFT_STACK_SIZE", 1024, 1 << 30),
    ("GOMP_NVPTX_HEAP_SIZE", 0, 1 << 40),
    // The cache bounds: 0 keeps nothing (turns the linked-image cache off); 1 TiB is
    // beyond any GPU's or host's memory, so a larger value is a typo.
    ("GOMP_NVPTX_DEVICE_CACHE", 0, 1 << 40),
    ("GOMP_NVPTX_PINNED_CACHE", 0, 1 << 40),
    ("GOMP_NVPTX_LINK_CACHE_SIZE", 0, 1 << 40),
];

/// Parses `GOMP_NVPTX_JIT`: space-separated options, of which only `-O0`..`-O4` exist.
pub fn parse_jit(s: &str) -> Result<Option<u32>, String> {
    let mut level = None;
    for opt in s.split_whitespace() {
        match opt.strip_prefix("-O").and_then(|l| l.parse::<u32>().ok()) {
            Some(l) if l <= 4 && opt.len() == 3 => level = Some(l),
            _ => {
                return Err(format!(
                    "Error parsing GOMP_NVPTX_JIT: unknown option '{opt}'"
                ))
            }
        }
    }
    Ok(level)
}

/// The value of `name` read through `get` and parsed by `parse`; unset, or garbage
/// (reported through `warn`, ending "using the {fallback}"), gives `T::default()`.
fn parsed<T: Default>(
    get: &impl Fn(&str) -> Option<String>,
    warn: &impl Fn(&str),
    name: &str,
    parse: impl Fn(&str) -> Result<T, String>,
    fallback: &str,
) -> T {
    get(name)
        .and_then(|v| {
            parse(&v)
                .map_err(|e| {
                    warn(&format!(
                        "Invalid value '{v}' for {name} ({e}); using the {fallback}"
                    ))
                })
                .ok()
        })
        .unwrap_or_default()
}

impl Config {
    /// Reads the settings through `get` (the environment in production), reporting each
    /// bad value through `warn` and falling back to its default.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>, warn: impl Fn(&str)) -> Config {
        // A byte count within its variable's bounds (SIZE_BOUNDS), or `None` after a
        // warning naming the bounds.
        let size = |name: &str, default: &str| -> Option<usize> {
            let v = get(name)?;
            let &(_, min, max) = SIZE_BOUNDS.iter().find(|(n, _, _)| *n == name)?;
            match parse_size(&v) {
                Some(n) if (min..=max).contains(&n) => Some(n),
                _ => {
                    warn(&format!(
                        "Invalid value '{v}' for {name} (expected {min}..{max} bytes); \
                         using the default ({default})"
                    ));
                    None
                }
            }
        };
        let jit_opt_level =
            get("GOMP_NVPTX_JIT").and_then(|v| parse_jit(&v).map_err(|e| warn(&e)).ok().flatten());
        Config {
            jit_opt_level,
            lowlat_pool: size("GOMP_NVPTX_LOWLAT_POOL", "8192").unwrap_or(DEFAULT_LOWLAT_POOL),
            // 0 asks for the driver's default, as unset does.
            native_stack: size("GOMP_NVPTX_NATIVE_GPU_THREAD_STACK_SIZE", "the driver's")
                .filter(|&n| n > 0),
            soft_stack: size("GOMP_NVPTX_SOFT_STACK_SIZE", "131072")
                .map(|n| n.next_multiple_of(16))
                .unwrap_or(DEFAULT_SOFT_STACK),
            heap: size("GOMP_NVPTX_HEAP_SIZE", "the driver's").filter(|&n| n > 0),
            reverse_offload_threads: get("GOMP_REVERSE_OFFLOAD_THREADS")
                .and_then(|v| match v.trim().parse::<usize>() {
                    Ok(n) if (1..=1024).contains(&n) => Some(n),
                    _ => {
                        warn(&format!(
                            "Invalid value '{v}' for GOMP_REVERSE_OFFLOAD_THREADS; \
                             using the default ({DEFAULT_REVERSE_OFFLOAD_THREADS})"
                        ));
                        None
                    }
                })
                .unwrap_or(DEFAULT_REVERSE_OFFLOAD_THREADS),
            staging: parsed(
                &get,
                &warn,
                "GOMP_NVPTX_STAGING",
                StagingParams::parse,
                "default",
            ),
            tune: parsed(&get, &warn, "GOMP_NVPTX_TUNE", Tune::parse, "defaults"),
            device_cache: size("GOMP_NVPTX_DEVICE_CACHE", "256 MiB")
                .unwrap_or(DEFAULT_DEVICE_CACHE),
            pinned_cache: size("GOMP_NVPTX_PINNED_CACHE", "256 MiB")
                .unwrap_or(DEFAULT_PINNED_CACHE),
            link_cache: link_cache::Setting::from_lookup(
                &get,
                &warn,
                size("GOMP_NVPTX_LINK_CACHE_SIZE", "256 MiB")
                    .map_or(link_cache::DEFAULT_LIMIT, |n| n as u64),
            ),
        }
    }

    /// Reads the process environment; warnings go to libgomp's error stream.
    pub fn from_env() -> Config {
        Config::from_lookup(
            |k| std::env::var(k).ok(),
            gomp_plugin::libgomp::report::error,
        )
    }

    /// The settings of this process: the environment read once, at the plugin's first
    /// use (`get_num_devices`), so a bad value is reported once, even on a machine
    /// without a GPU. Thread-safe.
    pub fn process() -> &'static Config {
        static CONFIG: once_cell::sync::OnceCell<Config> = once_cell::sync::OnceCell::new();
        CONFIG.get_or_init(Config::from_env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn jit_levels() {
        assert_eq!(parse_jit(""), Ok(None));
        assert_eq!(parse_jit("-O3"), Ok(Some(3)));
        assert_eq!(parse_jit("-O0 -O4"), Ok(Some(4)));
        assert!(parse_jit("-O5").is_err());
        assert!(parse_jit("-O33").is_err());
        assert!(parse_jit("--fast").is_err());
    }

    fn cfg(pairs: &[(&str, &str)]) -> (Config, Vec<String>) {
        let warnings = RefCell::new(Vec::new());
        let c = Config::from_lookup(
            |k| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            },
            |w| warnings.borrow_mut().push(w.to_string()),
        );
        (c, warnings.into_inner())
    }

    #[test]
    fn defaults_and_garbage() {
        let (c, w) = cfg(&[]);
        assert_eq!(c.lowlat_pool, DEFAULT_LOWLAT_POOL);
        assert_eq!(c.soft_stack, DEFAULT_SOFT_STACK);
        assert_eq!(
            (c.jit_opt_level, c.native_stack, c.heap),
            (None, None, None)
        );
        assert_eq!(c.staging, StagingParams::default());
        assert_eq!(c.device_cache, DEFAULT_DEVICE_CACHE);
        assert_eq!(c.pinned_cache, DEFAULT_PINNED_CACHE);
        assert!(w.is_empty());
        let (c, w) = cfg(&[
            ("GOMP_NVPTX_LOWLAT_POOL", "lots"),
            ("GOMP_NVPTX_JIT", "-O9"),
            ("GOMP_NVPTX_SOFT_STACK_SIZE", "\u{1F4A5}"),
            ("GOMP_NVPTX_NATIVE_GPU_THREAD_STACK_SIZE", "99g"),
            ("GOMP_NVPTX_HEAP_SIZE", "2T"),
            ("GOMP_REVERSE_OFFLOAD_THREADS", "0"),
            ("GOMP_NVPTX_STAGING", "4,4m"),
            ("GOMP_NVPTX_TUNE", "warps=99"),
            ("GOMP_NVPTX_DEVICE_CACHE", "-5"),
            ("GOMP_NVPTX_PINNED_CACHE", "2048g"),
            ("GOMP_NVPTX_LINK_CACHE", "2"),
            ("GOMP_NVPTX_LINK_CACHE_SIZE", "big"),
        ]);
        assert_eq!(c, cfg(&[]).0);
        assert_eq!(w.len(), 12, "{w:?}");
        assert!(
            w.contains(
                &"Invalid value '-5' for GOMP_NVPTX_DEVICE_CACHE (expected 0..1099511627776 bytes); \
                  using the default (256 MiB)"
                    .to_string()
            ),
            "{w:?}"
        );
        assert!(
            w.iter()
                .any(|m| m.starts_with("Invalid value 'big' for GOMP_NVPTX_LINK_CACHE_SIZE")),
            "{w:?}"
        );
        assert!(
            w.iter()
                .any(|m| m.starts_with("Invalid value '2048g' for GOMP_NVPTX_PINNED_CACHE")),
            "{w:?}"
        );
        assert!(
            w.iter().any(|m| m
                .starts_with("Invalid value 'warps=99' for GOMP_NVPTX_TUNE (warps: ")
                && m.ends_with("; using the defaults")),
            "{w:?}"
        );
        for bad in ["-1", "1025", "many", ""] {
            let (c, w) = cfg(&[("GOMP_REVERSE_OFFLOAD_THREADS", bad)]);
            assert_eq!(c.reverse_offload_threads, DEFAULT_REVERSE_OFFLOAD_THREADS);
            assert_eq!(w.len(), 1, "{bad}");
        }
        let (c, w) = cfg(&[
            ("GOMP_NVPTX_LOWLAT_POOL", "16k"),
            ("GOMP_NVPTX_JIT", "-O1"),
            ("GOMP_NVPTX_SOFT_STACK_SIZE", "65537"),
            ("GOMP_NVPTX_NATIVE_GPU_THREAD_STACK_SIZE", "4096"),
            ("GOMP_NVPTX_HEAP_SIZE", "256m"),
            ("GOMP_REVERSE_OFFLOAD_THREADS", " 2 "),
            ("GOMP_NVPTX_STAGING", "12,16m,3"),
            ("GOMP_NVPTX_TUNE", "warps=16,bounce=0"),
            ("GOMP_NVPTX_DEVICE_CACHE", "0"),
            ("GOMP_NVPTX_PINNED_CACHE", "1g"),
        ]);
        assert!(w.is_empty());
        assert_eq!((c.device_cache, c.pinned_cache), (0, 1 << 30));
        assert_eq!(c.tune.warps, Some(16));
        assert_eq!(c.tune.bounce, 0);
        assert_eq!(c.reverse_offload_threads, 2);
        assert_eq!(
            c.staging,
            StagingParams {
                threads: 12,
                chunk: 16 << 20,
                buffers: 3
            }
        );
        assert_eq!(c.heap, Some(256 << 20));
        assert_eq!(c.lowlat_pool, 16384);
        assert_eq!(c.jit_opt_level, Some(1));
        assert_eq!(c.soft_stack, 65552);
        assert_eq!(c.native_stack, Some(4096));
    }

    #[test]
    fn every_size_bound_is_enforced_and_reported() {
        let defaults = cfg(&[]).0;
        for (name, min, max) in SIZE_BOUNDS {
            // Accepted at both ends, without a word.
            for ok in [min, max] {
                let (_, w) = cfg(&[(name, &ok.to_string())]);
                assert!(w.is_empty(), "{name}={ok}: {w:?}");
            }
            // Outside: one warning naming the variable and the bounds, and the default.
            let mut bad = vec![max + 1];
            if min > 0 {
                bad.push(min - 1);
            }
            if name == "GOMP_NVPTX_SOFT_STACK_SIZE" {
                bad.push(100);
            }
            for b in bad {
                let (c, w) = cfg(&[(name, &b.to_string())]);
                assert_eq!(c, defaults, "{name}={b}");
                assert_eq!(w.len(), 1, "{name}={b}: {w:?}");
                assert!(
                    w[0].starts_with(&format!(
                        "Invalid value '{b}' for {name} (expected {min}..{max} bytes)"
                    )),
                    "{w:?}"
                );
            }
        }
        // A bad cache size is reported even when the cache is off.
        let (c, w) = cfg(&[
            ("GOMP_NVPTX_LINK_CACHE", "0"),
            ("GOMP_NVPTX_LINK_CACHE_SIZE", "-1"),
        ]);
        assert_eq!(
            c.link_cache,
            link_cache::Setting::Off("GOMP_NVPTX_LINK_CACHE=0".into())
        );
        assert_eq!(w.len(), 1, "{w:?}");
        // The link cache's bound reaches its setting.
        let (c, w) = cfg(&[("HOME", "/h"), ("GOMP_NVPTX_LINK_CACHE_SIZE", "1m")]);
        assert!(w.is_empty(), "{w:?}");
        assert!(
            matches!(c.link_cache, link_cache::Setting::On { limit, .. } if limit == 1 << 20),
            "{:?}",
            c.link_cache
        );
        let (c, w) = cfg(&[("GOMP_REVERSE_OFFLOAD_THREADS", "1024")]);
        assert!(w.is_empty());
        assert_eq!(c.reverse_offload_threads, 1024);
        let (c, w) = cfg(&[("GOMP_REVERSE_OFFLOAD_THREADS", "1")]);
        assert!(w.is_empty());
        assert_eq!(c.reverse_offload_threads, 1);
    }
}
