//! The plugin's NVTX ranges (nvptx/src/observe/nvtx/) as a profiler receives them,
//! without a GPU and without Nsight: the project's own NVTX tool
//! (tests/fixtures/nvtx/inject.c, written against NVIDIA's NVTX 3 headers) is named
//! in `NVTX_INJECTION64_PATH`, as `nsys` names its own, and writes every call it gets
//! to a file; the stand-in libcuda (tests/fallback/stub_libcuda_2dev.c) plays the GPU.
//!
//! The child drives the plugin's entry points as libgomp does for a program with two
//! target regions (built with `-g`: the image's PTX carries `.file`/`.loc`), a `target
//! nowait` region, a `target update` both ways (8 bytes, 64 KiB and 4 MiB), and an
//! OpenACC `parallel async` with its `wait`; the parent checks the exact ranges:
//! names, categories, nesting per thread, byte payloads, the start/end span of the
//! `nowait` kernel, and the stream and thread names. Reverse offload is not in it: the
//! stand-in runs no device code that could post a request (the conformance suite
//! leaves it out for the same reason); tests/device/nvtx_ranges.c checks it on a GPU.
//!
//! Also: `GOMP_NVPTX_NVTX=0` loads no tool; a tool whose initialisation fails leaves
//! NVTX off and the program runs; the tuner's trials are marked.

use gomp_plugin_conformance::support;

use gomp_plugin_nvptx as _; // links the rlib holding the exported shells
use std::collections::BTreeSet;
use std::ffi::{c_void, CString, OsStr, OsString};
use std::path::{Path, PathBuf};
use support::api::*;
use support::image::{Image, VERSION};

extern "C" {
    fn free(p: *mut c_void);
}

/// The image's kernels: two OpenMP target regions of `main` (the second as GCC 16
/// writes it: an entry wrapper calling `$impl`), and an OpenACC one.
const KERNELS: [&str; 3] = ["main$_omp_fn$0", "main$_omp_fn$1", "main$_omp_fn$2"];

/// An image as GCC writes one built with `-g` (shortened): the regions' constructs at
/// lines 11, 19 and 29 of prog.c, their bodies one line below.
fn image() -> Image {
    let text = ".version 7.3\n.target sm_52\n.address_size 64\n\
        .file 1 \"<dummy>\"\n.file 2 \"/home/user/app/prog.c\"\n\
        .visible .entry main$_omp_fn$0 (.param .u64 %arg, .param .u64 %stack, .param .u64 %sz)\n{\n\
        .loc 2 12 8\nret;\n.loc 2 11 9\nret;\n}\n\
        .visible .entry main$_omp_fn$1 (.param .u64 %arg, .param .u64 %stack, .param .u64 %sz)\n{\n\
        call.uni gomp_nvptx_main,(%P0,%P1);\nret.uni;\n}\n\
        .func main$_omp_fn$1$impl (.param .u64 %in_ar0)\n{\n.loc 2 20 5\n.loc 2 19 9\nret;\n}\n\
        .visible .entry main$_omp_fn$2 (.param .u64 %in_ar0)\n{\n.loc 2 30 7\n.loc 2 29 9\nret;\n}\n";
    Image::with_dims(
        vec![CString::new(text).unwrap()],
        &KERNELS,
        &[[0; 3], [0; 3], [0, 1, 32]],
    )
}

/// A kernel handle as the OpenACC entry points take it.
fn kernel_fn(k: *mut c_void) -> Option<unsafe extern "C" fn(*mut c_void)> {
    // SAFETY: same size; the handle is only compared against the live kernels.
    unsafe { std::mem::transmute::<*mut c_void, Option<unsafe extern "C" fn(*mut c_void)>>(k) }
}

/// `num_teams(1) thread_limit(1)`, NULL-terminated (as conformance/src/suite.rs).
fn target_args() -> [*mut c_void; 3] {
    [
        ((1 << 16) | 0x100) as *mut c_void,
        ((1 << 16) | 0x200) as *mut c_void,
        std::ptr::null_mut(),
    ]
}

/// The recording libgomp's completion count (`GOMP_PLUGIN_target_task_completion`).
fn completions() -> i32 {
    let lib = std::env::var_os("NVTX_TEST_LIBGOMP").expect("set by the parent");
    let p = support::symbol_of_loaded(&lib, "gcn_completion_count").cast::<i32>();
    // SAFETY: a live symbol of the loaded libgomp, written atomically by the plugin.
    unsafe { std::ptr::read_volatile(p) }
}

/// Loads the image on device 0: its kernels' handles.
fn load(img: &Image) -> Vec<*mut c_void> {
    let (n, table, _) = img.load(0, false);
    assert_eq!(n, 4, "three kernels and the ICV entry");
    // SAFETY: `n` entries the plugin allocated.
    let fns = unsafe { std::slice::from_raw_parts(table, 3) }
        .iter()
        .map(|p| p.start as *mut c_void)
        .collect();
    // SAFETY: the table is the caller's (GOMP_PLUGIN_malloc of the stand-in libgomp).
    unsafe { free(table.cast()) };
    fns
}

/// Child: the program. `NVTX_TEST_RUNS` launches of kernel 0 only (the tuner's test),
/// else the whole program.
fn child() {
    support::load_global(&std::env::var_os("NVTX_TEST_LIBGOMP").expect("set by the parent"));
    // SAFETY: libgomp's sequence (version, device count, init), plain calls.
    unsafe {
        assert_eq!(GOMP_OFFLOAD_version(), 3);
        assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 2);
        assert!(GOMP_OFFLOAD_init_device(0), "init_device");
    }
    let img = image();
    let fns = load(&img);
    // SAFETY: device 0 is open.
    let buf = unsafe { GOMP_OFFLOAD_alloc(0, 64) };
    assert!(!buf.is_null());
    if let Ok(n) = std::env::var("NVTX_TEST_RUNS") {
        // No num_teams/thread_limit: the launch shape is the tuner's to choose.
        let mut args = [std::ptr::null_mut()];
        for _ in 0..n.parse::<usize>().unwrap() {
            gomp_plugin_nvptx::entry_points::run(0, fns[0], buf, args.as_mut_ptr());
        }
    } else {
        program(&fns, buf);
    }
    // SAFETY: the block allocated above, the image loaded above.
    unsafe {
        assert!(GOMP_OFFLOAD_free(0, buf));
        assert!(GOMP_OFFLOAD_unload_image(0, VERSION, img.data()));
        assert!(GOMP_OFFLOAD_fini_device(0));
    }
}

/// The program's regions, copies and OpenACC construct (see the module comment).
fn program(fns: &[*mut c_void], buf: *mut c_void) {
    let mut args = target_args();
    let mut small = [7u64; 1];
    // SAFETY: (copies) host buffers live and as large as said; device blocks of
    // device 0 of those sizes.
    unsafe { assert!(GOMP_OFFLOAD_host2dev(0, buf, small.as_ptr().cast(), 8)) };
    // Two target regions.
    gomp_plugin_nvptx::entry_points::run(0, fns[0], buf, args.as_mut_ptr());
    gomp_plugin_nvptx::entry_points::run(0, fns[1], buf, args.as_mut_ptr());
    // `target nowait`, reported done through the recording libgomp.
    gomp_plugin_nvptx::async_run(0, fns[0], buf, args.as_mut_ptr(), 7 as *mut c_void);
    let t0 = std::time::Instant::now();
    while completions() < 1 {
        assert!(
            t0.elapsed().as_secs() < 60,
            "the nowait region never completed"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // `target update to(...)`, `from(...)`: 8 bytes, 64 KiB, 4 MiB.
    // SAFETY: as the first copy: a live host buffer of 8 bytes, a device block of 8.
    unsafe { assert!(GOMP_OFFLOAD_dev2host(0, small.as_mut_ptr().cast(), buf, 8)) };
    for n in [64 << 10, 4 << 20] {
        let host = vec![3u8; n];
        let mut back = vec![0u8; n];
        // SAFETY: as above.
        unsafe {
            let d = GOMP_OFFLOAD_alloc(0, n);
            assert!(!d.is_null());
            assert!(GOMP_OFFLOAD_host2dev(0, d, host.as_ptr().cast(), n));
            assert!(GOMP_OFFLOAD_dev2host(0, back.as_mut_ptr().cast(), d, n));
            assert!(GOMP_OFFLOAD_free(0, d));
        }
        assert_eq!(host, back);
    }
    // `acc parallel async(1)` then `acc wait(1)`.
    // SAFETY: device 0 is open.
    let aq = unsafe { GOMP_OFFLOAD_openacc_async_construct(0) };
    assert!(!aq.is_null());
    let mut dims = [0u32; 3];
    gomp_plugin_nvptx::entry_points::openacc_async_exec(
        kernel_fn(fns[2]),
        0,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        dims.as_mut_ptr(),
        std::ptr::null_mut(),
        aq.cast(),
    );
    // SAFETY: the live queue, destroyed once.
    unsafe {
        assert!(GOMP_OFFLOAD_openacc_async_synchronize(aq));
        assert!(GOMP_OFFLOAD_openacc_async_destruct(aq));
    }
}

/// The fixture and stand-ins of one test, and a child run's log.
struct Env {
    test: &'static str,
    scratch: support::Scratch,
    libcuda: PathBuf,
    libgomp: PathBuf,
    tool: PathBuf,
}

impl Env {
    /// `None` when `cc` is missing (said on stderr).
    fn new(test: &'static str) -> Option<Env> {
        if !support::have_tools(test, &["cc"]) {
            return None;
        }
        let scratch = support::Scratch::new("nvtx");
        let libcuda = support::stub_libcuda_2dev(&scratch, &[]);
        let libgomp = support::recording_libgomp(&scratch.join("libgomp"), &support::RELEASE_NODES);
        let tool = scratch.join("libnvtx-inject.so");
        let inc = format!(
            "-I{}",
            support::repo().join("tests/fixtures/nvtx").display()
        );
        support::cc_shared(
            "tests/fixtures/nvtx/inject.c",
            &tool,
            &["-Wall", "-Wextra", "-Werror", "-pthread", &inc],
        );
        Some(Env {
            test,
            scratch,
            libcuda,
            libgomp,
            tool,
        })
    }

    /// Runs the child with the tool attached (plus `env`); the tool's log (empty when
    /// it was never loaded).
    fn run(&self, env: &[(&str, &str)]) -> (support::Child, Vec<String>) {
        let log = self.scratch.join(&format!("nvtx-{}.log", env.len()));
        let _ = std::fs::remove_file(&log);
        let mut all: Vec<(&str, OsString)> = vec![
            ("GOMP_PLUGIN_RS_LIBCUDA", self.libcuda.clone().into()),
            ("NVTX_TEST_LIBGOMP", self.libgomp.clone().into()),
            ("NVTX_INJECTION64_PATH", self.tool.clone().into()),
            ("NVTX_FIXTURE_LOG", log.clone().into()),
            ("GOMP_NVPTX_LINK_CACHE", "0".into()),
            ("GOMP_DEBUG", "1".into()),
        ];
        all.extend(env.iter().map(|(k, v)| (*k, OsString::from(v))));
        let all: Vec<(&str, &OsStr)> = all.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
        let c = support::run_child(self.test, &all);
        c.assert_passed()
            .assert_stderr_lacks("panicked")
            .assert_stderr_lacks("stub libcuda:");
        (c, read_log(&log))
    }
}

fn read_log(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The lines of thread `t` (`tT ...`), without the prefix.
fn thread(log: &[String], t: u32) -> Vec<String> {
    let p = format!("t{t} ");
    log.iter()
        .filter_map(|l| l.strip_prefix(&p).map(str::to_string))
        .collect()
}

/// The names of kind `what` (`stream`, `thread`).
fn named(log: &[String], what: &str) -> BTreeSet<String> {
    let p = format!("{what} ");
    log.iter()
        .filter_map(|l| l.strip_prefix(&p).map(str::to_string))
        .collect()
}

/// Checks that pushes and pops nest on every thread (never a pop without its push,
/// none left open).
fn assert_nested(log: &[String]) {
    for t in 1..=8 {
        let mut depth = 0i32;
        for l in thread(log, t) {
            if l.starts_with("push ") {
                depth += 1;
            } else if l == "pop" {
                depth -= 1;
                assert!(
                    depth >= 0,
                    "t{t}: a pop without its push\n{}",
                    log.join("\n")
                );
            }
        }
        assert_eq!(depth, 0, "t{t}: ranges left open\n{}", log.join("\n"));
    }
}

/// The categories of the `libgomp` domain, in order (observe/nvtx/mod.rs `Kind`).
const CATEGORIES: [&str; 11] = [
    "omp target",
    "omp target nowait",
    "omp target nowait in flight",
    "acc compute",
    "acc async",
    "acc wait",
    "copy",
    "image",
    "alloc",
    "reverse offload",
    "tuner",
];

/// The whole program's ranges: exactly these, in this order on the program's thread,
/// the `nowait` kernel's span ended by the completion thread, the streams and threads
/// named.
#[test]
fn a_programs_regions_copies_and_acc_construct() {
    if support::is_child("a_programs_regions_copies_and_acc_construct") {
        return child();
    }
    let Some(env) = Env::new("a_programs_regions_copies_and_acc_construct") else {
        return;
    };
    // The pool serves every allocation (its warm-up thread would race the program's
    // allocations: which one the driver serves would vary); two staging lanes, so
    // that one has a thread of its own on any machine.
    let (c, log) = env.run(&[
        ("GOMP_NVPTX_TUNE", "poolwarm=0"),
        ("GOMP_NVPTX_STAGING", "2,4m,2"),
    ]);
    let all = log.join("\n");
    assert!(!all.contains("BAD"), "{all}");
    // The tool's initialisation, the domain and its categories first.
    let mut head = vec!["init ok".to_string(), "domain libgomp".to_string()];
    head.extend(
        CATEGORIES
            .iter()
            .enumerate()
            .map(|(i, n)| format!("category {} {n}", i + 1)),
    );
    assert_eq!(log[..head.len()], head[..], "{all}");
    assert_nested(&log);
    // The program's thread (its first range makes it t1): exactly these ranges.
    // Payloads: the image's PTX bytes, each allocation's and copy's bytes (the memory
    // the allocation took: a 64 KiB chunk of small blocks, a 1 MiB block). The
    // thread's first small copies do not use its ring yet (`Ring::wanted`).
    let want = [
        format!(
            "push cat=8 payload={} load image (3 kernels)",
            image_ptx_len()
        ),
        "push cat=8 payload=- JIT link (linked-image cache off)".into(),
        "pop".into(),
        "pop".into(),
        "push cat=9 payload=64 alloc".into(),
        "push cat=9 payload=65536 from the pool".into(),
        "pop".into(),
        "pop".into(),
        "push cat=7 payload=8 h2d deferred".into(),
        "pop".into(),
        "push cat=1 payload=- main: omp target #0 (prog.c:11)".into(),
        "pop".into(),
        "push cat=1 payload=- main: omp target #1 (prog.c:19)".into(),
        "pop".into(),
        "push cat=2 payload=- main: omp target #0 (prog.c:11)".into(),
        "start id=1 cat=3 main: omp target #0 (prog.c:11)".into(),
        "pop".into(),
        "push cat=7 payload=8 d2h direct".into(),
        "pop".into(),
        "push cat=9 payload=65536 alloc".into(),
        "push cat=9 payload=1048576 from the pool".into(),
        "pop".into(),
        "pop".into(),
        "push cat=7 payload=65536 h2d deferred".into(),
        "pop".into(),
        "push cat=7 payload=65536 d2h bounce".into(),
        "pop".into(),
        "push cat=9 payload=4194304 alloc".into(),
        "push cat=9 payload=4194304 from the pool".into(),
        "pop".into(),
        "pop".into(),
        "push cat=7 payload=4194304 h2d staged".into(),
        "pop".into(),
        "push cat=7 payload=4194304 d2h staged".into(),
        "pop".into(),
        "push cat=5 payload=- main: acc compute #2 (prog.c:29)".into(),
        "mark cat=11 payload=- tuner warm-up: gangs=default".into(),
        "pop".into(),
        "push cat=6 payload=- acc wait".into(),
        "pop".into(),
        // The queue's destruction waits for it too.
        "push cat=6 payload=- acc wait".into(),
        "pop".into(),
    ];
    assert_eq!(thread(&log, 1), want, "{all}\n{}", c.stderr);
    // The completion thread ends the nowait kernel's span.
    assert_eq!(thread(&log, 2), ["end id=1"], "{all}");
    // Streams: the program thread's lane, the nowait stream, the staging lanes, the
    // OpenACC queue's.
    let streams = named(&log, "stream");
    for s in [
        "thread lane 0",
        "nowait stream 0",
        "staging lane",
        "acc queue 0 (device 0)",
    ] {
        assert!(streams.contains(s), "stream {s}: {streams:?}\n{all}");
    }
    // Threads the plugin started name themselves.
    let threads = named(&log, "thread");
    for t in [
        "libgomp nvptx: nvptx0-completion",
        "libgomp nvptx: nvptx-staging",
        "libgomp nvptx: gomp-nvptx-pinkeep",
    ] {
        assert!(threads.contains(t), "thread {t}: {threads:?}\n{all}");
    }
    c.assert_stderr("NVTX: tool ");
}

/// The bytes of the image's PTX object as its descriptor gives them (with the NUL):
/// what `load image`'s payload counts.
fn image_ptx_len() -> usize {
    let img = image();
    // SAFETY: the descriptor image() built, alive with `img`.
    let d = unsafe { &*img.data().cast::<support::image::Desc>() };
    // SAFETY: one object.
    unsafe { (*d.ptx).size }
}

/// `GOMP_NVPTX_NVTX=0`: the tool is never loaded (its log is never made), the program
/// runs as without it. A tool whose initialisation fails leaves NVTX off.
#[test]
fn off_switch_and_a_failing_tool_leave_nvtx_off() {
    if support::is_child("off_switch_and_a_failing_tool_leave_nvtx_off") {
        return child();
    }
    let Some(env) = Env::new("off_switch_and_a_failing_tool_leave_nvtx_off") else {
        return;
    };
    let (c, log) = env.run(&[("GOMP_NVPTX_NVTX", "0")]);
    assert!(log.is_empty(), "{log:?}");
    c.assert_stderr_lacks("NVTX: tool");
    let (c, log) = env.run(&[("NVTX_FIXTURE_FAIL", "1"), ("GOMP_NVPTX_NVTX", "1")]);
    assert_eq!(log, ["init refused (NVTX_FIXTURE_FAIL)"]);
    c.assert_stderr("not attached: InitializeInjectionNvtx2 returned 0");
}

/// The tuner's warm-up, probes and trials are marks inside the launches they time,
/// and its choice a mark.
#[test]
fn the_tuners_trials_are_marked() {
    if support::is_child("the_tuners_trials_are_marked") {
        return child();
    }
    let Some(env) = Env::new("the_tuners_trials_are_marked") else {
        return;
    };
    let (c, log) = env.run(&[
        ("NVTX_TEST_RUNS", "40"),
        ("STUB_LIBCUDA_KERNEL_NS", "*=100000"),
    ]);
    let all = log.join("\n");
    assert!(!all.contains("BAD"), "{all}");
    assert_nested(&log);
    let t1 = thread(&log, 1);
    // The first allocation starts the pool's warm-up (`poolwarm=first`, the default)
    // and takes the driver's memory meanwhile.
    assert_eq!(
        t1[4..8],
        [
            "push cat=9 payload=64 alloc",
            "push cat=9 payload=65536 from the driver",
            "pop",
            "pop"
        ],
        "{all}"
    );
    let region = "push cat=1 payload=- main: omp target #0 (prog.c:11)";
    assert_eq!(t1.iter().filter(|l| *l == region).count(), 40, "{all}");
    let marks: Vec<&String> = t1.iter().filter(|l| l.starts_with("mark ")).collect();
    assert!(
        marks
            .iter()
            .any(|m| m.starts_with("mark cat=11 payload=- tuner trial: ")),
        "{marks:?}"
    );
    assert!(
        marks.iter().any(
            |m| m.starts_with("mark cat=11 payload=- tuner: kept warps=")
                && m.contains(" by trials (medians of 3: ")
        ),
        "{marks:?}\n{}",
        c.stderr
    );
    // Each mark inside a region's range.
    for (i, l) in t1.iter().enumerate() {
        if l.starts_with("mark ") {
            let open = t1[..i]
                .iter()
                .rev()
                .find(|p| p.starts_with("push") || *p == "pop");
            assert_eq!(open, Some(&region.to_string()), "{all}");
        }
    }
}
