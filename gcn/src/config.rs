//! The environment variables of GCC's gcn plugin that shape a launch
//! (docs/gcn-launch.md, "Environment variables"), read once per process at the
//! plugin's first use, `get_num_devices` ([`Config::process`]; libgomp calls it after
//! mkoffload's constructor set `GCN_STACK_SIZE` from `-mstack-size`). Validated like the nvptx plugin's: a bad value is reported with a
//! `libgomp:` message and the default is used (the stock plugin reads them with
//! `atoi`/`atol` and takes garbage as 0). As in the stock plugin, 0 means unset for
//! every setting but `GOMP_GCN_LOWLAT_POOL` (whose 0 is clamped to the smallest pool).
//!
//! Not read: `GCN_SUPPRESS_HOST_FALLBACK` (the stock plugin turns a missing runtime into
//! a fatal error; this plugin always reports 0 devices instead) and
//! `GCN_SUPPORT_CPU_DEVICES` (a CPU agent has no AQL packet processor, spec §7).
//! Pure; thread-safe.

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
        }
    }
}

impl Config {
    /// Reads the settings through `get` (the environment in production), reporting each
    /// bad value through `warn` and keeping its default.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>, warn: impl Fn(&str)) -> Config {
        let d = Config::default();
        // A value in [min, max], or None (unset, 0 where `min` > 0, or bad: reported).
        let num = |name: &str, min: u64, max: u64, default: &str| -> Option<u64> {
            let v = get(name)?;
            match gomp_plugin::settings::parse_size(&v).map(|n| n as u64) {
                Some(0) if min > 0 => None,
                Some(n) if (min..=max).contains(&n) => Some(n),
                _ => {
                    warn(&format!(
                        "Invalid value '{v}' for {name} (expected {min}..{max}); using the default ({default})"
                    ));
                    None
                }
            }
        };
        let either = |a: &str, b: &str| {
            let pick = if get(a).is_some() { a } else { b };
            num(pick, 1, i32::MAX as u64, "from the program").map(|n| n as u32)
        };
        Config {
            gcn_debug: get("GCN_DEBUG").is_some(),
            num_teams: either("GCN_NUM_TEAMS", "GCN_NUM_GANGS"),
            num_threads: either("GCN_NUM_THREADS", "GCN_NUM_WORKERS"),
            heap_size: num("GCN_HEAP_SIZE", 64, 1 << 40, "104857600").unwrap_or(d.heap_size),
            team_arena_size: num("GCN_TEAM_ARENA_SIZE", 1, 1 << 30, "65536")
                .map_or(d.team_arena_size, |n| n as u32),
            stack_size: num("GCN_STACK_SIZE", 16, 1 << 30, "32768")
                .map_or(d.stack_size, |n| n as u32),
            lowlat_pool: num(
                "GOMP_GCN_LOWLAT_POOL",
                0,
                65536,
                "sized from the team count",
            )
            .map(|n| n as u32),
        }
    }

    /// From the process environment; bad values are reported through libgomp.
    pub fn from_env() -> Config {
        Config::from_lookup(
            |k| std::env::var(k).ok(),
            gomp_plugin::libgomp::report::error,
        )
    }

    /// The settings of this process: the environment read once, at the plugin's first
    /// use (`get_num_devices`, as the nvptx plugin reads its own), so a bad value is
    /// reported once, even on a machine without a GPU. Thread-safe.
    pub fn process() -> &'static Config {
        static CONFIG: once_cell::sync::OnceCell<Config> = once_cell::sync::OnceCell::new();
        CONFIG.get_or_init(Config::from_env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn with(vars: &[(&str, &str)]) -> (Config, Vec<String>) {
        let warned = RefCell::new(Vec::new());
        let c = Config::from_lookup(
            |k| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            },
            |m| warned.borrow_mut().push(m.to_string()),
        );
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
            }
        );
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
        assert!(w[0].starts_with("Invalid value 'lots' for GCN_NUM_TEAMS"));
        assert!(w.iter().any(|m| m.contains("GOMP_GCN_LOWLAT_POOL")
            && m.contains("using the default (sized from the team count)")));
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
}
