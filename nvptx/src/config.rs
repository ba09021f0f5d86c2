//! The nvptx plugin's settings: every environment variable it reads, listed once in
//! [`VARIABLES`] (name, syntax and bounds, default, what it sets) and read together, at
//! one moment: the plugin's first use (`get_num_devices`), through
//! [`Config::process`], so a bad value is reported once, even on a machine without a
//! GPU. Garbage never crashes: the plugin warns (`libgomp: Invalid value ...`) and uses
//! the default. A new setting is a field of [`Config`] and a row of [`VARIABLES`].
//!
//! `GOMP_NVPTX_TUNE`'s keys are a table of their own (`crate::config::tune`'s `KEYS`),
//! plus the copy paths' own knobs (`crate::config::tune::PATH_KNOBS`). Every default
//! lives in these tables (or in the types they hold, each in a file of this folder); the
//! parts of the plugin read them from here, and this module imports none of them. The README's tables of the
//! variables and of the keys, and the list of variables the tests clear in their
//! children (`conformance/src/nvptx_variables.rs`), are
//! produced from the two tables ([`generated`]; [`GENERATED_BY`] rewrites them, a unit
//! test fails when one is stale). Read beside them, at the same moment, for what they say about the driver's caches:
//! `CUDA_CACHE_DISABLE`, `CUDA_CACHE_PATH`, `XDG_CACHE_HOME`, `HOME`.

pub mod cache_location;
pub mod link_cache_setting;
pub mod staging;
pub mod switches;
pub mod tune;

use crate::config::staging::StagingParams;
use crate::config::switches::{jit_cache, Switches, INJECTION_PATH_VARIABLE};
use crate::config::tune::{PathKnob, Tune, PATH_KNOBS};
use gomp_plugin::generate::Output;
use gomp_plugin::settings::{markdown_table, names_rs, read, Entry, ProcessSettings, Value};

/// Parsed settings. Plain data, read once per process ([`Config::process`]); each
/// device keeps a copy.
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
    /// `GOMP_NVPTX_TUNE`: experiment knobs of the launch shape, the JIT and the copies.
    pub tune: Tune,
    /// The copy paths' own `GOMP_NVPTX_TUNE` knobs the settings were read with
    /// ([`PATH_KNOBS`]; the unit tests give others).
    path_knobs: Vec<&'static PathKnob>,
    /// Most bytes of freed device memory kept for reuse per device (see
    /// `crate::device::memory`).
    pub device_cache: usize,
    /// Most bytes of freed page-locked host memory kept for reuse per device (see
    /// `crate::host::pinned_pool`).
    pub pinned_cache: usize,
    /// `GOMP_NVPTX_LINK_CACHE`: whether the linked-image cache may be used.
    link_cache_on: bool,
    /// `GOMP_NVPTX_LINK_CACHE_SIZE`.
    link_cache_limit: u64,
    /// The linked-image cache: the two above and the driver's cache variables.
    pub link_cache: link_cache_setting::Setting,
    /// `GOMP_NVPTX_INFO`, `GOMP_NVPTX_PROFILE`, `GOMP_NVPTX_TRACE`.
    pub observe: Switches,
    /// The driver's JIT cache, as the info line says it ([`jit_cache`]).
    pub jit_cache: String,
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

/// Every variable the plugin reads, with its syntax and bounds (inclusive), its default
/// and what it sets. A value that does not parse or lies outside its bounds is reported
/// and the default kept. The cache bounds: 0 keeps nothing; 1 TiB is beyond any GPU's
/// or host's memory, so a larger value is a typo.
pub static VARIABLES: [Entry<Config>; 16] = [
    Entry {
        name: "GOMP_NVPTX_JIT",
        value: Value::Parsed("`-O0`..`-O4`", |c, v| {
            c.jit_opt_level = parse_jit(v)?;
            Ok(())
        }),
        default: "the driver's",
        doc: "the PTX JIT's optimisation level (`CU_JIT_OPTIMIZATION_LEVEL`)",
    },
    Entry {
        name: "GOMP_NVPTX_LOWLAT_POOL",
        value: Value::Bytes {
            min: 0,
            max: 1 << 20,
            set: |c, n| c.lowlat_pool = n,
        },
        default: "8192",
        doc: "bytes of per-team GPU shared memory for `omp_low_lat_mem_space` (GCC 14 and \
              newer)",
    },
    Entry {
        name: "GOMP_NVPTX_NATIVE_GPU_THREAD_STACK_SIZE",
        value: Value::Bytes {
            min: 0,
            max: 1 << 30,
            // 0 asks for the driver's default, as unset does.
            set: |c, n| c.native_stack = (n > 0).then_some(n),
        },
        default: "the driver's",
        doc: "CUDA per-thread stack (`CU_LIMIT_STACK_SIZE`), bytes; 0: the driver's",
    },
    Entry {
        name: "GOMP_NVPTX_SOFT_STACK_SIZE",
        value: Value::Bytes {
            // Below 1 KiB per warp not even GCC's device runtime's own frames fit.
            min: 1024,
            max: 1 << 30,
            set: |c, n| c.soft_stack = n.next_multiple_of(16),
        },
        default: "131072",
        doc: "OpenMP stack per warp, bytes, rounded up to 16",
    },
    Entry {
        name: "GOMP_NVPTX_HEAP_SIZE",
        value: Value::Bytes {
            min: 0,
            max: 1 << 40,
            set: |c, n| c.heap = (n > 0).then_some(n),
        },
        default: "the driver's (8 MiB)",
        doc: "GPU `malloc` heap (`CU_LIMIT_MALLOC_HEAP_SIZE`), bytes; 0: the driver's",
    },
    Entry {
        name: "GOMP_REVERSE_OFFLOAD_THREADS",
        value: Value::Number {
            min: 1,
            max: 1024,
            set: |c, n| c.reverse_offload_threads = n,
        },
        default: "8",
        doc: "most reverse-offload host functions running at once, all devices together",
    },
    Entry {
        name: "GOMP_NVPTX_STAGING",
        value: Value::Parsed("`threads,chunk_bytes,buffers`", |c, v| {
            c.staging = StagingParams::parse(v)?;
            Ok(())
        }),
        default: "3 lanes per 4 processors, at most 12, of 2 buffers of 4 MiB",
        doc: "an experiment knob: the lanes (threads), their chunk size and their buffers of \
              the staging engine of large pageable copies (`nvptx/src/device/copy/staged.rs`)",
    },
    Entry {
        name: "GOMP_NVPTX_TUNE",
        value: Value::Parsed("`key=value,...` (keys below)", |c, v| {
            c.tune = Tune::parse_with(v, &c.path_knobs)?;
            Ok(())
        }),
        default: "no knobs",
        doc: "the switch of the per-kernel launch-shape tuner and experiment knobs of the \
              launch shape, the JIT and the copies (`nvptx/src/config/tune.rs`)",
    },
    Entry {
        name: "GOMP_NVPTX_DEVICE_CACHE",
        value: Value::Bytes {
            min: 0,
            max: 1 << 40,
            set: |c, n| c.device_cache = n,
        },
        default: "256 MiB",
        doc: "GPU memory, per device, the plugin keeps for reuse after the program freed \
              it, bytes; 0: keep nothing",
    },
    Entry {
        name: "GOMP_NVPTX_PINNED_CACHE",
        value: Value::Bytes {
            min: 0,
            max: 1 << 40,
            set: |c, n| c.pinned_cache = n,
        },
        default: "256 MiB",
        doc: "page-locked host memory, per device, kept for reuse after `omp_free`, bytes; \
              0: keep nothing",
    },
    Entry {
        name: "GOMP_NVPTX_LINK_CACHE",
        value: Value::Word(&["0", "1"], |c, i| c.link_cache_on = i == 1),
        default: "1",
        doc: "the linked-image cache (below) on or off; also off with \
              `CUDA_CACHE_DISABLE=1`",
    },
    Entry {
        name: "GOMP_NVPTX_LINK_CACHE_SIZE",
        value: Value::Bytes {
            min: 0,
            max: 1 << 40,
            set: |c, n| c.link_cache_limit = n as u64,
        },
        default: "256 MiB",
        doc: "most bytes the linked-image cache keeps on disk; the least recently used \
              entries go first; 0: off",
    },
    Entry {
        name: "GOMP_NVPTX_INFO",
        value: Value::Flag(|c, b| c.observe.info = b),
        default: "off",
        doc: "a line per device opened, per image loaded, and when the program runs on \
              the host (below)",
    },
    Entry {
        name: "GOMP_NVPTX_PROFILE",
        value: Value::Flag(|c, b| c.observe.profile = b),
        default: "off",
        doc: "a table of kernels, copies, allocations and JIT links at exit (below)",
    },
    Entry {
        name: "GOMP_NVPTX_TRACE",
        value: Value::Path(|c, p| c.observe.trace = Some(p)),
        default: "off",
        doc: "a Chrome trace-event file written at exit (below)",
    },
    Entry {
        name: "GOMP_NVPTX_NVTX",
        value: Value::Flag(|c, b| c.observe.nvtx = b),
        default: "on",
        doc: "NVTX ranges for Nsight Systems and other NVTX tools, when one is attached \
              (`NVTX_INJECTION64_PATH`, as `nsys` sets it; below); 0: never load the tool",
    },
];

/// The command that rewrites the files [`generated`] lists.
pub const GENERATED_BY: &str = "`cargo run -p gomp-plugin-nvptx --example nvptx_settings -- write`";

/// The files produced from [`VARIABLES`] and `GOMP_NVPTX_TUNE`'s keys with the copy
/// paths' own knobs ([`PATH_KNOBS`]) (paths from the repository root): the README's
/// tables of both, between marker comments, and the list of variables the tests clear in
/// their children's environment.
pub fn generated() -> Vec<Output> {
    vec![
        Output {
            path: "README.md",
            markers: Some((
                "<!-- BEGIN nvptx settings: generated from nvptx/src/config.rs, do not edit -->",
                "<!-- END nvptx settings -->",
            )),
            text: markdown_table("variable", &VARIABLES),
        },
        Output {
            path: "README.md",
            markers: Some((
                "<!-- BEGIN GOMP_NVPTX_TUNE keys: generated from nvptx/src/config/tune.rs, do not edit -->",
                "<!-- END GOMP_NVPTX_TUNE keys -->",
            )),
            text: crate::config::tune::keys_table(&PATH_KNOBS),
        },
        Output {
            path: "conformance/src/nvptx_variables.rs",
            markers: None,
            text: names_rs(
                &[
                    "The variables the nvptx plugin reads (`VARIABLES` of",
                    "nvptx/src/config.rs), which `run_child` clears in every child's",
                    &format!("environment. Generated by {GENERATED_BY};"),
                    "do not edit.",
                ],
                &VARIABLES,
            ),
        },
    ]
}

/// Parses `GOMP_NVPTX_JIT`: space-separated options, of which only `-O0`..`-O4` exist.
pub fn parse_jit(s: &str) -> Result<Option<u32>, String> {
    let mut level = None;
    for opt in s.split_whitespace() {
        match opt.strip_prefix("-O").and_then(|l| l.parse::<u32>().ok()) {
            Some(l) if l <= 4 && opt.len() == 3 => level = Some(l),
            _ => return Err(format!("unknown option '{opt}'")),
        }
    }
    Ok(level)
}

/// The settings of this process (`Config::process`, the framework's
/// [`ProcessSettings`], as gcn's): read once, at the plugin's first use
/// (`Plugin::read_settings`, at the first `get_num_devices`), so a bad value is reported
/// once, even on a machine without a GPU; the plugin attaches the NVTX tool they name,
/// if any, at that moment, and each opened device keeps a copy.
impl ProcessSettings for Config {
    /// Reads the settings through `get` (the environment in production), reporting each
    /// bad value through `warn` and keeping its default.
    fn from_lookup(get: impl Fn(&str) -> Option<String>, warn: impl Fn(&str)) -> Config {
        Config::read_with(&PATH_KNOBS, get, warn)
    }

    fn cell() -> &'static once_cell::sync::OnceCell<Config> {
        static CONFIG: once_cell::sync::OnceCell<Config> = once_cell::sync::OnceCell::new();
        &CONFIG
    }
}

impl Config {
    /// [`Config::from_lookup`] with the copy paths' own `GOMP_NVPTX_TUNE` knobs `paths`
    /// (the unit tests give a knob of no path).
    fn read_with(
        paths: &[&'static PathKnob],
        get: impl Fn(&str) -> Option<String>,
        warn: impl Fn(&str),
    ) -> Config {
        let mut c = Config {
            jit_opt_level: None,
            lowlat_pool: DEFAULT_LOWLAT_POOL,
            native_stack: None,
            soft_stack: DEFAULT_SOFT_STACK,
            heap: None,
            reverse_offload_threads: DEFAULT_REVERSE_OFFLOAD_THREADS,
            staging: StagingParams::default(),
            tune: Tune::default(),
            path_knobs: paths.to_vec(),
            device_cache: DEFAULT_DEVICE_CACHE,
            pinned_cache: DEFAULT_PINNED_CACHE,
            link_cache_on: true,
            link_cache_limit: link_cache_setting::DEFAULT_LIMIT,
            link_cache: link_cache_setting::Setting::Off(String::new()),
            observe: Switches::default(),
            jit_cache: String::new(),
        };
        read(&VARIABLES, &mut c, &get, &warn);
        c.link_cache =
            link_cache_setting::Setting::resolve(c.link_cache_on, c.link_cache_limit, &get);
        c.jit_cache = jit_cache(&get);
        if c.observe.nvtx {
            c.observe.nvtx_tool = get(INJECTION_PATH_VARIABLE)
                .filter(|p| !p.trim().is_empty())
                .map(Into::into);
        }
        c
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

    /// A copy path's own knob, as a path declares one.
    static PROBE: PathKnob = PathKnob {
        name: "probe",
        max: 1 << 20,
        default: 16,
        default_text: "16",
        doc: "a knob of no path",
    };

    fn cfg(pairs: &[(&str, &str)]) -> (Config, Vec<String>) {
        let warnings = RefCell::new(Vec::new());
        let c = Config::read_with(&[&PROBE], gomp_plugin::settings::lookup(pairs), |w| {
            warnings.borrow_mut().push(w.to_string())
        });
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
        assert_eq!(c.observe, Switches::default());
        assert!(!c.observe.recording());
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
            ("GOMP_NVPTX_INFO", "maybe"),
            ("GOMP_NVPTX_PROFILE", "2"),
            ("GOMP_NVPTX_TRACE", ""),
            ("GOMP_NVPTX_NVTX", "2"),
        ]);
        assert_eq!(c, cfg(&[]).0);
        assert_eq!(w.len(), VARIABLES.len(), "{w:?}");
        for v in &VARIABLES {
            assert!(
                w.iter().any(|m| m.starts_with("Invalid value '")
                    && m.contains(&format!("' for {} (", v.name))
                    && m.ends_with(&format!("; using the default ({})", v.default))),
                "{}: {w:?}",
                v.name
            );
        }
        assert!(
            w.contains(
                &"Invalid value '-5' for GOMP_NVPTX_DEVICE_CACHE (expected 0..1099511627776 bytes); \
                  using the default (256 MiB)"
                    .to_string()
            ),
            "{w:?}"
        );
        assert!(
            w.contains(
                &"Invalid value '-O9' for GOMP_NVPTX_JIT (unknown option '-O9'); \
                  using the default (the driver's)"
                    .to_string()
            ),
            "{w:?}"
        );
        assert!(
            w.iter()
                .any(|m| m.starts_with("Invalid value 'warps=99' for GOMP_NVPTX_TUNE (warps: ")),
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
            ("GOMP_NVPTX_TUNE", "warps=16,probe=4k"),
            ("GOMP_NVPTX_DEVICE_CACHE", "0"),
            ("GOMP_NVPTX_PINNED_CACHE", "1g"),
            ("GOMP_NVPTX_INFO", "1"),
            ("GOMP_NVPTX_PROFILE", "yes"),
            ("GOMP_NVPTX_TRACE", "/tmp/x.json"),
        ]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!((c.device_cache, c.pinned_cache), (0, 1 << 30));
        assert_eq!(c.tune.warps, Some(16));
        assert_eq!(c.tune.size(&PROBE), 4096);
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
        assert_eq!(
            c.observe,
            Switches {
                info: true,
                profile: true,
                trace: Some("/tmp/x.json".into()),
                nvtx: true,
                nvtx_tool: None,
            }
        );
        let (c, w) = cfg(&[("GOMP_NVPTX_PROFILE", "0"), ("GOMP_NVPTX_TRACE", "t.json")]);
        assert!(w.is_empty() && !c.observe.profile && c.observe.recording());
    }

    #[test]
    fn every_size_bound_is_enforced_and_reported() {
        let defaults = cfg(&[]).0;
        let sizes: Vec<_> = VARIABLES
            .iter()
            .filter_map(|v| match v.value {
                Value::Bytes { min, max, .. } => Some((v.name, min, max)),
                _ => None,
            })
            .collect();
        assert_eq!(sizes.len(), 7, "{sizes:?}");
        for (name, min, max) in sizes {
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
            link_cache_setting::Setting::Off("GOMP_NVPTX_LINK_CACHE=0".into())
        );
        assert_eq!(w.len(), 1, "{w:?}");
        // The link cache's switch and bound reach its setting.
        let (c, w) = cfg(&[("HOME", "/h"), ("GOMP_NVPTX_LINK_CACHE_SIZE", "1m")]);
        assert!(w.is_empty(), "{w:?}");
        assert!(
            matches!(c.link_cache, link_cache_setting::Setting::On { limit, .. } if limit == 1 << 20),
            "{:?}",
            c.link_cache
        );
        let (c, w) = cfg(&[("HOME", "/h"), ("GOMP_NVPTX_LINK_CACHE", "yes")]);
        assert!(matches!(
            c.link_cache,
            link_cache_setting::Setting::On { .. }
        ));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("Invalid value 'yes' for GOMP_NVPTX_LINK_CACHE (expected 0, 1)"));
        let (c, w) = cfg(&[("GOMP_REVERSE_OFFLOAD_THREADS", "1024")]);
        assert!(w.is_empty());
        assert_eq!(c.reverse_offload_threads, 1024);
        let (c, w) = cfg(&[("GOMP_REVERSE_OFFLOAD_THREADS", "1")]);
        assert!(w.is_empty());
        assert_eq!(c.reverse_offload_threads, 1);
    }

    #[test]
    fn the_driver_caches_are_read_at_the_same_moment() {
        let (c, _) = cfg(&[("CUDA_CACHE_PATH", "/c"), ("HOME", "/h")]);
        assert_eq!(c.jit_cache, "JIT cache /c (CUDA_CACHE_PATH)");
        assert!(
            matches!(&c.link_cache, link_cache_setting::Setting::On { dir, .. } if dir.starts_with("/c")),
            "{:?}",
            c.link_cache
        );
        let (c, _) = cfg(&[("CUDA_CACHE_DISABLE", "1"), ("HOME", "/h")]);
        assert!(c.jit_cache.contains("disabled"), "{}", c.jit_cache);
        assert_eq!(
            c.link_cache,
            link_cache_setting::Setting::Off("CUDA_CACHE_DISABLE=1".into())
        );
    }

    #[test]
    fn the_nvtx_tool_is_read_beside_unless_off() {
        let tool = ("NVTX_INJECTION64_PATH", "/opt/nsys/libToolsInjection64.so");
        let (c, w) = cfg(&[tool]);
        assert!(w.is_empty() && c.observe.nvtx);
        assert_eq!(c.observe.nvtx_tool, Some(tool.1.into()));
        assert!(!c.observe.recording(), "NVTX is no recording switch");
        let (c, w) = cfg(&[tool, ("GOMP_NVPTX_NVTX", "0")]);
        assert!(w.is_empty());
        assert_eq!((c.observe.nvtx, c.observe.nvtx_tool), (false, None));
        let (c, _) = cfg(&[("NVTX_INJECTION64_PATH", " ")]);
        assert_eq!(c.observe.nvtx_tool, None);
    }

    #[test]
    fn generated_files_agree_with_the_tables() {
        let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = crate_dir.parent().expect("the crate lies in the workspace");
        gomp_plugin::generate::assert_current(root, &generated(), GENERATED_BY);
    }

    #[test]
    fn every_variable_is_named_once_and_documented() {
        assert_eq!(gomp_plugin::settings::check_table(&VARIABLES), Ok(()));
    }
}
