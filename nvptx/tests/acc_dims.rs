//! The launch dimensions of OpenACC kernels (nvptx/src/openacc/dims.rs) and the tuner
//! of the gang counts the runtime chooses (nvptx/src/openacc/gang_tuner.rs), against the
//! stand-in driver (tests/fallback/stub_libcuda_2dev.c), whose occupancy calculator
//! answers as an H100 does for `STUB_LIBCUDA_REGS` registers and whose launches take
//! the time `STUB_LIBCUDA_KERNEL_NS` says (here by grid size) on the virtual clock its
//! timing events read.
//!
//! Each scenario runs `openacc_async_exec` (libgomp 12-16's form) on a queue in a child process
//! (waiting for the queue after each launch, as `acc wait` would), which prints the
//! stand-in's launch log (`NAME GANGS WORKERS`) and the dimensions the plugin gave back
//! to libgomp; the test checks them: dimensions the program gives are launched exactly,
//! defaults stay within the kernel's limits, the tuner tries fewer gangs and keeps the
//! fastest, and `autotune=0` turns it off.

use gomp_plugin_conformance::support;

use gomp_plugin_nvptx as _; // links the rlib holding the exported shells
use std::ffi::{c_void, CString, OsStr};
use std::path::PathBuf;
use support::api::*;
use support::image::{Image, VERSION};

extern "C" {
    fn free(p: *mut c_void);
}

/// A kernel handle as the OpenACC entry points take it (libgomp passes the handle where
/// the C prototype has a function pointer).
fn kernel_fn(k: *mut c_void) -> Option<unsafe extern "C" fn(*mut c_void)> {
    // SAFETY: same size; the handle is only compared against the live kernels, never
    // called.
    unsafe { std::mem::transmute::<*mut c_void, Option<unsafe extern "C" fn(*mut c_void)>>(k) }
}

/// The image's kernels: dimensions left open, one fixed to 16 workers of 32 by the
/// compiler (as GCC does for a worker loop), one to 1 worker of 32 (gang-vector loops).
const KERNELS: [&str; 3] = ["open$_omp_fn$0", "w16$_omp_fn$0", "w1$_omp_fn$0"];
const DIMS: [[u16; 3]; 3] = [[0, 0, 0], [0, 16, 32], [0, 1, 32]];

fn image() -> Image {
    let mut text =
        String::from("// acc dims test\n.version 7.0\n.target sm_52\n.address_size 64\n");
    for k in KERNELS {
        text += &format!(".visible .entry {k} (.param .u64 %in_ar0)\n{{\n\tret;\n}}\n");
    }
    Image::with_dims(vec![CString::new(text).unwrap()], &KERNELS, &DIMS)
}

/// The child run: `ACC_OPS` (comma-separated `K*N`: kernel K launched N times with the
/// dimensions left open, `K*N@G:W:V`: with gangs G, workers W, vector V requested),
/// each launch followed by a wait on the queue; prints `DIMS G W V` per launch (what
/// the plugin gave back) and the launch log as `LAUNCH NAME GANGS WORKERS` lines.
fn child() {
    // SAFETY: libgomp's sequence (version, device count, init), plain calls.
    unsafe {
        assert_eq!(GOMP_OFFLOAD_version(), 0);
        assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 2);
        assert!(GOMP_OFFLOAD_init_device(0), "init_device");
    }
    let img = image();
    let (n, table, _) = img.load(0, false);
    assert_eq!(n, 4, "three kernels and the ICV entry");
    // SAFETY: `n` entries the plugin allocated.
    let fns: Vec<*mut c_void> = unsafe { std::slice::from_raw_parts(table, 3) }
        .iter()
        .map(|p| p.start as *mut c_void)
        .collect();
    // SAFETY: the table is the caller's (malloc'd without a libgomp).
    unsafe { free(table.cast()) };
    // SAFETY: device 0 is initialised.
    let aq = unsafe { GOMP_OFFLOAD_openacc_async_construct(0) };
    assert!(!aq.is_null());
    let ops = std::env::var("ACC_OPS").unwrap_or_default();
    for op in ops.split(',').filter(|o| !o.is_empty()) {
        let (k, rest) = op.split_once('*').expect("K*N");
        let k: usize = k.parse().unwrap();
        let (n, req) = match rest.split_once('@') {
            Some((n, d)) => {
                let v: Vec<u32> = d.split(':').map(|x| x.parse().unwrap()).collect();
                (n, [v[0], v[1], v[2]])
            }
            None => (rest, [0; 3]),
        };
        for _ in 0..n.parse::<usize>().unwrap() {
            let mut dims = req;
            // A kernel of the loaded image (libgomp 12-16's form of the entry point), no
            // mapped variables, a live queue.
            gomp_plugin_nvptx::entry_points::openacc_async_exec(
                kernel_fn(fns[k]),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                dims.as_mut_ptr(),
                std::ptr::null_mut(),
                aq.cast(),
            );
            // SAFETY: the live queue.
            assert!(unsafe { GOMP_OFFLOAD_openacc_async_synchronize(aq) });
            println!("DIMS {} {} {}", dims[0], dims[1], dims[2]);
        }
    }
    // SAFETY: made above, destroyed once.
    assert!(unsafe { GOMP_OFFLOAD_openacc_async_destruct(aq) });
    // SAFETY: the image loaded above.
    assert!(unsafe { GOMP_OFFLOAD_unload_image(0, VERSION, img.data()) });
    support::print_launch_log();
    // SAFETY: plain call.
    assert!(unsafe { GOMP_OFFLOAD_fini_device(0) });
}

/// What a child run printed: the dimensions given back and the launches (name, gangs,
/// workers), in order.
struct Seen {
    c: support::Child,
    dims: Vec<[u32; 3]>,
    launches: Vec<(String, u32, u32)>,
}

/// A scenario's stand-in driver and scratch directory.
struct Env {
    test: &'static str,
    scratch: support::Scratch,
    lib: PathBuf,
}

impl Env {
    /// `None` when `cc` is missing (said on stderr).
    fn new(test: &'static str) -> Option<Env> {
        if !support::have_tools(test, &["cc"]) {
            return None;
        }
        let scratch = support::Scratch::new("acc-dims");
        let lib = support::stub_libcuda_2dev(&scratch, &[]);
        Some(Env { test, scratch, lib })
    }

    /// Runs [`child`] with `ops`, launch times `ns`, `GOMP_DEBUG=1` and `env`.
    fn run(&self, ops: &str, ns: &str, env: &[(&str, &str)]) -> Seen {
        let mut all: Vec<(&str, &OsStr)> = vec![
            ("GOMP_PLUGIN_RS_LIBCUDA", self.lib.as_os_str()),
            ("GOMP_DEBUG", OsStr::new("1")),
            ("HOME", self.scratch.path().as_os_str()),
            ("XDG_CACHE_HOME", self.scratch.path().as_os_str()),
            ("STUB_LIBCUDA_KERNEL_NS", OsStr::new(ns)),
            ("ACC_OPS", OsStr::new(ops)),
        ];
        all.extend(env.iter().map(|(k, v)| (*k, OsStr::new(v))));
        let c = support::run_child(self.test, &all);
        c.assert_passed()
            .assert_stderr_lacks("panicked")
            .assert_stderr_lacks("stub libcuda:");
        let field = |l: &str, tag: &str| l.split_once(tag).map(|(_, r)| r.to_string());
        let dims = c
            .stdout
            .lines()
            .filter_map(|l| field(l, "DIMS "))
            .map(|r| {
                let v: Vec<u32> = r.split(' ').map(|x| x.parse().unwrap()).collect();
                [v[0], v[1], v[2]]
            })
            .collect();
        let launches = c
            .stdout
            .lines()
            .filter_map(|l| field(l, "LAUNCH "))
            .map(|r| {
                let f: Vec<&str> = r.split(' ').collect();
                (
                    f[0].to_string(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                )
            })
            .collect();
        Seen { c, dims, launches }
    }
}

/// The gang counts of kernel `k`'s launches.
fn gangs(s: &Seen, k: usize) -> Vec<u32> {
    s.launches
        .iter()
        .filter(|l| l.0 == KERNELS[k])
        .map(|l| l.1)
        .collect()
}

/// Dimensions the program gives (clauses, here through libgomp's dims array) are
/// launched exactly and never tuned, whatever the compiler left open; the defaults
/// are GCC's plugin's: twice the resident grid times the block's warps.
#[test]
fn given_dimensions_exactly_and_defaults_within_limits() {
    if support::is_child("given_dimensions_exactly_and_defaults_within_limits") {
        return child();
    }
    let Some(env) = Env::new("given_dimensions_exactly_and_defaults_within_limits") else {
        return;
    };
    let s = env.run("0*30@1000:4:64,0*1,1*1,2*1", "*=200000", &[]);
    assert_eq!(s.dims[..30], vec![[1000, 4, 64]; 30][..], "{}", s.c.stderr);
    assert_eq!(gangs(&s, 0)[..30], vec![1000; 30][..]);
    assert!(
        s.launches[..30].iter().all(|l| l.2 == 4),
        "workers as given"
    );
    s.c.assert_stderr("launch gangs=1000, workers=4, vectors=64");
    // Open: 32 workers of 32 (1024 threads, 2 blocks per SM with 32 registers): 2 *
    // 264 * 32 gangs. 16 workers fixed: 512-thread blocks, 4 per SM: 2 * 528 * 16.
    // 1 worker: 32-thread blocks, 32 per SM: 2 * 4224 * 1.
    assert_eq!(
        s.dims[30..],
        [[16896, 32, 32], [16896, 16, 32], [8448, 1, 32]]
    );
    // A register-heavy kernel: 128 registers allow 512 threads, one block per SM.
    let s = env.run("0*1,1*1", "", &[("STUB_LIBCUDA_REGS", "128")]);
    assert_eq!(s.dims, [[4224, 16, 32], [4224, 16, 32]], "{}", s.c.stderr);
}

/// Where the runtime chooses the gang count, the tuner times queued launches with
/// events (read by the next launch) and keeps the fastest of the default and a
/// quarter, a sixteenth and a sixty-fourth of it; a clear loser is dropped after one
/// sample; the choice is said and remembered.
#[test]
fn the_tuner_tries_fewer_gangs_and_keeps_the_fastest() {
    if support::is_child("the_tuner_tries_fewer_gangs_and_keeps_the_fastest") {
        return child();
    }
    let Some(env) = Env::new("the_tuner_tries_fewer_gangs_and_keeps_the_fastest") else {
        return;
    };
    // Kernel 2 (1 worker): default 8448 gangs, candidates 2112, 528, 132.
    let ns = "g8448=2000000,g2112=1000000,g528=500000,g132=3000000";
    let s = env.run("2*32", ns, &[]);
    let d = 8448;
    let mut want = vec![d; 12];
    want.extend([d, 2112, 528, 132, d, 2112, 528, d, 2112, 528]);
    want.extend([528; 10]);
    assert_eq!(gangs(&s, 2), want, "{}", s.c.stderr);
    s.c.assert_stderr(
        "kernel w1$_omp_fn$0: autotune: chose gangs=528 528x32 by trials (medians of 3: \
         gangs=default 8448x32 2.000 ms, gangs=2112 2112x32 1.000 ms, gangs=528 528x32 \
         0.500 ms, gangs=132 132x32 3.000 ms (dropped after 1 sample(s)))",
    )
    .assert_stderr("; autotune: trial of gangs=132")
    .assert_stderr("; autotune: untuned until the trials");
    assert!(
        s.dims[s.dims.len() - 1] == [528, 1, 32],
        "libgomp is told what ran"
    );
    // A second process takes the remembered choice from its first launch.
    let s = env.run("2*3", ns, &[]);
    assert_eq!(gangs(&s, 2), [528; 3], "{}", s.c.stderr);
    s.c.assert_stderr("gangs=528 528x32 remembered from an earlier run");
}

/// `GOMP_NVPTX_TUNE=autotune=0` launches the default every time; a short kernel is kept
/// untried; given gangs are never tried.
#[test]
fn off_switch_short_kernels_and_given_gangs_are_left_alone() {
    if support::is_child("off_switch_short_kernels_and_given_gangs_are_left_alone") {
        return child();
    }
    let Some(env) = Env::new("off_switch_short_kernels_and_given_gangs_are_left_alone") else {
        return;
    };
    let ns = "g8448=2000000,g2112=1000000,g528=500000,g132=3000000";
    let s = env.run("2*32", ns, &[("GOMP_NVPTX_TUNE", "autotune=0")]);
    assert_eq!(gangs(&s, 2), vec![8448; 32], "{}", s.c.stderr);
    s.c.assert_stderr_lacks("autotune:");
    // 50 us launches: under the tuner's 100 us, never tried.
    let s = env.run("2*32", "*=50000", &[]);
    assert_eq!(gangs(&s, 2), vec![8448; 32], "{}", s.c.stderr);
    s.c.assert_stderr("autotune: kept gangs=default 8448x32 untried");
    // Gangs given by the program (workers and vector open): never tried.
    let s = env.run("2*32@100:0:0", ns, &[]);
    assert_eq!(gangs(&s, 2), vec![100; 32], "{}", s.c.stderr);
    s.c.assert_stderr_lacks("autotune:");
}

/// `GOMP_NVPTX_TUNE=accgangs=K` launches every open-gang kernel with the default over K
/// from its first launch, untimed (the device step that checks every shape the tuner
/// may choose gives the same results runs each K); given gangs stay as given.
#[test]
fn forced_gang_counts_from_the_first_launch() {
    if support::is_child("forced_gang_counts_from_the_first_launch") {
        return child();
    }
    let Some(env) = Env::new("forced_gang_counts_from_the_first_launch") else {
        return;
    };
    let ns = "g8448=2000000,g2112=1000000,g528=500000,g132=3000000";
    for (k, g) in [(1, 8448), (4, 2112), (16, 528), (64, 132)] {
        let knob = format!("accgangs={k}");
        let s = env.run("2*20,0*2", ns, &[("GOMP_NVPTX_TUNE", &knob)]);
        assert_eq!(gangs(&s, 2), vec![g; 20], "{knob}: {}", s.c.stderr);
        assert_eq!(gangs(&s, 0), vec![16896 / k; 2], "{knob}: {}", s.c.stderr);
        assert_eq!(s.dims[19], [g, 1, 32], "libgomp is told what ran");
        s.c.assert_stderr(&format!("launch gangs={g}, workers=1, vectors=32; {knob}"))
            .assert_stderr_lacks("autotune:");
    }
    let s = env.run("2*4@100:0:0", ns, &[("GOMP_NVPTX_TUNE", "accgangs=64")]);
    assert_eq!(gangs(&s, 2), vec![100; 4], "{}", s.c.stderr);
}
