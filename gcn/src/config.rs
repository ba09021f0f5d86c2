//! The gcn plugin's settings: the environment variables of GCC's gcn plugin that shape a
//! launch (docs/gcn-launch.md, "Environment variables"), listed once in [`VARIABLES`]
//! (name, syntax and bounds, default, what it sets) and read together through the
//! framework's reader (`gomp_plugin::settings`), as the nvptx plugin reads its own: once
//! per process, at the plugin's first use (the edge calls `Plugin::read_settings` at the
//! first `get_num_devices`, after mkoffload's constructor set `GCN_STACK_SIZE` from
//! `-mstack-size`), through [`Config::process`]. A bad value is reported with a
//! `libgomp:` message and the default is used (the stock plugin reads them with
//! `atoi`/`atol` and takes garbage as 0). As in the stock plugin, 0 means unset for
//! every setting but `GOMP_GCN_LOWLAT_POOL` (whose 0 is clamped to the smallest pool),
//! and `GCN_NUM_GANGS`/`GCN_NUM_WORKERS` are read only when `GCN_NUM_TEAMS`/
//! `GCN_NUM_THREADS` are unset ([`OVERRIDDEN`]).
//!
//! Not read: `GCN_SUPPRESS_HOST_FALLBACK` (the stock plugin turns a missing runtime into
//! a fatal error; this plugin always reports 0 devices instead) and
//! `GCN_SUPPORT_CPU_DEVICES` (a CPU agent has no AQL packet processor, spec §7). Read
//! where the runtime is loaded, as nvptx reads its driver's name: `HSA_RUNTIME_LIB`
//! (`crate::hsa::table`).
//!
//! The README's table of the variables and the list the tests clear in their children
//! (`conformance/src/gcn_variables.rs`) are produced from [`VARIABLES`]
//! ([`generated`]; [`GENERATED_BY`] rewrites them, a unit test fails when one is
//! stale). Pure; thread-safe.

use gomp_plugin::generate::Output;
use gomp_plugin::settings::{markdown_table, names_rs, read, Entry, ProcessSettings, Value};

/// Default per-module heap (`GCN_HEAP_SIZE`): 100 MiB.
pub const DEFAULT_HEAP: u64 = 100 << 20;
/// Default team arena per team (`GCN_TEAM_ARENA_SIZE`): 64 KiB.
pub const DEFAULT_TEAM_ARENA: u32 = 64 << 10;
/// Default stack per wavefront (`GCN_STACK_SIZE`): 32 KiB.
pub const DEFAULT_STACK: u32 = 32 << 10;

/// The settings of the process. Plain data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `GCN_DEBUG` (any value): the stock plugin's stderr diagnostics; here it only
    /// adds the "GCN Kernel aborted" warning (everything else is in `GOMP_DEBUG`).
    pub gcn_debug: bool,
    /// `GCN_NUM_TEAMS`, else `GCN_NUM_GANGS`: overrides the packet's team count.
    pub num_teams: Option<u32>,
    /// `GCN_NUM_THREADS`, else `GCN_NUM_WORKERS`: overrides threads per team.
    pub num_threads: Option<u32>,
    /// `GCN_HEAP_SIZE`: bytes of each module's device heap (header included).
    pub heap_size: u64,
    /// `GCN_TEAM_ARENA_SIZE`: bytes of team arena per team (OpenMP kernels).
    pub team_arena_size: u32,
    /// `GCN_STACK_SIZE`: bytes of stack per wavefront.
    pub stack_size: u32,
    /// `GOMP_GCN_LOWLAT_POOL`: the LDS size of every dispatch, clamped (see
    /// `launch::lds_size`); unset: sized from the team count.
    pub lowlat_pool: Option<u32>,
    /// [`EXPERIMENTAL_ENV`] is set (`get_num_devices` says in a `GOMP_DEBUG` line that
    /// it is ignored).
    pub obsolete_experimental: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            gcn_debug: false,
            num_teams: None,
            num_threads: None,
            heap_size: DEFAULT_HEAP,
            team_arena_size: DEFAULT_TEAM_ARENA,
            stack_size: DEFAULT_STACK,
            lowlat_pool: None,
            obsolete_experimental: false,
        }
    }
}

/// Obsolete: once made the plugin report the GPU agents it found although it could not
/// run kernels. Every GPU agent is a device now; the variable is accepted and ignored.
pub const EXPERIMENTAL_ENV: &str = "GOMP_PLUGIN_RS_GCN_EXPERIMENTAL";

/// Most teams or threads per team a variable may ask for.
const MOST_TEAMS: u64 = i32::MAX as u64;

/// Every variable the plugin reads, with its syntax and bounds (inclusive), its default
/// and what it sets, in the order a bad value is reported.
pub static VARIABLES: [Entry<Config>; 10] = [
    Entry {
        name: "GCN_DEBUG",
        value: Value::Parsed("any value", |c, _| {
            c.gcn_debug = true;
            Ok(())
        }),
        default: "off",
        doc: "the \"GCN Kernel aborted\" warning (the rest is in `GOMP_DEBUG`)",
    },
    Entry {
        name: "GCN_NUM_TEAMS",
        value: Value::Size {
            min: 1,
            max: MOST_TEAMS,
            set: |c, n| c.num_teams = Some(n as u32),
        },
        default: "from the program",
        doc: "teams of every OpenMP launch",
    },
    Entry {
        name: "GCN_NUM_GANGS",
        value: Value::Size {
            min: 1,
            max: MOST_TEAMS,
            set: |c, n| c.num_teams = Some(n as u32),
        },
        default: "from the program",
        doc: "as `GCN_NUM_TEAMS`, read when it is unset",
    },
    Entry {
        name: "GCN_NUM_THREADS",
        value: Value::Size {
            min: 1,
            max: MOST_TEAMS,
            set: |c, n| c.num_threads = Some(n as u32),
        },
        default: "from the program",
        doc: "threads (wavefronts) per team",
    },
    Entry {
        name: "GCN_NUM_WORKERS",
        value: Value::Size {
            min: 1,
            max: MOST_TEAMS,
            set: |c, n| c.num_threads = Some(n as u32),
        },
        default: "from the program",
        doc: "as `GCN_NUM_THREADS`, read when it is unset",
    },
    Entry {
        name: "GCN_HEAP_SIZE",
        value: Value::Size {
            min: 64,
            max: 1 << 40,
            set: |c, n| c.heap_size = n,
        },
        default: "104857600",
        doc: "bytes of each module's device heap, header included",
    },
    Entry {
        name: "GCN_TEAM_ARENA_SIZE",
        value: Value::Size {
            min: 1,
            max: 1 << 30,
            set: |c, n| c.team_arena_size = n as u32,
        },
        default: "65536",
        doc: "bytes of team arena per team (OpenMP kernels)",
    },
    Entry {
        name: "GCN_STACK_SIZE",
        value: Value::Size {
            min: 16,
            max: 1 << 30,
            set: |c, n| c.stack_size = n as u32,
        },
        default: "32768",
        doc: "bytes of stack per wavefront",
    },
    Entry {
        name: "GOMP_GCN_LOWLAT_POOL",
        value: Value::Size {
            min: 0,
            max: 65536,
            set: |c, n| c.lowlat_pool = Some(n as u32),
        },
        default: "sized from the team count",
        doc: "the LDS bytes of every dispatch, clamped",
    },
    Entry {
        name: EXPERIMENTAL_ENV,
        value: Value::Parsed("any value", |c, _| {
            c.obsolete_experimental = true;
            Ok(())
        }),
        default: "unset",
        doc: "obsolete, ignored: every GPU agent is a device",
    },
];

/// Variables read only when another is unset: (the variable, the one that overrides it,
/// read instead even when its value is bad).
pub const OVERRIDDEN: [(&str, &str); 2] = [
    ("GCN_NUM_GANGS", "GCN_NUM_TEAMS"),
    ("GCN_NUM_WORKERS", "GCN_NUM_THREADS"),
];

/// The command that rewrites the files [`generated`] lists.
pub const GENERATED_BY: &str = "`cargo run -p gomp-plugin-gcn --example gcn_settings -- write`";

/// The files produced from [`VARIABLES`] (paths from the repository root): the README's
/// table, between marker comments, and the list of variables the tests clear in their
/// children's environment.
pub fn generated() -> Vec<Output> {
    vec![
        Output {
            path: "README.md",
            markers: Some((
                "<!-- BEGIN gcn settings: generated from gcn/src/config.rs, do not edit -->",
                "<!-- END gcn settings -->",
            )),
            text: markdown_table("variable", &VARIABLES),
        },
        Output {
            path: "conformance/src/gcn_variables.rs",
            markers: None,
            text: names_rs(
                &[
                    "The variables the gcn plugin reads (`VARIABLES` of gcn/src/config.rs), which",
                    "`run_child` clears in every child's environment. Generated by",
                    &format!("{GENERATED_BY}; do not edit."),
                ],
                &VARIABLES,
            ),
        },
    ]
}

/// The settings of this process (`Config::process`, the framework's
/// [`ProcessSettings`], as nvptx's): read once, at the plugin's first use
/// (`Plugin::read_settings`, at the first `get_num_devices`), so a bad value is reported
/// once, even on a machine without a GPU.
impl ProcessSettings for Config {
    /// Reads the settings through `get` (the environment in production), reporting each
    /// bad value through `warn` and keeping its default.
    fn from_lookup(get: impl Fn(&str) -> Option<String>, warn: impl Fn(&str)) -> Config {
        let visible = |name: &str| match OVERRIDDEN.iter().find(|(v, _)| *v == name) {
            Some((_, over)) if get(over).is_some() => None,
            _ => get(name),
        };
        let mut c = Config::default();
        read(&VARIABLES, &mut c, &visible, &warn);
        c
    }

    fn cell() -> &'static once_cell::sync::OnceCell<Config> {
        static CONFIG: once_cell::sync::OnceCell<Config> = once_cell::sync::OnceCell::new();
        &CONFIG
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn with(vars: &[(&str, &str)]) -> (Config, Vec<String>) {
        let warned = RefCell::new(Vec::new());
        let c = Config::from_lookup(gomp_plugin::settings::lookup(vars), |m| {
            warned.borrow_mut().push(m.to_string())
        });
        (c, warned.into_inner())
    }

    #[test]
    fn defaults_and_values() {
        assert_eq!(with(&[]), (Config::default(), vec![]));
        let (c, w) = with(&[
            ("GCN_NUM_GANGS", "7"),
            ("GCN_NUM_THREADS", "4"),
            ("GCN_NUM_WORKERS", "9"),
            ("GCN_HEAP_SIZE", "1m"),
            ("GCN_TEAM_ARENA_SIZE", "4096"),
            ("GCN_STACK_SIZE", "65536"),
            ("GOMP_GCN_LOWLAT_POOL", "1024"),
            ("GCN_DEBUG", ""),
        ]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            c,
            Config {
                gcn_debug: true,
                num_teams: Some(7),
                num_threads: Some(4),
                heap_size: 1 << 20,
                team_arena_size: 4096,
                stack_size: 65536,
                lowlat_pool: Some(1024),
                obsolete_experimental: false,
            }
        );
        // The fallbacks are read when the variables they stand in for are unset.
        let (c, w) = with(&[("GCN_NUM_GANGS", "0x10"), ("GCN_NUM_WORKERS", "2")]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!((c.num_teams, c.num_threads), (Some(16), Some(2)));
        let (c, w) = with(&[("GOMP_PLUGIN_RS_GCN_EXPERIMENTAL", "1")]);
        assert!(w.is_empty(), "{w:?}");
        assert!(c.obsolete_experimental);
    }

    #[test]
    fn bad_values_warn_and_keep_defaults() {
        let (c, w) = with(&[
            ("GCN_NUM_TEAMS", "lots"),
            ("GCN_NUM_GANGS", "3"),
            ("GCN_NUM_THREADS", "-3"),
            ("GCN_HEAP_SIZE", "-5"),
            ("GCN_TEAM_ARENA_SIZE", "12x"),
            ("GCN_STACK_SIZE", "8"),
            ("GOMP_GCN_LOWLAT_POOL", "70000"),
        ]);
        assert_eq!(c, Config::default());
        assert_eq!(w.len(), 6, "{w:?}");
        assert_eq!(
            w[0],
            "Invalid value 'lots' for GCN_NUM_TEAMS (expected 1..2147483647); \
             using the default (from the program)"
        );
        assert_eq!(
            w[2],
            "Invalid value '-5' for GCN_HEAP_SIZE (expected 64..1099511627776); \
             using the default (104857600)"
        );
        assert!(w.iter().any(|m| m.contains("GOMP_GCN_LOWLAT_POOL")
            && m.contains("using the default (sized from the team count)")));
        // A bad fallback is reported when it is read.
        let (c, w) = with(&[("GCN_NUM_WORKERS", "x")]);
        assert_eq!((c.num_threads, w.len()), (None, 1), "{w:?}");
    }

    #[test]
    fn zero_means_unset_as_in_the_stock_plugin() {
        let zero = [
            "GCN_NUM_TEAMS",
            "GCN_NUM_THREADS",
            "GCN_HEAP_SIZE",
            "GCN_TEAM_ARENA_SIZE",
            "GCN_STACK_SIZE",
        ]
        .map(|n| (n, "0"));
        assert_eq!(with(&zero), (Config::default(), vec![]));
        let (c, w) = with(&[("GOMP_GCN_LOWLAT_POOL", "0")]);
        assert_eq!((c.lowlat_pool, w), (Some(0), vec![]));
    }

    #[test]
    fn every_variable_is_named_once_documented_and_bounded() {
        let defaults = Config::default();
        assert_eq!(gomp_plugin::settings::check_table(&VARIABLES), Ok(()));
        for v in &VARIABLES {
            let Value::Size { min, max, .. } = v.value else {
                continue;
            };
            // Accepted at both ends without a word; outside, one warning and the default.
            for ok in [min.max(1), max] {
                assert!(
                    with(&[(v.name, &ok.to_string())]).1.is_empty(),
                    "{}",
                    v.name
                );
            }
            let mut bad = vec![max + 1];
            if min > 1 {
                bad.push(min - 1);
            }
            for b in bad {
                let (c, w) = with(&[(v.name, &b.to_string())]);
                assert_eq!((c, w.len()), (defaults.clone(), 1), "{}={b}", v.name);
            }
        }
        for (v, over) in OVERRIDDEN {
            assert!(VARIABLES.iter().any(|e| e.name == v));
            assert!(VARIABLES.iter().any(|e| e.name == over));
        }
    }

    #[test]
    fn generated_files_agree_with_the_table() {
        let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = crate_dir.parent().expect("the crate lies in the workspace");
        gomp_plugin::generate::assert_current(root, &generated(), GENERATED_BY);
    }
}
