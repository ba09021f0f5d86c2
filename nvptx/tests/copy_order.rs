//! The ordering rules of deferred host-to-device copies (nvptx/src/device/copy_order.rs)
//! against the stand-in libcuda of tests/fallback/stub_libcuda_2dev.c, which models
//! stream order: queued work runs only when something needs it (a synchronisation, an
//! event, a pageable device-to-host copy, or a query unless `STUB_LIBCUDA_LAZY=1`),
//! pageable sources are read when a copy is queued and page-locked ones when it runs,
//! and its kernels read device memory when they run (`gomp_stub_snapshot` logs the 64
//! bytes at its argument, `gomp_stub_double` doubles them). A launch or copy that the
//! plugin failed to order after a deferred copy therefore sees the device memory from
//! before that copy (the stand-in's 0xcd filling), and memory freed while queued work
//! still uses it is reported as `stub libcuda: ...`.
//!
//! Every scenario runs in a child process (see conformance/src/support.rs) once per setting of
//! the threads' streams (`GOMP_NVPTX_TUNE=tstream=blocking|nonblocking|legacy`) and
//! per query behaviour of the stand-in (running work or lazy).

use gomp_plugin_conformance::support;

use gomp_plugin_nvptx as _; // links the rlib holding the exported shells
use std::ffi::{c_char, c_int, c_void, OsStr};
use support::api::*;

extern "C" {
    fn GOMP_OFFLOAD_interop(
        obj: *mut InteropObj,
        ord: c_int,
        flag: u32,
        targetsync: bool,
        prefer_type: *const c_char,
    );
    fn GOMP_OFFLOAD_openacc_create_thread_data(ord: c_int) -> *mut c_void;
    fn GOMP_OFFLOAD_openacc_destroy_thread_data(data: *mut c_void);
}

/// libgomp's `struct interop_obj_t` prefix the plugin fills.
#[repr(C)]
struct InteropObj {
    stream: *mut c_void,
    device_data: *mut c_void,
    fr: c_int,
    device_num: c_int,
}

/// An image descriptor as mkoffload lays it out (docs/plugin-abi.md §5.1).
#[repr(C)]
struct PtxObj {
    code: *const c_char,
    size: usize,
}
#[repr(C)]
struct FnEntry {
    name: *const c_char,
    dim: [u16; 3],
}
#[repr(C)]
struct Descriptor {
    ptx_objs: *const PtxObj,
    ptx_num: u32,
    var_names: *const *const c_char,
    var_num: u32,
    fn_names: *const FnEntry,
    fn_num: u32,
    ind_fn_num: u32,
}

/// Two kernels the stand-in gives a meaning to (see its header).
const PTX: &str = "\
.version 6.0
.target sm_52
.address_size 64
.visible .entry gomp_stub_snapshot(.param .u64 vars, .param .u64 stacks, .param .u64 size)
{
\tret;
}
.visible .entry gomp_stub_double(.param .u64 vars, .param .u64 stacks, .param .u64 size)
{
\tret;
}
\0";

/// The kernels of the loaded image (libgomp's handles).
#[derive(Clone, Copy)]
struct Kernels {
    snapshot: usize,
    double: usize,
}

fn lib() -> std::ffi::OsString {
    std::env::var_os("GOMP_PLUGIN_RS_LIBCUDA").expect("set by the parent")
}

/// A function of the stand-in (loaded by the plugin).
fn stub_fn(name: &str) -> *mut c_void {
    support::symbol_of_loaded(&lib(), name)
}

/// Snapshots taken so far by `gomp_stub_snapshot`, and snapshot `i` if there is one.
fn snapshot(i: c_int) -> (c_int, [u8; 64]) {
    // SAFETY: the stand-in's `int stub_libcuda_kernel_log (int, unsigned char *)`.
    let f: unsafe extern "C" fn(c_int, *mut u8) -> c_int =
        unsafe { std::mem::transmute(stub_fn("stub_libcuda_kernel_log")) };
    let mut out = [0u8; 64];
    // SAFETY: 64 writable bytes.
    let n = unsafe { f(i, out.as_mut_ptr()) };
    (n, out)
}

/// Work queued in the stand-in and not yet run.
fn pending() -> i64 {
    // SAFETY: the stand-in's `int64_t stub_libcuda_pending (void)`.
    let f: unsafe extern "C" fn() -> i64 =
        unsafe { std::mem::transmute(stub_fn("stub_libcuda_pending")) };
    // SAFETY: plain call.
    unsafe { f() }
}

/// The stand-in's `cuStreamWriteValue32_v2` writes that have run.
fn value_writes() -> i64 {
    // SAFETY: the stand-in's `int64_t stub_libcuda_value_writes (void)`.
    let f: unsafe extern "C" fn() -> i64 =
        unsafe { std::mem::transmute(stub_fn("stub_libcuda_value_writes")) };
    // SAFETY: plain call.
    unsafe { f() }
}

/// Makes the next host-to-device copy fail on the stand-in's device.
fn fail_next_h2d() {
    // SAFETY: the stand-in's `void stub_libcuda_fail_next_h2d (void)`.
    let f: unsafe extern "C" fn() =
        unsafe { std::mem::transmute(stub_fn("stub_libcuda_fail_next_h2d")) };
    // SAFETY: plain call.
    unsafe { f() }
}

/// `n` bytes of a pattern distinct per `seed` and never the stand-in's 0xcd filling.
fn pattern(seed: usize, n: usize) -> Vec<u8> {
    (0..n).map(|i| ((i * 7 + seed * 31) % 200) as u8).collect()
}

// Safe wrappers of the entry points (device 0). SAFETY (all): host buffers are slices
// of the stated length; device addresses are the plugin's own or checked by it.

fn alloc(n: usize) -> usize {
    // SAFETY: see above.
    let p = unsafe { GOMP_OFFLOAD_alloc(0, n) } as usize;
    assert_ne!(p, 0, "alloc({n})");
    p
}

fn h2d(p: usize, src: &[u8]) -> bool {
    // SAFETY: see above.
    unsafe { GOMP_OFFLOAD_host2dev(0, p as *mut c_void, src.as_ptr().cast(), src.len()) }
}

fn d2h(dst: &mut [u8], p: usize) -> bool {
    // SAFETY: see above.
    unsafe { GOMP_OFFLOAD_dev2host(0, dst.as_mut_ptr().cast(), p as *const c_void, dst.len()) }
}

fn back(p: usize, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    assert!(d2h(&mut v, p), "dev2host of {n} bytes");
    v
}

/// A kernel handle as the OpenACC entry points take it (libgomp passes the handle where
/// the C prototype has a function pointer).
fn kernel_fn(k: usize) -> Option<unsafe extern "C" fn(*mut c_void)> {
    // SAFETY: same size; the handle is only compared against the live kernels, never
    // called.
    unsafe { std::mem::transmute::<usize, Option<unsafe extern "C" fn(*mut c_void)>>(k) }
}

/// `GOMP_OFFLOAD_run` of kernel `f` with `vars` (no target arguments).
fn run(f: usize, vars: usize) {
    let mut args: [*mut c_void; 1] = [std::ptr::null_mut()];
    // A kernel handle of the loaded image; a NULL-terminated argument array.
    gomp_plugin_nvptx::entry_points::run(
        0,
        f as *mut c_void,
        vars as *mut c_void,
        args.as_mut_ptr(),
    )
}

/// Opens device 0 and loads the two-kernel image.
fn setup() -> Kernels {
    // Version 3 (GCC 14+) of libgomp's images.
    setup_under(0, 3)
}

/// [`setup`] where `GOMP_OFFLOAD_version` answers `version` (the libgomp loaded, if
/// any), with an image of libgomp's version `image`.
fn setup_under(version: u32, image: u32) -> Kernels {
    // SAFETY: plain calls.
    unsafe {
        assert_eq!(GOMP_OFFLOAD_version(), version);
        assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 2);
        assert!(GOMP_OFFLOAD_init_device(0));
    }
    let obj = Box::leak(Box::new(PtxObj {
        code: PTX.as_ptr().cast(),
        size: PTX.len(),
    }));
    let fns = Box::leak(Box::new([
        FnEntry {
            name: c"gomp_stub_snapshot".as_ptr(),
            dim: [1, 1, 32],
        },
        FnEntry {
            name: c"gomp_stub_double".as_ptr(),
            dim: [1, 1, 32],
        },
    ]));
    let desc = Box::leak(Box::new(Descriptor {
        ptx_objs: obj,
        ptx_num: 1,
        var_names: std::ptr::null(),
        var_num: 0,
        fn_names: fns.as_ptr(),
        fn_num: 2,
        ind_fn_num: 0,
    }));
    let mut table: *mut AddrPair = std::ptr::null_mut();
    // SAFETY: a descriptor as the contract lays it out; PTX data version 1.
    let n = unsafe {
        GOMP_OFFLOAD_load_image(
            0,
            (image << 16) | 1,
            (desc as *const Descriptor).cast(),
            &mut table,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(n, 3, "two kernels and the ICV entry");
    // SAFETY: the plugin returned `n` entries.
    let t = unsafe { std::slice::from_raw_parts(table, n as usize) };
    Kernels {
        snapshot: t[0].start,
        double: t[1].start,
    }
}

fn fini() -> bool {
    // SAFETY: plain call.
    unsafe { GOMP_OFFLOAD_fini_device(0) }
}

/// The settings every scenario runs under: the threads' streams and the stand-in's
/// queries.
/// (`syncwait=run`: the scenarios count the driver's copies and launches, and the
/// default's one-time measurement of the ways of waiting (`syncwait=auto`) adds its
/// own; it has a test of its own below.)
const MODES: [(&str, &str); 6] = [
    ("teams=1,warps=1,tstream=blocking,syncwait=run", "0"),
    ("teams=1,warps=1,tstream=blocking,syncwait=run", "1"),
    ("teams=1,warps=1,tstream=nonblocking,syncwait=run", "0"),
    ("teams=1,warps=1,tstream=nonblocking,syncwait=run", "1"),
    ("teams=1,warps=1,tstream=legacy,syncwait=run", "0"),
    ("teams=1,warps=1,tstream=legacy,syncwait=run", "1"),
];

/// Runs scenario `test` in a child under every mode (stand-in built with `flags`);
/// returns the children, each checked to have passed with no refused driver call.
fn in_every_mode(test: &str, flags: &[&str]) -> Vec<support::Child> {
    if !support::have_tools(test, &["cc"]) {
        return Vec::new();
    }
    let dir = support::Scratch::new("copy-order");
    let lib = support::stub_libcuda_2dev(&dir, flags);
    MODES
        .iter()
        .map(|(tune, lazy)| {
            let c = support::run_child(
                test,
                &[
                    ("GOMP_PLUGIN_RS_LIBCUDA", lib.as_os_str()),
                    ("GOMP_NVPTX_TUNE", OsStr::new(tune)),
                    ("STUB_LIBCUDA_LAZY", OsStr::new(lazy)),
                ],
            );
            c.assert_passed()
                .assert_stderr_lacks("panicked")
                .assert_stderr_lacks("stub libcuda:");
            c
        })
        .collect()
}

// ---------------------------------------------------------------------------------

/// One thread: a deferred copy (still queued when host2dev returns) is seen by the
/// kernel launched next, by a device-to-host copy, and a kernel's result by the copy
/// after it.
#[test]
fn deferred_copy_then_same_thread() {
    const T: &str = "deferred_copy_then_same_thread";
    if support::is_child(T) {
        let k = setup();
        let p = alloc(64);
        let data = pattern(1, 64);
        assert!(h2d(p, &data));
        assert!(pending() > 0, "the copy returned before it ran");
        let (n0, _) = snapshot(0);
        run(k.snapshot, p);
        let (n, seen) = snapshot(n0);
        assert_eq!(n, n0 + 1, "one snapshot");
        assert_eq!(seen.to_vec(), data, "the kernel ran after the copy");
        let data2 = pattern(2, 64);
        assert!(h2d(p, &data2));
        assert_eq!(back(p, 64), data2, "device-to-host after the copy");
        let words: Vec<u8> = (1..=8u64).flat_map(|w| w.to_le_bytes()).collect();
        assert!(h2d(p, &words));
        run(k.double, p);
        let want: Vec<u8> = (1..=8u64).flat_map(|w| (2 * w).to_le_bytes()).collect();
        assert_eq!(back(p, 64), want, "copy, kernel, copy back in order");
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
}

/// Other threads see a thread's deferred copies: a launch, a device-to-host copy and a
/// copy to the same block from other threads are ordered after it.
#[test]
fn deferred_copy_then_other_threads() {
    const T: &str = "deferred_copy_then_other_threads";
    if support::is_child(T) {
        let k = setup();
        let p = alloc(64);
        let q = alloc(64);
        let (d1, d2) = (pattern(3, 64), pattern(4, 64));
        std::thread::spawn({
            let d1 = d1.clone();
            move || {
                assert!(h2d(p, &d1));
                assert!(h2d(q, &d1));
            }
        })
        .join()
        .unwrap();
        assert!(pending() > 0, "the copies returned before they ran");
        let (n0, _) = snapshot(0);
        std::thread::spawn(move || run(k.snapshot, p))
            .join()
            .unwrap();
        assert_eq!(snapshot(n0).1.to_vec(), d1, "a launch on another thread");
        // A copy to the same block from another thread lands after the first one,
        // even when that thread's own work runs first.
        std::thread::spawn({
            let d2 = d2.clone();
            move || {
                assert!(h2d(q, &d2));
                let mut scratch = [0u8; 8];
                let r = alloc(8);
                assert!(d2h(&mut scratch, r), "runs this thread's stream");
            }
        })
        .join()
        .unwrap();
        let got = std::thread::spawn(move || back(q, 64)).join().unwrap();
        assert_eq!(got, d2, "the later copy wins");
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
}

/// A `nowait` launch (its own stream) sees the copies made before it.
#[test]
fn deferred_copy_then_async_run() {
    const T: &str = "deferred_copy_then_async_run";
    if support::is_child(T) {
        let k = setup();
        let p = alloc(64);
        let data = pattern(5, 64);
        assert!(h2d(p, &data));
        assert!(pending() > 0);
        let (n0, _) = snapshot(0);
        let mut args: [*mut c_void; 1] = [std::ptr::null_mut()];
        // GOMP_OFFLOAD_async_run's implementation (within this link the exported name
        // is its IFUNC resolver) with a kernel handle and a NULL-terminated argument
        // array; no libgomp is loaded, so the completion is reported to nobody.
        gomp_plugin_nvptx::async_run(
            0,
            k.snapshot as *mut c_void,
            p as *mut c_void,
            args.as_mut_ptr(),
            std::ptr::null_mut(),
        );
        let t0 = std::time::Instant::now();
        while snapshot(0).0 == n0 {
            assert!(t0.elapsed().as_secs() < 20, "the async launch never ran");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(
            snapshot(n0).1.to_vec(),
            data,
            "the async launch ran after the copy"
        );
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
}

/// An interop `targetsync` stream handed to the program is ordered after the copies
/// made before; while it exists copies complete before returning; afterwards they are
/// deferred again.
#[test]
fn deferred_copy_then_interop_stream() {
    const T: &str = "deferred_copy_then_interop_stream";
    if support::is_child(T) {
        setup();
        // The program's own driver calls, on the interop stream.
        // SAFETY: the stand-in's cuMemcpyDtoHAsync_v2 and cuStreamSynchronize.
        let dtoh: unsafe extern "C" fn(*mut c_void, u64, usize, *mut c_void) -> c_int =
            unsafe { std::mem::transmute(stub_fn("cuMemcpyDtoHAsync_v2")) };
        // SAFETY: as above.
        let sync: unsafe extern "C" fn(*mut c_void) -> c_int =
            unsafe { std::mem::transmute(stub_fn("cuStreamSynchronize")) };
        let user_read = |s: *mut c_void, p: usize| {
            let mut v = vec![0u8; 64];
            // SAFETY: 64 writable bytes; a live device block; the plugin's stream.
            unsafe {
                assert_eq!(dtoh(v.as_mut_ptr().cast(), p as u64, 64, s), 0);
                assert_eq!(sync(s), 0);
            }
            v
        };
        let p = alloc(64);
        let d1 = pattern(6, 64);
        assert!(h2d(p, &d1));
        assert!(pending() > 0);
        let mut obj = InteropObj {
            stream: std::ptr::null_mut(),
            device_data: std::ptr::null_mut(),
            fr: 0,
            device_num: 0,
        };
        // SAFETY: a live object; init (0) with targetsync, no preference.
        unsafe { GOMP_OFFLOAD_interop(&mut obj, 0, 0, true, std::ptr::null()) };
        assert!(!obj.stream.is_null(), "a targetsync stream");
        assert_eq!(user_read(obj.stream, p), d1, "the stream is after the copy");
        let d2 = pattern(7, 64);
        assert!(h2d(p, &d2));
        assert_eq!(pending(), 0, "copies complete while the stream exists");
        assert_eq!(user_read(obj.stream, p), d2);
        // SAFETY: use (1), then destroy (2) the object made above.
        unsafe {
            GOMP_OFFLOAD_interop(&mut obj, 0, 1, true, std::ptr::null());
            GOMP_OFFLOAD_interop(&mut obj, 0, 2, true, std::ptr::null());
        }
        assert!(h2d(p, &d1));
        assert!(pending() > 0, "deferred again");
        assert_eq!(back(p, 64), d1);
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
}

/// Bounce buffers and the thread's ring: many deferred 32 KiB copies in a row (more
/// than the buffers kept), and many 1 KiB ones (more than the ring holds, with
/// device-to-host copies in between, which may use another stream), each land with
/// their own bytes, so no buffer space was rewritten before its copy ran; a copy from
/// page-locked memory is never left reading the program's buffer.
#[test]
fn bounce_buffers_wait_for_their_copies() {
    const T: &str = "bounce_buffers_wait_for_their_copies";
    if support::is_child(T) {
        setup();
        const N: usize = 32 << 10;
        let blocks: Vec<usize> = (0..12).map(|_| alloc(N)).collect();
        for (i, &b) in blocks.iter().enumerate() {
            assert!(h2d(b, &pattern(10 + i, N)));
        }
        assert!(pending() > 0, "deferred");
        for (i, &b) in blocks.iter().enumerate() {
            assert!(back(b, N) == pattern(10 + i, N), "block {i}");
        }
        const K: usize = 1 << 10;
        let small: Vec<usize> = (0..600).map(|_| alloc(K)).collect();
        for (i, &b) in small.iter().enumerate() {
            assert!(h2d(b, &pattern(100 + i, K)));
            if i % 300 == 299 {
                let _ = back(blocks[0], 8);
            }
        }
        for (i, &b) in small.iter().enumerate() {
            assert!(back(b, K) == pattern(100 + i, K), "small block {i}");
        }
        for n in [64usize, N] {
            let mut host: *mut c_void = std::ptr::null_mut();
            // SAFETY: an out-pointer.
            assert!(unsafe { GOMP_OFFLOAD_page_locked_host_alloc(&mut host, n) });
            // SAFETY: `n` bytes of page-locked memory, freed below.
            let src = unsafe { std::slice::from_raw_parts_mut(host.cast::<u8>(), n) };
            let p = alloc(n);
            src.copy_from_slice(&pattern(30, n));
            assert!(h2d(p, src));
            src.fill(0);
            assert!(
                back(p, n) == pattern(30, n),
                "page-locked source of {n} bytes"
            );
            // SAFETY: from page_locked_host_alloc.
            assert!(unsafe { GOMP_OFFLOAD_page_locked_host_free(host) });
        }
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
}

/// Small copies to the host through the thread's ring are waited for by the word the
/// stream writes after them (`syncwait=flag`; with `syncwait=run`, the default, only the
/// kernel launches are, and the copies synchronize) and see what the kernel
/// before them wrote, also when the stand-in's queries answer "not ready" until a
/// synchronisation (`STUB_LIBCUDA_LAZY=1`: the wait gives up polling and
/// synchronizes); `syncwait=sync` writes no word.
#[test]
fn small_copies_to_the_host_wait_by_flag() {
    const T: &str = "small_copies_to_the_host_wait_by_flag";
    if support::is_child(T) {
        let k = setup();
        let (p, q) = (alloc(64), alloc(64));
        // "1": runs and copies write the word; "run": only runs; "0": none.
        let flag = std::env::var("RS_FLAG").unwrap();
        let lazy = std::env::var("STUB_LIBCUDA_LAZY").unwrap() == "1";
        for round in 1..=8u64 {
            doubled_round(&k, p, round);
            // A block no kernel saw: no read-ahead has it.
            let other = pattern(round as usize, 64);
            assert!(h2d(q, &other));
            assert_eq!(back(q, 64), other, "round {round}: a copy there and back");
        }
        // A failure before the copy is reported by it, not taken for its end.
        fail_next_h2d();
        assert!(h2d(q, &pattern(9, 64)), "deferred: returns before it fails");
        let mut v = vec![0u8; 64];
        assert!(
            !d2h(&mut v, q),
            "the failure is reported by the copy to the host"
        );
        let w = value_writes();
        match (flag.as_str(), lazy) {
            // The thread's first small copies go without the ring (`device::copy::ring::WITHOUT`);
            // the 8 runs and the later copies write.
            ("1", false) => assert!(w > 8, "{w} flag writes"),
            // Polled, never written until a synchronisation ran the stream.
            ("1", true) => assert!(w >= 1, "{w} flag writes"),
            // Only the runs write (at most 8), never a copy.
            ("run", _) => assert!((1..=8).contains(&w), "{w} flag writes"),
            // The measurement of the ways of waiting polls the word in 8 rounds of each
            // of its two probes (then each kind waits the way it found faster).
            ("auto", _) => assert!(w >= 16, "{w} flag writes"),
            _ => assert_eq!(w, 0),
        }
        // The failure was reported; close reports nothing more.
        fini();
        return;
    }
    if !support::have_tools(T, &["cc"]) {
        return;
    }
    let dir = support::Scratch::new("copy-order-flag");
    let lib = support::stub_libcuda_2dev(&dir, &[]);
    for (how, flag) in [
        ("syncwait=flag", "1"),
        ("syncwait=sync", "0"),
        ("syncwait=run", "run"),
        ("", "auto"),
    ] {
        for lazy in ["0", "1"] {
            let tune = format!("teams=1,warps=1,{how}");
            support::run_child(
                T,
                &[
                    ("GOMP_PLUGIN_RS_LIBCUDA", lib.as_os_str()),
                    ("GOMP_NVPTX_TUNE", OsStr::new(&tune)),
                    ("STUB_LIBCUDA_LAZY", OsStr::new(lazy)),
                    ("RS_FLAG", OsStr::new(flag)),
                ],
            )
            .assert_passed()
            .assert_stderr_lacks("panicked")
            .assert_stderr_lacks("stub libcuda:");
        }
    }
}

/// `syncwait=auto` (the default): the device measures both ways of waiting once, at
/// the first wait of a thread that has its ring, and keeps for a launch's wait and for
/// a copy's the faster by median, as `GOMP_NVPTX_INFO` and the profile say; the
/// stand-in makes one way slower (`STUB_LIBCUDA_SYNC_NS`: every cuStreamSynchronize
/// 200 us more; `STUB_LIBCUDA_WRITE_NS`: every flag write). Results stay right either
/// way, and a forced `syncwait` measures nothing.
#[test]
fn waits_are_measured_once_and_follow_their_costs() {
    const T: &str = "waits_are_measured_once_and_follow_their_costs";
    if support::is_child(T) {
        let k = setup();
        let p = alloc(64);
        for round in 1..=6u64 {
            doubled_round(&k, p, round);
        }
        fini();
        return;
    }
    if !support::have_tools(T, &["cc"]) {
        return;
    }
    let dir = support::Scratch::new("copy-order-waits");
    let lib = support::stub_libcuda_2dev(&dir, &[]);
    let info = "libgomp: nvptx info: device 0: synchronous waits measured: ";
    for (slow, tune, want) in [
        (
            "STUB_LIBCUDA_SYNC_NS",
            "",
            Some(("by the word", "by the word")),
        ),
        (
            "STUB_LIBCUDA_WRITE_NS",
            "",
            Some(("by cuStreamSynchronize", "by cuStreamSynchronize")),
        ),
        ("STUB_LIBCUDA_SYNC_NS", "syncwait=run", None),
        ("STUB_LIBCUDA_WRITE_NS", "syncwait=sync", None),
    ] {
        let tune = format!("teams=1,warps=1,{tune}");
        let c = support::run_child(
            T,
            &[
                ("GOMP_PLUGIN_RS_LIBCUDA", lib.as_os_str()),
                ("GOMP_NVPTX_TUNE", OsStr::new(&tune)),
                ("GOMP_NVPTX_INFO", OsStr::new("1")),
                ("GOMP_NVPTX_PROFILE", OsStr::new("1")),
                (slow, OsStr::new("200000")),
            ],
        );
        c.assert_passed()
            .assert_stderr_lacks("panicked")
            .assert_stderr_lacks("stub libcuda:");
        let lines: Vec<&str> = c.stderr.lines().filter(|l| l.starts_with(info)).collect();
        let profile = c
            .stderr
            .lines()
            .filter(|l| l.starts_with("libgomp: nvptx profile: device 0: synchronous waits"))
            .count();
        match want {
            Some((launch, copy)) => {
                assert_eq!(lines.len(), 1, "{slow} {tune}: measured once\n{}", c.stderr);
                assert!(
                    lines[0].contains(&format!("a launch's {launch} ("))
                        && lines[0].contains(&format!("a copy's {copy} (")),
                    "{slow} {tune}: {}",
                    lines[0]
                );
                assert_eq!(
                    profile, 1,
                    "{slow} {tune}: the profile says it\n{}",
                    c.stderr
                );
            }
            None => assert!(
                lines.is_empty() && profile == 0,
                "{slow} {tune}: forced, nothing measured\n{}",
                c.stderr
            ),
        }
    }
}

/// A deferred copy that fails on the device is reported: by the thread's next
/// device-to-host copy, and, when nothing else waits for it, by the device's close.
#[test]
fn failed_deferred_copy_is_reported() {
    const T: &str = "failed_deferred_copy_is_reported";
    if support::is_child(T) {
        setup();
        let p = alloc(64);
        fail_next_h2d();
        assert!(h2d(p, &pattern(8, 64)), "deferred: returns before it fails");
        let mut v = vec![0u8; 64];
        assert!(!d2h(&mut v, p), "the failure is reported");
        eprintln!("CHILD: reported by dev2host");
        fail_next_h2d();
        assert!(h2d(p, &pattern(9, 64)));
        assert!(!fini(), "the failure is reported at close");
        eprintln!("CHILD: reported by fini_device");
        return;
    }
    for c in in_every_mode(T, &[]) {
        let lines: Vec<&str> = c.stderr.lines().collect();
        let at = |marker: &str| lines.iter().position(|l| *l == marker);
        let (a, b) = (
            at("CHILD: reported by dev2host"),
            at("CHILD: reported by fini_device"),
        );
        let (Some(a), Some(b)) = (a, b) else {
            panic!("markers missing\n{}", c.stderr)
        };
        let err = |l: &&&str| l.starts_with("libgomp: ") && l.contains("illegal memory access");
        assert!(lines[..a].iter().any(|l| err(&l)), "{}", c.stderr);
        assert!(lines[a..b].iter().any(|l| err(&l)), "{}", c.stderr);
    }
}

/// Memory given back to the driver waits for the deferred copies into it: a block too
/// large for the plugin's caches (freed to the pool, or with cuMemFree), and every
/// cached block at close.
#[test]
fn freed_memory_waits_for_deferred_copies() {
    const T: &str = "freed_memory_waits_for_deferred_copies";
    if support::is_child(T) {
        setup();
        let big = alloc(600 << 20);
        assert!(h2d(big, &pattern(12, 64)));
        assert!(pending() > 0);
        // SAFETY: a block from alloc, freed once.
        assert!(unsafe { GOMP_OFFLOAD_free(0, big as *mut c_void) });
        let small = alloc(64);
        assert!(h2d(small, &pattern(13, 64)), "runs the pool's stream");
        let mut v = vec![0u8; 64];
        assert!(d2h(&mut v, small));
        for i in 0..20 {
            let b = alloc(1000 * (i + 1));
            assert!(h2d(b, &pattern(i, 64)));
        }
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
    in_every_mode(T, &["-DNO_POOLS"]);
}

/// OpenACC: synchronous copies go to CUDA's legacy stream, deferred there; a launch on
/// an async queue (a blocking stream) and an OpenMP launch on the thread's stream see
/// them.
#[test]
fn openacc_copies_on_the_legacy_stream() {
    const T: &str = "openacc_copies_on_the_legacy_stream";
    if support::is_child(T) {
        let k = setup();
        // SAFETY: device 0 is open; the data is destroyed below.
        let td = unsafe { GOMP_OFFLOAD_openacc_create_thread_data(0) };
        assert!(!td.is_null());
        // SAFETY: plain call.
        let aq = unsafe { GOMP_OFFLOAD_openacc_async_construct(0) };
        assert!(!aq.is_null());
        let p = alloc(64);
        let d1 = pattern(14, 64);
        assert!(h2d(p, &d1));
        assert!(pending() > 0);
        let (n0, _) = snapshot(0);
        let mut dims = [0u32; 3];
        // SAFETY: a kernel handle, libgomp's arrays (unused ones NULL), a live queue.
        unsafe {
            gomp_plugin_nvptx::entry_points::openacc_async_exec(
                kernel_fn(k.snapshot),
                0,
                std::ptr::null_mut(),
                p as *mut *mut c_void,
                dims.as_mut_ptr(),
                std::ptr::null_mut(),
                aq.cast(),
            );
            assert!(GOMP_OFFLOAD_openacc_async_synchronize(aq));
        }
        assert_eq!(
            snapshot(n0).1.to_vec(),
            d1,
            "the queue's launch after the copy"
        );
        let d2 = pattern(15, 64);
        assert!(h2d(p, &d2));
        run(k.snapshot, p);
        assert_eq!(snapshot(n0 + 1).1.to_vec(), d2, "an OpenMP launch after it");
        let d3 = pattern(16, 64);
        assert!(h2d(p, &d3));
        let mut v = vec![0u8; 64];
        // SAFETY: a live queue and block; `v` outlives the synchronisation below.
        unsafe {
            assert!(GOMP_OFFLOAD_openacc_async_dev2host(
                0,
                v.as_mut_ptr().cast(),
                p as *const c_void,
                64,
                aq
            ));
            assert!(GOMP_OFFLOAD_openacc_async_synchronize(aq));
            assert!(GOMP_OFFLOAD_openacc_async_destruct(aq));
            GOMP_OFFLOAD_openacc_destroy_thread_data(td);
        }
        assert_eq!(v, d3, "a queue's copy after it");
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
}

/// Under libgomp 12, `openacc_async_exec` puts the kernel's argument array in a block of
/// its own on the device: the call returns without waiting for the queue (the copy and
/// the kernel still queued, with the stand-in's lazy queries), the block is not freed
/// before the kernel has read it (a large block, and no device cache: a free goes to
/// the driver at once, which the stand-in checks against the work queued before it),
/// and it is freed once the queue's work has run (every allocation freed by the end,
/// `GOMP_NVPTX_PROFILE`'s count).
#[test]
fn libgomp_12_async_exec_frees_its_block_in_queue_order() {
    const T: &str = "libgomp_12_async_exec_frees_its_block_in_queue_order";
    const LIBGOMP_ENV: &str = "GOMP_PLUGIN_RS_TEST_LIBGOMP";
    if support::is_child(T) {
        support::load_global(&std::env::var_os(LIBGOMP_ENV).expect("the parent names it"));
        let lazy = std::env::var("STUB_LIBCUDA_LAZY").as_deref() == Ok("1");
        // libgomp 12: version 1 of the plugin interface and of images.
        let k = setup_under(1, 1);
        let q = Queue::new();
        let p = alloc(64);
        let d = pattern(17, 64);
        assert!(h2d(p, &d));
        assert_eq!(back(p, 64), d);
        assert_eq!(pending(), 0, "nothing queued before the launch");
        // Above the small blocks' sizes (64 KiB).
        const VARS: usize = 16 << 10;
        let mut host_var = 0u64;
        let mut hostaddrs = vec![(&mut host_var as *mut u64).cast::<c_void>(); VARS];
        let mut devaddrs = vec![p as *mut c_void; VARS];
        let mut dims = [0u32; 3];
        let (n0, _) = snapshot(0);
        for _ in 0..3 {
            // SAFETY: a kernel handle; libgomp 12's host arrays of `VARS` entries (the
            // plugin reads them before returning); a live queue.
            gomp_plugin_nvptx::entry_points::openacc_async_exec(
                kernel_fn(k.snapshot),
                VARS,
                hostaddrs.as_mut_ptr(),
                devaddrs.as_mut_ptr(),
                dims.as_mut_ptr(),
                std::ptr::null_mut(),
                q.aq.cast(),
            );
            if lazy {
                assert!(pending() > 0, "the launch is left queued");
            }
        }
        q.wait();
        for i in 0..3 {
            let (n, snap) = snapshot(n0 + i);
            assert_eq!(n, n0 + 3, "three launches ran");
            assert_eq!(
                snap[..8],
                p.to_ne_bytes(),
                "launch {i} read its argument block"
            );
        }
        // SAFETY: a block from alloc, freed once.
        assert!(unsafe { GOMP_OFFLOAD_free(0, p as *mut c_void) });
        drop(q);
        assert!(fini());
        return;
    }
    if !support::have_tools(T, &["cc"]) {
        return;
    }
    let dir = support::Scratch::new("copy-order");
    let lib = support::stub_libcuda_2dev(&dir, &[]);
    let libgomp = support::fake_libgomp(&dir.path().join("gcc12"), &[("GOMP_5.1", "GOMP_teams4")]);
    for lazy in ["0", "1"] {
        let c = support::run_child(
            T,
            &[
                ("GOMP_PLUGIN_RS_LIBCUDA", lib.as_os_str()),
                (LIBGOMP_ENV, libgomp.as_os_str()),
                ("STUB_LIBCUDA_LAZY", OsStr::new(lazy)),
                ("GOMP_NVPTX_PROFILE", OsStr::new("1")),
                ("GOMP_NVPTX_DEVICE_CACHE", OsStr::new("0")),
            ],
        );
        c.assert_passed()
            .assert_stderr_lacks("panicked")
            .assert_stderr_lacks("stub libcuda:");
        // "allocations: N (...), M free(s), ...": every block freed, the argument
        // blocks included.
        let line = c
            .stderr
            .lines()
            .find(|l| l.contains("allocations: "))
            .unwrap_or_else(|| panic!("no allocation line\n{}", c.stderr));
        let count = |after: &str, before: &str| -> u64 {
            let rest = line.split_once(after).expect("field").1;
            rest.split_once(before)
                .expect("field")
                .0
                .trim()
                .parse()
                .expect("count")
        };
        let allocs = count("allocations: ", "(");
        let frees = count("driver or pool allocation(s)),", "free(s)");
        assert_eq!(allocs, 1 + 3, "{line}");
        assert_eq!(frees, allocs, "{line}");
    }
}

// ---------------------------------------------------------------------------------
// OpenACC async-queue copies: the device's copy engine on the queue's stream.

/// An OpenACC async queue and the thread data OpenACC use needs; destroyed on drop,
/// after the queue's work.
struct Queue {
    aq: *mut c_void,
    td: *mut c_void,
}

impl Queue {
    fn new() -> Queue {
        // SAFETY: device 0 is open; both are destroyed in `drop`.
        let td = unsafe { GOMP_OFFLOAD_openacc_create_thread_data(0) };
        assert!(!td.is_null());
        // SAFETY: as above.
        let aq = unsafe { GOMP_OFFLOAD_openacc_async_construct(0) };
        assert!(!aq.is_null());
        Queue { aq, td }
    }

    /// `openacc_async_host2dev`: `src` must stay as it is until [`Queue::wait`].
    fn h2d(&self, p: usize, src: &[u8]) {
        // SAFETY: a live queue and block; the caller keeps `src` until the wait.
        assert!(unsafe {
            GOMP_OFFLOAD_openacc_async_host2dev(
                0,
                p as *mut c_void,
                src.as_ptr().cast(),
                src.len(),
                self.aq,
            )
        });
    }

    /// `openacc_async_dev2host`: `dst` must stay alive until [`Queue::wait`].
    fn d2h(&self, dst: &mut [u8], p: usize) {
        // SAFETY: as above.
        assert!(unsafe {
            GOMP_OFFLOAD_openacc_async_dev2host(
                0,
                dst.as_mut_ptr().cast(),
                p as *const c_void,
                dst.len(),
                self.aq,
            )
        });
    }

    fn d2d(&self, dst: usize, src: usize, n: usize) {
        // SAFETY: a live queue and blocks.
        assert!(unsafe {
            GOMP_OFFLOAD_openacc_async_dev2dev(
                0,
                dst as *mut c_void,
                src as *const c_void,
                n,
                self.aq,
            )
        });
    }

    /// `openacc_async_exec` of kernel `f` with `vars` on the queue.
    fn exec(&self, f: usize, vars: usize) {
        let mut dims = [0u32; 3];
        // SAFETY: a kernel handle, libgomp's arrays (unused ones NULL), a live queue.
        gomp_plugin_nvptx::entry_points::openacc_async_exec(
            kernel_fn(f),
            0,
            std::ptr::null_mut(),
            vars as *mut *mut c_void,
            dims.as_mut_ptr(),
            std::ptr::null_mut(),
            self.aq.cast(),
        );
    }

    /// `acc_wait`: `openacc_async_synchronize`.
    fn wait(&self) {
        // SAFETY: a live queue.
        assert!(unsafe { GOMP_OFFLOAD_openacc_async_synchronize(self.aq) });
    }

    /// `acc_wait_async(self, later)`: `openacc_async_serialize`.
    fn then(&self, later: &Queue) {
        // SAFETY: live queues.
        assert!(unsafe { GOMP_OFFLOAD_openacc_async_serialize(self.aq, later.aq) });
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: made in `new`, destroyed once.
        unsafe {
            assert!(GOMP_OFFLOAD_openacc_async_destruct(self.aq));
            GOMP_OFFLOAD_openacc_destroy_thread_data(self.td);
        }
    }
}

/// `n` bytes of page-locked host memory from the plugin, freed on drop.
struct PageLocked(*mut u8, usize);

impl PageLocked {
    fn new(n: usize) -> PageLocked {
        let mut host: *mut c_void = std::ptr::null_mut();
        // SAFETY: an out-pointer.
        assert!(unsafe { GOMP_OFFLOAD_page_locked_host_alloc(&mut host, n) });
        PageLocked(host.cast(), n)
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `n` bytes of page-locked memory, alive until drop.
        unsafe { std::slice::from_raw_parts_mut(self.0, self.1) }
    }
}

impl Drop for PageLocked {
    fn drop(&mut self) {
        // SAFETY: from page_locked_host_alloc, freed once.
        assert!(unsafe { GOMP_OFFLOAD_page_locked_host_free(self.0.cast()) });
    }
}

/// Sizes that take each path of the copy engine: the driver's (a few bytes), a bounce
/// buffer (32 KiB), the driver's again (2 MiB, above the bounce size) and the staging
/// engine (5 MiB).
const QUEUE_SIZES: [usize; 4] = [64, 32 << 10, 2 << 20, 5 << 20];

/// A queue's copy is seen by the launch queued after it on that queue, whatever path
/// the copy took; and a launch's result by the queue's copy after it, into pageable and
/// page-locked memory.
#[test]
fn queue_copy_then_launch_on_the_queue() {
    const T: &str = "queue_copy_then_launch_on_the_queue";
    if support::is_child(T) {
        let k = setup();
        let q = Queue::new();
        for (i, n) in QUEUE_SIZES.into_iter().enumerate() {
            let p = alloc(n);
            let data = pattern(40 + i, n);
            let (n0, _) = snapshot(0);
            q.h2d(p, &data);
            q.exec(k.snapshot, p);
            q.wait();
            assert_eq!(
                snapshot(n0).1[..],
                data[..64],
                "launch after a {n}-byte copy"
            );
            let words: Vec<u8> = (0..n as u64 / 8).flat_map(|w| w.to_le_bytes()).collect();
            q.h2d(p, &words);
            q.exec(k.double, p);
            let want: Vec<u8> = (0..8u64).flat_map(|w| (2 * w).to_le_bytes()).collect();
            let mut pageable = vec![0u8; n];
            q.d2h(&mut pageable, p);
            q.wait();
            assert_eq!(
                pageable[..64],
                want[..],
                "{n} bytes back to pageable memory"
            );
            q.exec(k.double, p);
            let mut locked = PageLocked::new(n);
            q.d2h(locked.bytes(), p);
            q.wait();
            let want: Vec<u8> = (0..8u64).flat_map(|w| (4 * w).to_le_bytes()).collect();
            assert_eq!(
                locked.bytes()[..64],
                want[..],
                "{n} bytes to page-locked memory"
            );
            // SAFETY: a block from alloc, freed once.
            assert!(unsafe { GOMP_OFFLOAD_free(0, p as *mut c_void) });
        }
        drop(q);
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
}

/// After `acc_wait` a queue's copies have landed: a synchronous copy back sees them,
/// many bounce-buffer copies queued in a row (more than the buffers kept) each land
/// with their own bytes, and the program may then reuse the sources.
#[test]
fn queue_copy_then_wait() {
    const T: &str = "queue_copy_then_wait";
    if support::is_child(T) {
        setup();
        let q = Queue::new();
        for (i, n) in QUEUE_SIZES.into_iter().enumerate() {
            let p = alloc(n);
            let mut data = pattern(50 + i, n);
            q.h2d(p, &data);
            q.wait();
            // OpenACC's rule: the source is the program's again after the wait.
            data.fill(0);
            assert!(back(p, n) == pattern(50 + i, n), "{n} bytes after acc_wait");
        }
        const N: usize = 32 << 10;
        let blocks: Vec<usize> = (0..12).map(|_| alloc(N)).collect();
        let sources: Vec<Vec<u8>> = (0..12).map(|i| pattern(60 + i, N)).collect();
        for (b, src) in blocks.iter().zip(&sources) {
            q.h2d(*b, src);
        }
        assert!(pending() > 0, "queued, not run");
        q.wait();
        for (i, &b) in blocks.iter().enumerate() {
            assert!(back(b, N) == sources[i], "bounce block {i}");
        }
        let mut locked = PageLocked::new(N);
        locked.bytes().copy_from_slice(&pattern(80, N));
        q.h2d(blocks[0], locked.bytes());
        q.wait();
        locked.bytes().fill(0);
        assert!(back(blocks[0], N) == pattern(80, N), "page-locked source");
        drop((q, locked));
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
}

/// A copy on another queue sees a queue's copy once it waits for that queue: through
/// `acc_wait_async` (an event, no host wait) and after `acc_wait`.
#[test]
fn queue_copy_then_other_queue_after_wait() {
    const T: &str = "queue_copy_then_other_queue_after_wait";
    if support::is_child(T) {
        let k = setup();
        let (q1, q2) = (Queue::new(), Queue::new());
        for (i, n) in QUEUE_SIZES.into_iter().enumerate() {
            let (p, p2) = (alloc(n), alloc(n));
            let data = pattern(90 + i, n);
            q1.h2d(p, &data);
            q1.then(&q2);
            let mut locked = PageLocked::new(n);
            q2.d2h(locked.bytes(), p);
            q2.wait();
            assert!(locked.bytes()[..] == data[..], "{n} bytes, acc_wait_async");
            let data2 = pattern(95 + i, n);
            q1.h2d(p, &data2);
            q1.wait();
            q2.d2d(p2, p, n);
            let (n0, _) = snapshot(0);
            q2.exec(k.snapshot, p2);
            q2.wait();
            assert_eq!(snapshot(n0).1[..], data2[..64], "{n} bytes, acc_wait");
            assert!(back(p2, n) == data2, "{n} bytes, device to device");
        }
        drop((q1, q2));
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
}

/// A queue's copies do not wait for another queue's work: with a launch queued on one
/// queue and not yet run, copies each way on another queue, whatever path they take
/// (the staging engine's included), and that queue's `acc_wait` complete while the
/// launch is still queued; the launch then runs at its own queue's wait, after the
/// copy queued before it on that queue.
#[test]
fn queue_copy_does_not_wait_for_another_queue() {
    const T: &str = "queue_copy_does_not_wait_for_another_queue";
    if support::is_child(T) {
        let k = setup();
        let (q1, q2) = (Queue::new(), Queue::new());
        let p1 = alloc(64);
        let blocks: Vec<usize> = QUEUE_SIZES.iter().map(|&n| alloc(n)).collect();
        for (i, (n, p)) in QUEUE_SIZES
            .into_iter()
            .zip(blocks.iter().copied())
            .enumerate()
        {
            let mine = pattern(130 + i, 64);
            q1.h2d(p1, &mine);
            let (n0, _) = snapshot(0);
            q1.exec(k.snapshot, p1);
            assert_eq!(snapshot(0).0, n0, "the launch is queued, not run");
            let data = pattern(140 + i, n);
            q2.h2d(p, &data);
            let mut out = vec![0u8; n];
            q2.d2h(&mut out, p);
            q2.wait();
            assert!(out == data, "{n} bytes there and back on the other queue");
            assert_eq!(
                snapshot(0).0,
                n0,
                "{n}-byte copies on one queue waited for another queue's launch"
            );
            q1.wait();
            assert_eq!(snapshot(0).0, n0 + 1, "the launch ran at its queue's wait");
            assert_eq!(
                snapshot(n0).1[..],
                mine[..],
                "after its queue's {n}-byte copy"
            );
        }
        for p in blocks.into_iter().chain([p1]) {
            // SAFETY: blocks from alloc, each freed once, their queues idle.
            assert!(unsafe { GOMP_OFFLOAD_free(0, p as *mut c_void) });
        }
        drop((q1, q2));
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
}

/// `GOMP_NVPTX_PROFILE` counts a queue's copies: those that returned once queued in
/// the `queued` rows, the waited ones by their path.
#[test]
fn queue_copies_are_profiled() {
    const T: &str = "queue_copies_are_profiled";
    if support::is_child(T) {
        setup();
        let q = Queue::new();
        let (p, p2) = (alloc(5 << 20), alloc(64));
        for n in QUEUE_SIZES {
            q.h2d(p, &pattern(1, n));
            q.wait();
        }
        let mut v = vec![0u8; 64];
        q.d2h(&mut v, p);
        let mut large = vec![0u8; 5 << 20];
        q.d2h(&mut large, p);
        let mut locked = PageLocked::new(64);
        q.d2h(locked.bytes(), p);
        q.d2d(p2, p, 64);
        q.wait();
        drop((q, locked, large));
        assert!(fini());
        return;
    }
    if !support::have_tools(T, &["cc"]) {
        return;
    }
    let dir = support::Scratch::new("copy-order");
    let lib = support::stub_libcuda_2dev(&dir, &[]);
    let c = support::run_child(
        T,
        &[
            ("GOMP_PLUGIN_RS_LIBCUDA", lib.as_os_str()),
            ("GOMP_NVPTX_PROFILE", OsStr::new("1")),
        ],
    );
    c.assert_passed().assert_stderr_lacks("stub libcuda:");
    let count = |row: &str| {
        c.stderr
            .lines()
            .find_map(|l| {
                let l = l.split_once(row)?.1;
                l.split_whitespace().next()?.parse::<u64>().ok()
            })
            .unwrap_or_else(|| panic!("no row {row:?}\n{}", c.stderr))
    };
    assert_eq!(count("h2d queued "), 3, "64 B, 32 KiB and 2 MiB");
    assert_eq!(count("h2d staged "), 1, "5 MiB");
    assert_eq!(count("d2h pageable "), 1, "waited, through the ring");
    assert_eq!(count("d2h staged "), 1, "5 MiB to pageable memory");
    assert_eq!(count("d2h queued "), 1, "to page-locked memory");
    assert_eq!(count("d2d queued "), 1);
}

// ---------------------------------------------------------------------------------
// Read-ahead of a region's results (nvptx/src/device/copy/read_ahead.rs): a run reads ahead,
// in its own wait, what the device-to-host copies after its kernel's last run read.

/// Copies and memsets queued so far on device 0.
fn copies() -> i64 {
    support::stub_stats(0).copies
}

/// Eight 64-bit words `base * 1 ..= base * 8` as bytes.
fn words(base: u64) -> Vec<u8> {
    (1..=8u64).flat_map(|w| (base * w).to_le_bytes()).collect()
}

/// Round `round` of a region loop on the 64 bytes at `p`: the words of `round` up, the
/// kernel that doubles them, its result checked by a copy back.
fn doubled_round(k: &Kernels, p: usize, round: u64) {
    assert!(h2d(p, &words(round)));
    run(k.double, p);
    assert_eq!(
        back(p, 64),
        words(2 * round),
        "round {round}: the kernel's result"
    );
}

/// A device-to-host copy of `n` bytes at `p`, and whether it queued a copy on the
/// device (false: served from what the run read ahead).
fn back_counted(p: usize, n: usize) -> (Vec<u8>, bool) {
    let c0 = copies();
    let v = back(p, n);
    (v, copies() != c0)
}

/// A region loop as libgomp makes it: upload, run, download of two results inside the
/// region's block. The first region learns what is downloaded; from the second on the
/// run reads it ahead and the downloads are served from it, with the kernel's results.
#[test]
fn read_ahead_serves_region_results() {
    const T: &str = "read_ahead_serves_region_results";
    if support::is_child(T) {
        let k = setup();
        let p = alloc(128);
        for round in 1..=4u64 {
            assert!(h2d(p, &words(round)));
            let c0 = copies();
            run(k.double, p);
            let ran = copies() - c0;
            let (got, copied) = back_counted(p + 8, 16);
            assert_eq!(got, words(2 * round)[8..24].to_vec(), "round {round}");
            let (got2, copied2) = back_counted(p + 56, 8);
            assert_eq!(got2, words(2 * round)[56..64].to_vec(), "round {round}");
            if round == 1 {
                assert_eq!(ran, 0, "nothing read ahead before a copy was seen");
                assert!(copied && copied2, "the first region copies");
            } else {
                assert_eq!(ran, 1, "round {round}: the run read ahead once");
                assert!(
                    !copied && !copied2,
                    "round {round}: served from the read-ahead"
                );
            }
        }
        // Another thread's copy right after this thread's run is its own copy.
        assert!(h2d(p, &words(9)));
        run(k.double, p);
        let got = std::thread::spawn(move || back(p + 8, 16)).join().unwrap();
        assert_eq!(got, words(18)[8..24].to_vec(), "another thread");
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
}

/// A run reads ahead only inside the block that holds its `vars` (libgomp's block for
/// the region, freed by the same thread after the copies back): copies after the run
/// from another block, which another thread could free meanwhile, are never read
/// ahead, however regularly they follow the kernel.
#[test]
fn read_ahead_only_inside_the_region_block() {
    const T: &str = "read_ahead_only_inside_the_region_block";
    if support::is_child(T) {
        let k = setup();
        let p = alloc(128);
        let q = alloc(128);
        assert!(h2d(q, &words(5)));
        for round in 1..=4u64 {
            assert!(h2d(p, &words(round)));
            let c0 = copies();
            run(k.double, p);
            assert_eq!(copies() - c0, 0, "round {round}: nothing read ahead");
            let (got, copied) = back_counted(q + 8, 16);
            assert_eq!(got, words(5)[8..24].to_vec(), "round {round}");
            assert!(copied, "round {round}: a copy of its own");
        }
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
}

/// What a run read ahead serves only copies that follow it with no other call between:
/// after a host-to-device copy, a memset, a free or a device-to-device copy into the
/// bytes, the copy sees them.
#[test]
fn read_ahead_not_across_other_calls() {
    const T: &str = "read_ahead_not_across_other_calls";
    if support::is_child(T) {
        let k = setup();
        let p = alloc(128);
        let q = alloc(64);
        // Learn the plan: a download of 16 bytes at p + 8.
        assert!(h2d(p, &words(1)));
        run(k.double, p);
        assert_eq!(back(p + 8, 16), words(2)[8..24].to_vec());
        // A host-to-device copy between.
        assert!(h2d(p, &words(3)));
        run(k.double, p);
        let fresh = pattern(7, 16);
        assert!(h2d(p + 8, &fresh));
        let (got, copied) = back_counted(p + 8, 16);
        assert_eq!(got, fresh, "the later upload");
        assert!(copied);
        // A memset between.
        run(k.double, p);
        // SAFETY: a live block of 128 bytes.
        assert!(unsafe { GOMP_OFFLOAD_memset(0, (p + 8) as *mut c_void, 0x5a, 16) });
        assert_eq!(back(p + 8, 16), vec![0x5a; 16], "the memset");
        // A device-to-device copy between.
        assert!(h2d(q, &pattern(8, 64)));
        run(k.double, p);
        // SAFETY: live blocks.
        assert!(unsafe { GOMP_OFFLOAD_dev2dev(0, (p + 8) as *mut c_void, q as *const c_void, 16) });
        assert_eq!(back(p + 8, 16), pattern(8, 16), "the device-to-device copy");
        // The block freed and another allocated between: nothing served from before.
        assert!(h2d(p, &words(5)));
        run(k.double, p);
        // SAFETY: a block of the plugin, not used afterwards.
        assert!(unsafe { GOMP_OFFLOAD_free(0, p as *mut c_void) });
        let r = alloc(128);
        let data = pattern(9, 128);
        assert!(h2d(r, &data));
        assert_eq!(back(r + 8, 16), data[8..24].to_vec(), "a new block");
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
}

/// A kernel whose runs stop being followed by copies stops reading ahead: a plan no
/// copy used twice in a row is dropped. With `readahead=0` nothing is read ahead.
#[test]
fn read_ahead_unused_is_dropped() {
    const T: &str = "read_ahead_unused_is_dropped";
    if support::is_child(T) {
        let off = std::env::var("GOMP_NVPTX_TUNE").is_ok_and(|t| t.contains("readahead=0"));
        let k = setup();
        let p = alloc(128);
        let ran = |round: u64| {
            assert!(h2d(p, &words(round)));
            let c0 = copies();
            run(k.double, p);
            copies() - c0
        };
        assert_eq!(ran(1), 0);
        let (got, copied) = back_counted(p, 8);
        assert_eq!(got, words(2)[..8].to_vec());
        assert!(copied);
        // Two runs read ahead with no copy after them, then none.
        let want = if off { [0, 0, 0, 0] } else { [1, 1, 0, 0] };
        let got: Vec<i64> = (2..=5).map(ran).collect();
        assert_eq!(got, want, "read-aheads per run");
        // Relearned from the next copy.
        let (got, copied) = back_counted(p, 8);
        assert_eq!(got, words(10)[..8].to_vec());
        assert!(copied);
        assert_eq!(ran(6), if off { 0 } else { 1 });
        let (got, copied) = back_counted(p, 8);
        assert_eq!(got, words(12)[..8].to_vec());
        assert_eq!(copied, off);
        assert!(fini());
        return;
    }
    in_every_mode(T, &[]);
    if !support::have_tools(T, &["cc"]) {
        return;
    }
    let dir = support::Scratch::new("copy-order");
    let lib = support::stub_libcuda_2dev(&dir, &[]);
    support::run_child(
        T,
        &[
            ("GOMP_PLUGIN_RS_LIBCUDA", lib.as_os_str()),
            (
                "GOMP_NVPTX_TUNE",
                OsStr::new("teams=1,warps=1,readahead=0,syncwait=run"),
            ),
        ],
    )
    .assert_passed()
    .assert_stderr_lacks("stub libcuda:");
}
