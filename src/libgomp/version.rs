//! Which libgomp loaded us: 12, 13, 14, 15, 16 or 17, or something we must refuse.
//!
//! The known releases are told apart by `dlvsym` probes for the newest symbol version
//! node of each (see the ABI spec, §4). A libgomp that defines a node newer than the
//! newest we know (read from its ELF version definitions) has a plugin contract we have
//! not checked, so it is refused rather than guessed at.

use std::fmt;

/// A libgomp release whose plugin contract this plugin implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Libgomp {
    /// GCC 12: `GOMP_VERSION` 1, `get_num_devices` without the `requires` mask,
    /// 4-argument `load_image` (no reverse-offload or indirect-function tables), the
    /// device number as the trailing table entry, no `GOMP_PLUGIN_target_rev`.
    V12,
    /// GCC 13: `GOMP_VERSION` 2, 5-argument `load_image`, 9-argument `target_rev`.
    V13,
    /// GCC 14.
    V14,
    /// GCC 15.
    V15,
    /// GCC 16.
    V16,
    /// GCC 17 (the development branch as Debian's gcc-snapshot 1:20261020-1 ships it):
    /// `GOMP_VERSION` 4, the launch session (`session_*`), `run`/`async_run` and
    /// `openacc_exec`/`openacc_async_exec` taking the session (docs/plugin-abi.md §12).
    V17,
}

impl Libgomp {
    /// The `GOMP_VERSION` this libgomp expects from `GOMP_OFFLOAD_version`.
    pub fn plugin_version(self) -> u32 {
        match self {
            Libgomp::V12 => 1,
            Libgomp::V13 => 2,
            Libgomp::V17 => 4,
            _ => 3,
        }
    }

    /// Whether this libgomp launches through a session (17+): it asks for
    /// `session_size`, starts a session per launch with `session_start`, hands the
    /// target-variable table over with `session_set_target_var_table` (or has it written
    /// where `session_allocate_target_var_table` says) and calls `run(session, fn, args)`,
    /// `async_run(session, fn, args, async_data)`, `openacc_exec(session, fn, mapnum,
    /// hostaddrs, dims, tmd)` and `openacc_async_exec(..., aq)`.
    pub fn uses_sessions(self) -> bool {
        self >= Libgomp::V17
    }

    /// Whether `GOMP_OFFLOAD_get_num_devices` receives the program's `requires` mask
    /// (13-16); libgomp 12 calls it without an argument, and so does libgomp 17, which
    /// checks the mask itself against `get_caps() | get_dev_caps(device)` (§12.3).
    pub fn passes_requires_mask(self) -> bool {
        (Libgomp::V13..=Libgomp::V16).contains(&self)
    }

    /// How many arguments libgomp passes to `GOMP_OFFLOAD_load_image`: 4 in 12 (no
    /// `rev_fn_table`), 5 in 13 (no `host_ind_fn_table`), 6 from 14 on. Arguments
    /// beyond these hold whatever the caller left in the registers.
    pub fn load_image_args(self) -> usize {
        match self {
            Libgomp::V12 => 4,
            Libgomp::V13 => 5,
            _ => 6,
        }
    }

    /// Whether the last entry of `load_image`'s table is the image's device-number
    /// variable (`__gomp_device_num`, an `int`; libgomp 12) rather than its ICV block
    /// (`__gomp_additional_icvs`; 13+).
    pub fn trailing_entry_is_device_num(self) -> bool {
        self == Libgomp::V12
    }

    /// Whether this libgomp may be offered `GOMP_OFFLOAD_async_run` (13+). libgomp 12
    /// runs a `target nowait` through the plugin's `async_run` whenever the plugin has
    /// one, and on that path it frees the encountering task when that task is an
    /// undeferred one outside any parallel region (a `task` with no team, e.g. task-7.c
    /// and task-8.c of its testsuite), whose storage is not its to free: the program
    /// aborts in `GOMP_target_ext` before the plugin is called. Without `async_run`
    /// libgomp 12 runs such regions synchronously through `run`, as with GCC 12's own
    /// nvptx plugin, which has none (docs/plugin-abi.md §4.1).
    pub fn takes_async_run(self) -> bool {
        self >= Libgomp::V13
    }

    /// The GCC major release.
    pub fn gcc(self) -> u32 {
        match self {
            Libgomp::V12 => 12,
            Libgomp::V13 => 13,
            Libgomp::V14 => 14,
            Libgomp::V15 => 15,
            Libgomp::V16 => 16,
            Libgomp::V17 => 17,
        }
    }
}

/// Outcome of detection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Detected {
    /// A supported release.
    Known(Libgomp),
    /// A release older than 12 (no `GOMP_5.1` node).
    TooOld,
    /// A release defining version nodes newer than any we know (named here).
    TooNew(String),
    /// No libgomp.so.1 is loaded in this process (unit tests, foreign loaders).
    NotLoaded,
}

impl fmt::Display for Detected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Detected::Known(v) => write!(f, "libgomp {}", v.gcc()),
            Detected::TooOld => f.write_str("a libgomp older than GCC 12"),
            Detected::TooNew(n) => write!(
                f,
                "a libgomp newer than GCC {} (defines {n}; supported: libgomp {} to {})",
                NEWEST.gcc(),
                Libgomp::V12.gcc(),
                NEWEST.gcc()
            ),
            Detected::NotLoaded => f.write_str("no libgomp"),
        }
    }
}

/// The newest release this plugin implements.
pub const NEWEST: Libgomp = Libgomp::V17;

/// The newest node of each libgomp symbol-version family that this plugin knows (GCC 17
/// as of gcc-snapshot 1:20261020-1, which added OMP_6.0, OMP_6.1 and GOMP_6.0.2).
const NEWEST_KNOWN: &[(&str, &[u32])] = &[
    ("GOMP_PLUGIN_", &[1, 4]),
    ("GOMP_", &[6, 0, 2]),
    ("GOACC_", &[2, 5]),
    ("OACC_", &[2, 6, 1]),
    ("OMP_", &[6, 1]),
];

/// Probes, newest first: (symbol, version node, release it proves).
pub const PROBES: &[(&str, &str, Libgomp)] = &[
    ("GOMP_barrier_ext", "GOMP_6.0.2", Libgomp::V17),
    ("omp_target_memset", "GOMP_6.0.1", Libgomp::V16),
    ("omp_get_uid_from_device", "GOMP_6.0", Libgomp::V15),
    ("GOMP_add_alloc", "GOMP_5.1.2", Libgomp::V14),
    ("GOMP_taskwait_depend_nowait", "GOMP_5.1.1", Libgomp::V13),
    ("GOMP_teams4", "GOMP_5.1", Libgomp::V12),
];

/// Parses "1.2.3" into numbers; `None` if any part is not a number.
fn parse_dotted(s: &str) -> Option<Vec<u32>> {
    s.split('.').map(|p| p.parse().ok()).collect()
}

/// The first version node in `nodes` that is newer than the newest known node of its
/// family, if any. Nodes of other libraries (GLIBC_*, ...) are ignored.
pub fn newer_node<'a>(nodes: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    nodes.into_iter().find(|node| {
        NEWEST_KNOWN.iter().any(|(family, newest)| {
            node.strip_prefix(family)
                .and_then(parse_dotted)
                .is_some_and(|v| v.as_slice() > *newest)
        })
    })
}

/// Decides the release from probe answers (`has(symbol, node)`) and, when available,
/// the list of version nodes the library defines.
pub fn classify(has: impl Fn(&str, &str) -> bool, nodes: Option<&[String]>) -> Detected {
    if let Some(n) = nodes.and_then(|n| newer_node(n.iter().map(String::as_str))) {
        return Detected::TooNew(n.to_string());
    }
    PROBES
        .iter()
        .find(|(sym, node, _)| has(sym, node))
        .map_or(Detected::TooOld, |&(_, _, v)| Detected::Known(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn probes_pick_newest_release() {
        let has17 = |_: &str, n: &str| ["GOMP_6.0.2", "GOMP_6.0.1", "GOMP_6.0"].contains(&n);
        assert_eq!(classify(has17, None), Detected::Known(Libgomp::V17));
        let has16 = |_: &str, n: &str| ["GOMP_6.0.1", "GOMP_6.0", "GOMP_5.1.2"].contains(&n);
        assert_eq!(classify(has16, None), Detected::Known(Libgomp::V16));
        let has14 = |_: &str, n: &str| ["GOMP_5.1.2", "GOMP_5.1.1"].contains(&n);
        assert_eq!(classify(has14, None), Detected::Known(Libgomp::V14));
        let has13 = |_: &str, n: &str| ["GOMP_5.1.1", "GOMP_5.1"].contains(&n);
        assert_eq!(classify(has13, None), Detected::Known(Libgomp::V13));
        let has12 = |_: &str, n: &str| n == "GOMP_5.1";
        assert_eq!(classify(has12, None), Detected::Known(Libgomp::V12));
        // GCC 11's newest node is GOMP_5.0.1.
        let has11 = |_: &str, n: &str| n == "GOMP_5.0.1";
        assert_eq!(classify(has11, None), Detected::TooOld);
        assert_eq!(classify(|_: &str, _: &str| false, None), Detected::TooOld);
    }

    #[test]
    fn unknown_newer_nodes_are_refused() {
        let all = |_: &str, _: &str| true;
        let n = nodes(&["GLIBC_2.99", "GOMP_6.0.2", "OMP_6.1", "GOMP_PLUGIN_1.4"]);
        assert_eq!(classify(all, Some(&n)), Detected::Known(Libgomp::V17));
        let has16 = |_: &str, n: &str| n != "GOMP_6.0.2";
        let n = nodes(&["GLIBC_2.99", "GOMP_6.0.1", "OMP_5.2", "GOMP_PLUGIN_1.4"]);
        assert_eq!(classify(has16, Some(&n)), Detected::Known(Libgomp::V16));
        for new in [
            "GOMP_6.0.3",
            "GOMP_6.1",
            "GOMP_7.0",
            "GOMP_PLUGIN_1.5",
            "OACC_3.0",
            "OMP_6.2",
        ] {
            let n = nodes(&["GOMP_6.0.2", new]);
            assert_eq!(
                classify(all, Some(&n)),
                Detected::TooNew(new.into()),
                "{new}"
            );
        }
    }

    #[test]
    fn plugin_versions() {
        assert_eq!(Libgomp::V12.plugin_version(), 1);
        assert_eq!(Libgomp::V13.plugin_version(), 2);
        assert_eq!(Libgomp::V14.plugin_version(), 3);
        assert_eq!(Libgomp::V16.plugin_version(), 3);
        assert_eq!(Libgomp::V17.plugin_version(), 4);
    }

    #[test]
    fn refusal_names_the_supported_range() {
        let m = Detected::TooNew("GOMP_7.0".into()).to_string();
        assert_eq!(
            m,
            "a libgomp newer than GCC 17 (defines GOMP_7.0; supported: libgomp 12 to 17)"
        );
    }

    #[test]
    fn per_release_contract() {
        use Libgomp::*;
        assert!(!V12.passes_requires_mask());
        assert!(V13.passes_requires_mask() && V16.passes_requires_mask());
        assert_eq!(
            [V12, V13, V14, V15, V16].map(Libgomp::load_image_args),
            [4, 5, 6, 6, 6]
        );
        assert!(V12.trailing_entry_is_device_num());
        assert_eq!(
            [V12, V13, V14, V15, V16, V17].map(Libgomp::takes_async_run),
            [false, true, true, true, true, true]
        );
        assert_eq!(
            [V12, V13, V14, V15, V16, V17].map(Libgomp::uses_sessions),
            [false, false, false, false, false, true]
        );
        assert_eq!(V17.load_image_args(), 6);
        assert!(!V17.trailing_entry_is_device_num() && !V17.passes_requires_mask());
        assert!(!V13.trailing_entry_is_device_num());
        assert_eq!(V12.gcc(), 12);
    }
}
