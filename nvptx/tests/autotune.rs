//! The launch-shape tuner (nvptx/src/launch/autotune.rs) against a stand-in driver
//! whose launches take the time the test says, on the virtual clock its timing events
//! read (tests/fallback/stub_libcuda_2dev.c: STUB_LIBCUDA_KERNEL_NS and
//! STUB_LIBCUDA_REGS, launches run in stream order). The kernels have 72 registers, as
//! GCC's Fortran STREAM kernels on an H100, so the candidates are `warps=8` (396 teams
//! x 8 warps), `warps=occupancy` (528 x 7) and `warps=16` (132 x 16).
//!
//! Each scenario runs the exported `GOMP_OFFLOAD_*` entry points in a child process
//! (as a program run), which prints the stand-in's launch log; the test checks the
//! shape of every launch in order, the `GOMP_DEBUG` lines, the profile table and the
//! cache directory: trial order, the winner kept, a loser with a lucky sample not
//! kept, short kernels and kernels launched once not tried, launches with clauses
//! left alone, the off switch, and the choices remembered (a second process, a second
//! load in one process), ignored when corrupt or stale, tried again with
//! `autotune=fresh`, and keyed by the settings that change the geometry.

use gomp_plugin_conformance::support;

use gomp_plugin_nvptx as _; // links the rlib holding the exported shells
use gomp_plugin_nvptx::cache::{entry, Key};
use std::ffi::{c_void, CString, OsStr};
use std::path::PathBuf;
use support::api::*;
use support::image::{Image, VERSION};

extern "C" {
    fn free(p: *mut c_void);
}

/// The image's kernels (PTX names).
const KERNELS: [&str; 2] = ["main$_omp_fn$0", "main$_omp_fn$1"];

/// An image of one PTX object defining [`KERNELS`].
fn image() -> Image {
    let text = CString::new(format!(
        "// tuner test\n.version 7.0\n.target sm_52\n.address_size 64\n\
         .visible .entry {} ()\n{{\n\tret;\n}}\n.visible .entry {} ()\n{{\n\tret;\n}}\n",
        KERNELS[0], KERNELS[1]
    ))
    .unwrap();
    Image::new(vec![text], &KERNELS)
}

/// Loads `img` on device 0; the kernels' handles.
fn load(img: &Image) -> Vec<*mut c_void> {
    let (n, table, _) = img.load(0, false);
    assert_eq!(n, 3, "two kernels and the ICV entry");
    // SAFETY: `n` entries the plugin allocated.
    let t = unsafe { std::slice::from_raw_parts(table, n as usize) };
    let fns = vec![t[0].start as *mut c_void, t[1].start as *mut c_void];
    // SAFETY: the table is the caller's (malloc'd without a libgomp).
    unsafe { free(table.cast()) };
    fns
}

fn unload(img: &Image) {
    // SAFETY: the image loaded by `load`.
    assert!(unsafe { GOMP_OFFLOAD_unload_image(0, VERSION, img.data()) });
}

/// The child run of every scenario: runs `AT_OPS` (comma-separated: `K*N` launches
/// kernel K N times without clauses, `K*Nc` with `num_teams(4) thread_limit(2)`,
/// `reload` unloads and loads the image again) on device 0, then prints the launch
/// log as `LAUNCH NAME TEAMS WARPS` lines.
fn child() {
    // SAFETY: libgomp's sequence (version, device count, init), plain calls.
    unsafe {
        assert_eq!(GOMP_OFFLOAD_version(), 0);
        assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 2);
        assert!(GOMP_OFFLOAD_init_device(0), "init_device");
    }
    let img = image();
    let mut fns = load(&img);
    let ops = std::env::var("AT_OPS").unwrap_or_default();
    for op in ops.split(',').filter(|o| !o.is_empty()) {
        if op == "reload" {
            unload(&img);
            fns = load(&img);
            continue;
        }
        let (k, rest) = op.split_once('*').expect("K*N");
        let k: usize = k.parse().unwrap();
        let (n, clauses) = match rest.strip_suffix('c') {
            Some(n) => (n, true),
            None => (rest, false),
        };
        // num_teams(4) thread_limit(2), values inline (libgomp's target arguments).
        let mut with: [*mut c_void; 3] = [
            (1usize << 8 | 4 << 16) as *mut c_void,
            (2usize << 8 | 2 << 16) as *mut c_void,
            std::ptr::null_mut(),
        ];
        let mut none: [*mut c_void; 1] = [std::ptr::null_mut()];
        let args = if clauses {
            with.as_mut_ptr()
        } else {
            none.as_mut_ptr()
        };
        for _ in 0..n.parse::<usize>().unwrap() {
            // A kernel of the loaded image; NULL-terminated arguments.
            gomp_plugin_nvptx::entry_points::run(0, fns[k], std::ptr::null_mut(), args);
        }
    }
    unload(&img);
    support::print_launch_log();
    // SAFETY: plain call.
    assert!(unsafe { GOMP_OFFLOAD_fini_device(0) });
}

/// A scenario's files: the stand-in driver and a cache directory.
struct Env {
    test: &'static str,
    scratch: support::Scratch,
    lib: PathBuf,
}

/// One launch: kernel, teams, warps.
type Launch = (String, u32, u32);

/// The shapes of the untuned launch and the other candidates.
const W8: (u32, u32) = (396, 8);
const OCC: (u32, u32) = (528, 7);
const W16: (u32, u32) = (132, 16);

/// Durations: `warps=8` 2 ms, `warps=occupancy` 1.5 ms (the winner), `warps=16` 3 ms
/// (a clear loser).
const OCC_WINS: &str = "8=2000000,7=1500000,16=3000000";

impl Env {
    /// The files of the scenario run by the test `test`; `None` when `cc` is missing
    /// (said on stderr).
    fn new(test: &'static str) -> Option<Env> {
        if !support::have_tools(test, &["cc"]) {
            return None;
        }
        let scratch = support::Scratch::new("shape-tuner");
        let lib = support::stub_libcuda_2dev(&scratch, &[]);
        Some(Env { test, scratch, lib })
    }

    /// The linked-image cache (and the choices) of the scenario.
    fn dir(&self) -> PathBuf {
        self.scratch.join("cuda-cache").join("gomp-plugin-rs")
    }

    /// Runs the scenario's [`child`] with `ops`, launches taking `ns`
    /// (`STUB_LIBCUDA_KERNEL_NS`), `GOMP_DEBUG=1`, the scenario's cache and `env`; the
    /// launches in order.
    fn run(&self, ops: &str, ns: &str, env: &[(&str, &str)]) -> (support::Child, Vec<Launch>) {
        let cache = self.scratch.join("cuda-cache");
        let mut all: Vec<(&str, &OsStr)> = vec![
            ("GOMP_PLUGIN_RS_LIBCUDA", self.lib.as_os_str()),
            ("GOMP_DEBUG", OsStr::new("1")),
            ("CUDA_CACHE_PATH", cache.as_os_str()),
            // Nothing of the developer's own cache directory is used.
            ("HOME", self.scratch.path().as_os_str()),
            ("XDG_CACHE_HOME", self.scratch.path().as_os_str()),
            ("GOMP_NVPTX_SOFT_STACK_SIZE", OsStr::new("1024")),
            ("STUB_LIBCUDA_REGS", OsStr::new("72")),
            ("STUB_LIBCUDA_KERNEL_NS", OsStr::new(ns)),
            ("AT_OPS", OsStr::new(ops)),
        ];
        all.extend(env.iter().map(|(k, v)| (*k, OsStr::new(v))));
        let c = support::run_child(self.test, &all);
        c.assert_passed()
            .assert_stderr_lacks("panicked")
            .assert_stderr_lacks("stub libcuda:");
        let launches = c
            .stdout
            .lines()
            // libtest's "test NAME ... " may start the first line.
            .filter_map(|l| l.split_once("LAUNCH ").map(|(_, l)| l))
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (
                    f[0].to_string(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                )
            })
            .collect();
        (c, launches)
    }

    /// The choice entries in the cache directory, sorted.
    fn choices(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.dir())
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("shape-"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }
}

/// The shapes of kernel `k`'s launches.
fn shapes(launches: &[Launch], k: usize) -> Vec<(u32, u32)> {
    launches
        .iter()
        .filter(|l| l.0 == KERNELS[k])
        .map(|l| (l.1, l.2))
        .collect()
}

/// `n` launches of `shape`.
fn times(shape: (u32, u32), n: usize) -> Vec<(u32, u32)> {
    vec![shape; n]
}

/// Launches of a kernel before its trials: untimed, of the untuned shape.
const WARMUP: usize = 10;

/// The warm-up and two probes of the untuned shape, then rounds of the three
/// candidates, `warps=16` dropped after its first (slow) sample: 19 launches.
fn trials() -> Vec<(u32, u32)> {
    concat(&[times(W8, WARMUP + 2), vec![W8, OCC, W16, W8, OCC, W8, OCC]])
}

fn concat(parts: &[Vec<(u32, u32)>]) -> Vec<(u32, u32)> {
    parts.concat()
}

// ---------------------------------------------------------------------------------

/// The trials run in order and the winner is kept for the rest of the process; the
/// choice is said with GOMP_DEBUG, shown in the profile, and stored.
#[test]
fn trial_order_and_the_winner_kept() {
    if support::is_child("trial_order_and_the_winner_kept") {
        return child();
    }
    let Some(env) = Env::new("trial_order_and_the_winner_kept") else {
        return;
    };
    let (c, l) = env.run("0*29", OCC_WINS, &[("GOMP_NVPTX_PROFILE", "1")]);
    assert_eq!(
        shapes(&l, 0),
        concat(&[trials(), times(OCC, 10)]),
        "{}",
        c.stderr
    );
    let chose = "chose warps=occupancy 528x224 by trials (medians of 3: warps=8 396x256 \
                 2.000 ms, warps=occupancy 528x224 1.500 ms, warps=16 132x512 3.000 ms \
                 (dropped after 1 sample(s)))";
    c.assert_stderr(&format!(
        "kernel main$_omp_fn$0: autotune: {chose}; stored in "
    ))
    .assert_line(&format!("libgomp: nvptx profile:   autotune: {chose}"))
    .assert_stderr("; autotune: trial of warps=16")
    .assert_stderr("; autotune: untuned until the trials");
    assert_eq!(
        c.stderr.matches("; autotune: warps=occupancy").count(),
        10,
        "the launches after the choice say it"
    );
    assert_eq!(env.choices().len(), 1);
}

/// A candidate 5 % slower with one lucky sample, against a baseline with one unlucky
/// one, is not kept; nor is one within the 2 % margin.
#[test]
fn a_noisy_loser_is_not_kept() {
    if support::is_child("a_noisy_loser_is_not_kept") {
        return child();
    }
    let Some(env) = Env::new("a_noisy_loser_is_not_kept") else {
        return;
    };
    // Launch 17 is warps=occupancy's second sample, launch 18 the baseline's third.
    let (c, l) = env.run(
        "0*29",
        "8=2000000,7=2100000,16=3000000,@17=1000000,@18=4000000",
        &[],
    );
    assert_eq!(shapes(&l, 0), concat(&[trials(), times(W8, 10)]));
    c.assert_stderr("autotune: kept warps=8 396x256 by trials (medians of 3: warps=8 396x256 2.000 ms, warps=occupancy 528x224 2.100 ms");
    let (_, l) = env.run(
        "0*29",
        "8=2000000,7=1980000,16=3000000",
        &[("GOMP_NVPTX_TUNE", "autotune=fresh")],
    );
    assert_eq!(shapes(&l, 0), concat(&[trials(), times(W8, 10)]));
}

/// A kernel launched once, or as often as the warm-up, is neither timed nor tried; a
/// short one is kept untried, found short by its warm-up launches' host times or else
/// timed twice; launches with clauses are left alone; nothing of them is stored.
#[test]
fn once_short_and_sized_kernels_are_not_tried() {
    if support::is_child("once_short_and_sized_kernels_are_not_tried") {
        return child();
    }
    let Some(env) = Env::new("once_short_and_sized_kernels_are_not_tried") else {
        return;
    };
    let (c, l) = env.run("0*1", OCC_WINS, &[]);
    assert_eq!(shapes(&l, 0), [W8]);
    c.assert_stderr("; autotune: untuned until the trials")
        .assert_stderr_lacks("autotune: kept")
        .assert_stderr_lacks("autotune: chose");
    let (c, l) = env.run(&format!("0*{WARMUP}"), OCC_WINS, &[]);
    assert_eq!(shapes(&l, 0), times(W8, WARMUP));
    assert_eq!(
        c.stderr
            .matches("; autotune: untuned until the trials")
            .count(),
        WARMUP,
        "{}",
        c.stderr
    );
    c.assert_stderr_lacks("; autotune: trial of")
        .assert_stderr_lacks("autotune: kept")
        .assert_stderr_lacks("autotune: chose");
    // One launch more is the first probe: timed, of the untuned shape.
    let (c, l) = env.run(&format!("0*{}", WARMUP + 1), OCC_WINS, &[]);
    assert_eq!(shapes(&l, 0), times(W8, WARMUP + 1));
    assert_eq!(c.stderr.matches("; autotune: trial of warps=8").count(), 1);
    let (c, l) = env.run("0*20", "*=50000", &[]);
    assert_eq!(shapes(&l, 0), times(W8, 20));
    // The stand-in's launch sleeps 50 µs; whether the launch and its wait take under
    // 0.1 ms on the host depends on the machine: either the warm-up's host times or
    // the two probes (on the virtual clock) find the kernel short.
    let probes = c.stderr.matches("; autotune: trial of warps=8").count();
    if c.stderr
        .contains("per synchronous launch on the host, under 0.100 ms")
    {
        assert_eq!(probes, 0, "{}", c.stderr);
    } else {
        assert_eq!(probes, 2, "{}", c.stderr);
        c.assert_stderr(
            "kernel main$_omp_fn$0: autotune: kept warps=8 396x256 untried: 0.050 ms per \
             launch, under 0.100 ms",
        );
    }
    c.assert_stderr("kernel main$_omp_fn$0: autotune: kept warps=8 396x256 untried: ")
        .assert_stderr_lacks("trial of warps=occupancy");
    let (c, l) = env.run("1*20c,0*1", OCC_WINS, &[]);
    assert_eq!(shapes(&l, 1), times((4, 2), 20));
    c.assert_stderr_lacks("main$_omp_fn$1: autotune");
    assert!(
        c.stderr
            .lines()
            .filter(|l| l.contains("kernel main$_omp_fn$1: launch"))
            .all(|l| l.ends_with(" dynamic smem")),
        "launch lines with clauses are as before:\n{}",
        c.stderr
    );
    assert!(env.choices().is_empty(), "{:?}", env.choices());
}

/// `autotune=0`, or a fixed `warps`, launches every time as without the tuner: the
/// same shapes and launch lines, nothing timed or stored.
#[test]
fn the_off_switch() {
    if support::is_child("the_off_switch") {
        return child();
    }
    let Some(env) = Env::new("the_off_switch") else {
        return;
    };
    for (tune, shape) in [
        ("autotune=0", W8),
        ("warps=16", W16),
        ("autotune=0,warps=occupancy", OCC),
    ] {
        let (c, l) = env.run("0*20", OCC_WINS, &[("GOMP_NVPTX_TUNE", tune)]);
        assert_eq!(shapes(&l, 0), times(shape, 20), "{tune}");
        c.assert_stderr_lacks("autotune:");
        let lines: Vec<&str> = c
            .stderr
            .lines()
            .filter(|l| l.contains("kernel main$_omp_fn$0: launch "))
            .collect();
        assert_eq!(lines.len(), 20);
        assert!(
            lines.iter().all(|l| l.ends_with(" dynamic smem")),
            "{}",
            c.stderr
        );
    }
    assert!(env.choices().is_empty());
    // With a fixed shape asked to tune, that shape is the one tried first.
    let (_, l) = env.run(
        "0*3",
        OCC_WINS,
        &[("GOMP_NVPTX_TUNE", "warps=16,autotune=1")],
    );
    assert_eq!(shapes(&l, 0), times(W16, 3));
}

/// The choice is remembered: the next process, and the next load of the image in one
/// process, launch the winner from the first launch; a corrupt or stale entry is
/// ignored and replaced; `autotune=fresh` tries again; other settings, other entries.
#[test]
fn choices_are_remembered() {
    if support::is_child("choices_are_remembered") {
        return child();
    }
    let Some(env) = Env::new("choices_are_remembered") else {
        return;
    };
    let (_, l) = env.run("0*21,reload,0*5", OCC_WINS, &[("GOMP_NVPTX_PROFILE", "1")]);
    assert_eq!(
        shapes(&l, 0),
        concat(&[trials(), times(OCC, 2), times(OCC, 5)]),
        "the second load starts with the choice"
    );
    let entries = env.choices();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let e = &entries[0];
    let good = std::fs::read(e).unwrap();
    // The next run: the winner from the first launch, even where it would now lose.
    let (c, l) = env.run(
        "0*12",
        "8=1000000,7=3000000,16=3000000",
        &[("GOMP_NVPTX_PROFILE", "1")],
    );
    assert_eq!(shapes(&l, 0), times(OCC, 12));
    c.assert_stderr(&format!(
        "kernel main$_omp_fn$0: autotune: warps=occupancy 528x224 remembered from an earlier \
         run (medians of 3: warps=8 396x256 2.000 ms, warps=occupancy 528x224 1.500 ms, \
         warps=16 132x512 3.000 ms (dropped after 1 sample(s))): {}",
        e.display()
    ))
    .assert_stderr("libgomp: nvptx profile:   autotune: warps=occupancy 528x224 remembered");
    // Damaged or stale entries: ignored with a GOMP_DEBUG line, tried again, replaced.
    let key = Key(good[16..48].try_into().unwrap());
    let mut flipped = good.clone();
    flipped[entry::HEADER + 5] ^= 0x20;
    let stale = entry::encode(
        "shape",
        &key,
        b"gomp-plugin-rs launch shape 1\nchosen warps=4 396 8\ntrials x\n",
    );
    for (bytes, why) in [
        (flipped, "corrupt (checksum mismatch)"),
        (good[..good.len() - 3].to_vec(), "truncated"),
        (stale, "'warps=4 396 8' is none of the kernel's shapes"),
    ] {
        std::fs::write(e, &bytes).unwrap();
        let (c, l) = env.run("0*21", OCC_WINS, &[]);
        c.assert_stderr(&format!(
            "kernel main$_omp_fn$0: autotune: ignoring {}: ",
            e.display()
        ))
        .assert_stderr(why);
        assert_eq!(shapes(&l, 0), concat(&[trials(), times(OCC, 2)]), "{why}");
        assert_eq!(std::fs::read(e).unwrap(), good, "{why}: replaced");
    }
    // autotune=fresh tries again where a choice is remembered, and replaces it.
    let w16_wins = "8=2000000,7=2400000,16=1000000";
    let (_, l) = env.run("0*21", w16_wins, &[("GOMP_NVPTX_TUNE", "autotune=fresh")]);
    assert_eq!(
        shapes(&l, 0),
        concat(&[
            times(W8, WARMUP + 2),
            vec![W8, OCC, W16, W8, OCC, W16, W8, OCC, W16],
        ])
    );
    let (_, l) = env.run("0*3", OCC_WINS, &[]);
    assert_eq!(
        shapes(&l, 0),
        times(W16, 3),
        "the fresh choice is remembered"
    );
    // A setting that changes the geometry has entries of its own.
    let (_, l) = env.run("0*21", OCC_WINS, &[("GOMP_NVPTX_LOWLAT_POOL", "0")]);
    assert_eq!(shapes(&l, 0), concat(&[trials(), times(OCC, 2)]));
    assert_eq!(env.choices().len(), 2);
    // The linked-image cache off: no choice is read or stored.
    let (_, l) = env.run("0*21", OCC_WINS, &[("GOMP_NVPTX_LINK_CACHE", "0")]);
    assert_eq!(shapes(&l, 0), concat(&[trials(), times(OCC, 2)]));
    assert_eq!(env.choices().len(), 2);
}
