//! The nvptx plugin with two devices and no GPU: the stand-in libcuda of
//! tests/fallback/stub_libcuda_2dev.c (two H100-like devices whose memory is host
//! memory, per-device primary contexts and per-thread current contexts, streams and
//! events that are always complete, no kernels), built here with `cc` and loaded through
//! `GOMP_PLUGIN_RS_LIBCUDA`. The tests call the exported entry points as libgomp would
//! (device registry, memory, copies, page-locked host memory, finalization) and ask the
//! stand-in what the driver saw: on which device each block lies, how many context
//! references, streams, events and page-locked blocks each device holds, and whether a
//! call was refused (no or wrong current context, a stream of another device, an
//! address outside every allocation), which the stand-in also reports on stderr as
//! `stub libcuda: ...`. Each scenario runs in a child process (see conformance/src/support.rs).

use gomp_plugin_conformance::support;

use gomp_plugin_nvptx as _; // links the rlib holding the exported shells
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, OsStr};
use std::sync::{Arc, Barrier};
use support::api::*;
use support::stub_stats as stats;

extern "C" {
    fn GOMP_OFFLOAD_openacc_get_property(ord: c_int, prop: c_uint) -> PropertyValue;
    fn GOMP_OFFLOAD_supported_teams_dim(ord: c_int, dim: c_int) -> c_int;
    fn GOMP_OFFLOAD_supported_threads_dim(ord: c_int, dim: c_int) -> c_int;
    fn GOMP_OFFLOAD_memspace_validate(memspace: u64, access: c_int) -> bool;
    fn gomp_nvptx_host_lock(p: *mut c_void, size: usize, device: c_int) -> c_int;
    fn gomp_nvptx_host_unlock(p: *mut c_void, device: c_int) -> c_int;
    fn free(p: *mut c_void);
}

/// libgomp's `union goacc_property_value`.
#[repr(C)]
#[derive(Clone, Copy)]
union PropertyValue {
    size: usize,
    text: *const c_char,
}

/// `GOACC_PROPERTY_MEMORY`, `_FREE_MEMORY`, `_NAME`.
const PROP_MEMORY: c_uint = 1;
const PROP_FREE_MEMORY: c_uint = 2;
const PROP_NAME: c_uint = 0x10001;

/// The stand-in's device memory (cuDeviceTotalMem).
const TOTAL_MEM: usize = 81559 << 20;
/// The smallest pageable copy the plugin stages (nvptx/src/device/copy/staged.rs).
const STAGED: usize = 4 << 20;

/// The stand-in's UUID of physical device `i`, as the plugin formats it.
fn uuid(i: u8) -> String {
    format!("GPU-57a0d5c1-0000-4000-8000-0000000000{i:02x}")
}

/// The device whose memory holds `p` according to the stand-in (-1: page-locked host
/// memory, -2: unknown).
fn owner(p: usize) -> c_int {
    let lib = std::env::var_os("GOMP_PLUGIN_RS_LIBCUDA").expect("set by the parent");
    let f = support::symbol_of_loaded(&lib, "stub_libcuda_owner");
    // SAFETY: the stand-in's `int stub_libcuda_owner (unsigned long long)`.
    let f: unsafe extern "C" fn(u64) -> c_int = unsafe { std::mem::transmute(f) };
    // SAFETY: a plain lookup.
    unsafe { f(p as u64) }
}

// Safe wrappers of the entry points (start, init, fini: `support::api`); addresses as
// `usize` so threads can share them.
// SAFETY (all): host buffers are slices of the stated length; device addresses are
// the plugin's own or are checked by it.

fn alloc(d: c_int, n: usize) -> usize {
    // SAFETY: see above.
    let p = unsafe { GOMP_OFFLOAD_alloc(d, n) } as usize;
    assert_ne!(p, 0, "alloc({d}, {n})");
    p
}

fn dfree(d: c_int, p: usize) -> bool {
    // SAFETY: see above.
    unsafe { GOMP_OFFLOAD_free(d, p as *mut c_void) }
}

fn h2d(d: c_int, p: usize, src: &[u8]) -> bool {
    // SAFETY: see above.
    unsafe { GOMP_OFFLOAD_host2dev(d, p as *mut c_void, src.as_ptr().cast(), src.len()) }
}

fn d2h(d: c_int, dst: &mut [u8], p: usize) -> bool {
    // SAFETY: see above.
    unsafe { GOMP_OFFLOAD_dev2host(d, dst.as_mut_ptr().cast(), p as *const c_void, dst.len()) }
}

fn d2d(d: c_int, dst: usize, src: usize, n: usize) -> bool {
    // SAFETY: see above.
    unsafe { GOMP_OFFLOAD_dev2dev(d, dst as *mut c_void, src as *const c_void, n) }
}

fn accessible(d: c_int, p: usize, n: usize) -> c_int {
    // SAFETY: see above.
    unsafe { GOMP_OFFLOAD_is_accessible_ptr(d, p as *const c_void, n) }
}

fn uid(d: c_int) -> Option<String> {
    // SAFETY: see above; the string is malloc'd for the caller.
    unsafe {
        let p = GOMP_OFFLOAD_get_uid(d);
        if p.is_null() {
            return None;
        }
        let s = CStr::from_ptr(p).to_string_lossy().into_owned();
        free(p.cast_mut().cast());
        Some(s)
    }
}

fn prop_size(d: c_int, prop: c_uint) -> usize {
    // SAFETY: see above; size properties fill `size`.
    unsafe { GOMP_OFFLOAD_openacc_get_property(d, prop).size }
}

fn prop_name(d: c_int) -> String {
    // SAFETY: see above; the name property fills `text` with a static string or NULL.
    unsafe {
        let p = GOMP_OFFLOAD_openacc_get_property(d, PROP_NAME).text;
        assert!(!p.is_null(), "name of device {d}");
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

fn pinned_alloc(n: usize) -> usize {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: see above.
    assert!(unsafe { GOMP_OFFLOAD_page_locked_host_alloc(&mut p, n) });
    assert!(!p.is_null(), "page_locked_host_alloc({n})");
    p as usize
}

fn pinned_free(p: usize) -> bool {
    // SAFETY: see above.
    unsafe { GOMP_OFFLOAD_page_locked_host_free(p as *mut c_void) }
}

/// # Safety
/// `p` must be live memory of `n` bytes that nothing else uses meanwhile.
unsafe fn bytes<'a>(p: usize, n: usize) -> &'a mut [u8] {
    // SAFETY: caller's guarantee.
    unsafe { std::slice::from_raw_parts_mut(p as *mut u8, n) }
}

/// `n` bytes that differ with `seed` and along the buffer.
fn pattern(seed: usize, n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| {
            (i.wrapping_mul(131) ^ (i >> 9) ^ seed.wrapping_mul(0x9e37)) as u8 ^ (seed >> 8) as u8
        })
        .collect()
}

/// host2dev of a pattern into `p`, dev2host back: the same bytes.
fn round_trip(d: c_int, p: usize, n: usize, seed: usize) {
    let src = pattern(seed, n);
    assert!(h2d(d, p, &src), "host2dev({d}, {n})");
    let mut back = vec![!src[0]; n];
    assert!(d2h(d, &mut back, p), "dev2host({d}, {n})");
    assert!(back == src, "device {d}: {n} bytes did not come back");
}

/// No call refused by the stand-in and no device touching the other's memory.
fn assert_clean() {
    for d in 0..2 {
        let s = stats(d);
        assert_eq!(s.misuse, 0, "calls the stand-in refused: {s:?}");
        assert_eq!(s.foreign, 0, "device {d} touched the other's memory: {s:?}");
    }
}

/// After `fini_device(d)`: the context is gone and nothing the plugin made in it is
/// left (the driver's reset frees the blocks libgomp left allocated).
fn assert_closed(d: c_int) {
    let s = stats(d);
    assert_eq!(s.ctx_refs, 0, "device {d}: context references left: {s:?}");
    assert_eq!(s.live_allocs, 0, "{s:?}");
    assert_eq!(s.live_streams, 0, "device {d}: streams left: {s:?}");
    assert_eq!(s.live_events, 0, "device {d}: events left: {s:?}");
    assert_eq!(s.live_pools, 0, "device {d}: memory pools left: {s:?}");
    assert_eq!(
        s.live_host_allocs, 0,
        "device {d}: page-locked memory left: {s:?}"
    );
}

/// Builds the stand-in (with `flags`) into `dir`.
fn build_stub(dir: &support::Scratch, flags: &[&str]) -> std::path::PathBuf {
    support::stub_libcuda_2dev(dir, flags)
}

/// Runs test `test` in a child against the stand-in built with `flags`, with
/// `GOMP_DEBUG=1` and `env`; checks that it passed and crashed nowhere.
fn with_stub(test: &str, flags: &[&str], env: &[(&str, &str)]) -> Option<support::Child> {
    if !support::have_tools(test, &["cc"]) {
        return None;
    }
    let dir = support::Scratch::new("stub-libcuda-2dev");
    let lib = build_stub(&dir, flags);
    let mut all: Vec<(&str, &OsStr)> = vec![
        ("GOMP_PLUGIN_RS_LIBCUDA", lib.as_os_str()),
        ("GOMP_DEBUG", OsStr::new("1")),
    ];
    all.extend(env.iter().map(|(k, v)| (*k, OsStr::new(v))));
    let c = support::run_child(test, &all);
    c.assert_passed()
        .assert_stderr_lacks("panicked")
        .assert_stderr_lacks("internal error");
    Some(c)
}

const DEBUG: &str = "nvptx (gomp-plugin-rs): ";

/// No `libgomp:` error but the one of the version handshake (no libgomp loaded), and
/// no call the stand-in refused or lacks.
fn assert_no_errors(c: &support::Child) {
    c.assert_line_starts("libgomp: nvptx plugin (gomp-plugin-rs ")
        .assert_stderr_lacks("stub libcuda:");
    assert_eq!(c.count_lines("libgomp:"), 1, "{}", c.stderr);
}

fn device_line(d: usize, phys: usize, pools: bool) -> String {
    format!(
        "{DEBUG}device {d}: NVIDIA H100 80GB HBM3 (libcuda stand-in, device {phys}) \
         (sm_90, 132 SMs, 1980000 kHz), primary context, {}",
        if pools {
            "stream-ordered memory pool"
        } else {
            "cuMemAlloc (no memory pools)"
        }
    )
}

// ---------------------------------------------------------------------------------

/// Two devices are counted, named and told apart; each opens with a context of its
/// own, once; both close with nothing left.
#[test]
fn two_devices_open_and_close() {
    const T: &str = "two_devices_open_and_close";
    if support::is_child(T) {
        start(2);
        // SAFETY: plain call.
        assert_eq!(unsafe { GOMP_OFFLOAD_get_num_devices(0) }, 2, "asked again");
        // requires unified_shared_memory: the devices lack pageable memory access.
        // SAFETY: plain call.
        assert_eq!(unsafe { GOMP_OFFLOAD_get_num_devices(0x20) }, -1);
        assert_eq!(uid(0), Some(uuid(0)));
        assert_eq!(uid(1), Some(uuid(1)));
        assert_eq!(uid(2), None);
        // libgomp 17's optional queries, before any device is open: the stand-in's
        // 132 SMs x 65536 registers / 32, 1024 threads = 32 warps a block,
        // one-dimensional launches; no device 2.
        // SAFETY: plain calls.
        unsafe {
            for d in 0..2 {
                assert_eq!(GOMP_OFFLOAD_supported_teams_dim(d, 0), 132 * 2048);
                assert_eq!(GOMP_OFFLOAD_supported_threads_dim(d, 0), 32);
                assert_eq!(GOMP_OFFLOAD_supported_teams_dim(d, 1), 1);
                assert_eq!(GOMP_OFFLOAD_supported_threads_dim(d, 2), 1);
            }
            assert_eq!(GOMP_OFFLOAD_supported_teams_dim(2, 0), 1, "no device 2");
            // omp_default_mem_space .. omp_low_lat_mem_space (0-4); low-latency memory
            // (a team's shared memory) not with access all (7); no GNU managed space.
            for (space, access, want) in [
                (0, 7, true),
                (3, 0, true),
                (4, 8, true),
                (4, 7, false),
                (200, 0, false),
            ] {
                assert_eq!(
                    GOMP_OFFLOAD_memspace_validate(space, access),
                    want,
                    "memspace {space}, access {access}"
                );
            }
        }
        assert_eq!(stats(0).ctx_refs, 0, "nothing retained before init_device");
        assert!(init(0) && init(1), "init_device 0 and 1");
        assert_eq!((stats(0).ctx_refs, stats(1).ctx_refs), (1, 1));
        assert!(!init(0), "device 0 opened twice");
        assert!(!init(2), "device 2 does not exist");
        assert!(!init(-1));
        assert_eq!((stats(0).ctx_refs, stats(1).ctx_refs), (1, 1));
        for d in 0..2 {
            assert!(prop_name(d).ends_with(&format!("device {d})")));
            assert_eq!(prop_size(d, PROP_MEMORY), TOTAL_MEM);
        }
        assert!(fini(1), "fini_device 1");
        assert_closed(1);
        assert_eq!(stats(0).ctx_refs, 1, "device 0 stays open");
        assert!(fini(0), "fini_device 0");
        assert_closed(0);
        assert_eq!((stats(0).ctx_resets, stats(1).ctx_resets), (1, 1));
        assert_clean();
        return;
    }
    let Some(c) = with_stub(T, &[], &[]) else {
        return;
    };
    c.assert_line(&format!("{DEBUG}CUDA driver 12.8, 2 device(s)"))
        .assert_line(&device_line(0, 0, true))
        .assert_line(&device_line(1, 1, true))
        .assert_line("libgomp: nvptx device 0 is already open")
        .assert_line("libgomp: no nvptx device 2")
        .assert_stderr_lacks("stub libcuda:");
}

/// Memory of each device: blocks of every size class lie on their own device, data
/// comes back from host2dev/dev2host (staged above 4 MiB), dev2dev and memset work
/// within the device, the free memory of that device alone goes down, copies past a
/// block and double frees are refused.
fn memory_on_each_device() {
    start(2);
    assert!(init(0) && init(1));
    let sizes = [
        1,
        255,
        4096,
        65536,
        65537,
        (1 << 20) + 3,
        STAGED + 4096 * 3 + 5,
    ];
    for d in 0..2 {
        let other = 1 - d;
        let other_free = prop_size(other, PROP_FREE_MEMORY);
        for (k, &n) in sizes.iter().enumerate() {
            let seed = (d as usize) << 8 | k;
            let p = alloc(d, n);
            assert_eq!(owner(p), d, "block of {n} bytes on device {d}");
            round_trip(d, p, n, seed);
            let q = alloc(d, n);
            assert_eq!(owner(q), d);
            assert_ne!(p, q);
            assert!(d2d(d, q, p, n), "dev2dev({d}, {n})");
            let mut back = vec![0u8; n];
            assert!(d2h(d, &mut back, q));
            assert!(back == pattern(seed, n), "dev2dev of {n} bytes on {d}");
            // SAFETY: see the wrappers.
            assert!(unsafe { GOMP_OFFLOAD_memset(d, q as *mut c_void, 0x15a, n) });
            assert!(d2h(d, &mut back, q));
            assert!(
                back.iter().all(|&b| b == 0x5a),
                "memset of {n} bytes on {d}"
            );
            if n > 1 {
                assert!(d2d(d, q + 1, p, n - 1), "dev2dev inside blocks");
                assert!(d2h(d, &mut back, q));
                assert_eq!(back[0], 0x5a);
                assert!(back[1..] == pattern(seed, n)[..n - 1]);
            }
            assert!(!h2d(d, p, &vec![0; n + 1]), "host2dev past the block's end");
            assert_eq!(accessible(d, p, n), 1, "device memory is accessible");
            assert_eq!(accessible(d, back.as_ptr() as usize, n), 0, "pageable");
            assert!(dfree(d, p) && dfree(d, q));
            assert!(!dfree(d, p), "double free");
        }
        // A large block shows in the free memory of its device and not the other's.
        let before = prop_size(d, PROP_FREE_MEMORY);
        let big = alloc(d, 32 << 20);
        let after = prop_size(d, PROP_FREE_MEMORY);
        assert!(
            before - after >= 32 << 20,
            "device {d}: free memory {before} -> {after}"
        );
        assert_eq!(prop_size(other, PROP_FREE_MEMORY), other_free);
        round_trip(d, big, 32 << 20, 99);
        assert!(dfree(d, big));
        // The freed block is cached by the plugin, yet counts as free memory again: the
        // property adds what the plugin holds unused to the driver's free memory.
        let freed = prop_size(d, PROP_FREE_MEMORY);
        assert!(
            freed >= before,
            "device {d}: a freed block counts as free: {before} -> {after} -> {freed}"
        );
        let again = alloc(d, 32 << 20);
        round_trip(d, again, 32 << 20, 98);
        assert!(dfree(d, again));
    }
    let s = [stats(0), stats(1)];
    assert!(s[0].copies > 0 && s[1].copies > 0, "{s:?}");
    assert_clean();
    assert!(fini(0) && fini(1));
    assert_closed(0);
    assert_closed(1);
}

#[test]
fn memory_on_each_device_with_pools() {
    const T: &str = "memory_on_each_device_with_pools";
    if support::is_child(T) {
        return memory_on_each_device();
    }
    let Some(c) = with_stub(T, &[], &[]) else {
        return;
    };
    c.assert_line(&device_line(1, 1, true))
        .assert_stderr_lacks("stub libcuda:");
    // One "invalid size" per device and size, one double free each.
    assert_eq!(c.count_lines("libgomp: invalid size"), 14, "{}", c.stderr);
    assert_eq!(c.count_lines("libgomp: invalid device address"), 14);
}

#[test]
fn memory_on_each_device_without_pools() {
    const T: &str = "memory_on_each_device_without_pools";
    if support::is_child(T) {
        return memory_on_each_device();
    }
    let Some(c) = with_stub(T, &["-DNO_POOLS"], &[]) else {
        return;
    };
    c.assert_line(&device_line(0, 0, false))
        .assert_line(&device_line(1, 1, false))
        .assert_stderr_lacks("stub libcuda:");
}

/// A block belongs to the device that allocated it: freeing it through the other
/// device is refused ("invalid device address") and leaves it usable where it lives.
#[test]
fn free_through_the_other_device_is_refused() {
    const T: &str = "free_through_the_other_device_is_refused";
    if support::is_child(T) {
        start(2);
        assert!(init(0) && init(1));
        for n in [1000, 1 << 20] {
            let p0 = alloc(0, n);
            let p1 = alloc(1, n);
            assert!(!dfree(1, p0), "device 0's block freed through device 1");
            assert!(!dfree(0, p1), "device 1's block freed through device 0");
            round_trip(0, p0, n, 1);
            round_trip(1, p1, n, 2);
            assert_eq!((owner(p0), owner(p1)), (0, 1));
            assert!(dfree(0, p0) && dfree(1, p1));
        }
        assert_clean();
        assert!(fini(0) && fini(1));
        return;
    }
    let Some(c) = with_stub(T, &[], &[]) else {
        return;
    };
    assert_eq!(c.count_lines("libgomp: invalid device address"), 4);
    c.assert_stderr_lacks("stub libcuda:");
}

/// Eight host threads at once, thread t on device t % 2 (the two devices opened by two
/// threads at the same moment): alloc, host2dev, dev2dev, dev2host (some large enough
/// to be staged), free, results checked; no call in a wrong context, no device
/// touching the other's memory; both close with nothing left.
fn threads_on_both_devices() {
    start(2);
    const THREADS: usize = 8;
    const ROUNDS: usize = 30;
    let sizes = [24, 300, 4096, 70000, 1 << 20, STAGED + 8192];
    let gate = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let gate = gate.clone();
            std::thread::spawn(move || {
                let d = (t % 2) as c_int;
                if t < 2 {
                    assert!(init(d), "init_device {d} from thread {t}");
                }
                gate.wait();
                for i in 0..ROUNDS {
                    let n = sizes[(i + t) % sizes.len()];
                    let seed = t << 12 | i;
                    let p = alloc(d, n);
                    let q = alloc(d, n);
                    assert_eq!((owner(p), owner(q)), (d, d), "thread {t} round {i}");
                    let src = pattern(seed, n);
                    assert!(h2d(d, p, &src));
                    assert!(d2d(d, q, p, n));
                    let mut back = vec![0u8; n];
                    assert!(d2h(d, &mut back, q));
                    assert!(back == src, "thread {t} round {i}: {n} bytes on {d}");
                    assert!(dfree(d, p) && dfree(d, q));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let s = [stats(0), stats(1)];
    let per_device = (THREADS / 2 * ROUNDS * 3) as i64;
    assert!(
        s[0].copies >= per_device && s[1].copies >= per_device,
        "{s:?}"
    );
    assert_clean();
    assert!(fini(0) && fini(1));
    assert_closed(0);
    assert_closed(1);
}

#[test]
fn threads_on_both_devices_with_pools() {
    const T: &str = "threads_on_both_devices_with_pools";
    if support::is_child(T) {
        return threads_on_both_devices();
    }
    if let Some(c) = with_stub(T, &[], &[]) {
        assert_no_errors(&c);
    }
}

#[test]
fn threads_on_both_devices_without_pools() {
    const T: &str = "threads_on_both_devices_without_pools";
    if support::is_child(T) {
        return threads_on_both_devices();
    }
    if let Some(c) = with_stub(T, &["-DNO_POOLS"], &[]) {
        assert_no_errors(&c);
    }
}

/// One thread going back and forth between the devices: each keeps its own data,
/// every copy runs in the right device's context.
#[test]
fn one_thread_switches_devices() {
    const T: &str = "one_thread_switches_devices";
    if support::is_child(T) {
        start(2);
        assert!(init(0) && init(1));
        const N: usize = 8192;
        let keep = [alloc(0, N), alloc(1, N)];
        let mut last = [usize::MAX; 2];
        for i in 0..200 {
            let d = i % 2;
            let dev = d as c_int;
            // The other device still holds what was written there last.
            if last[1 - d] != usize::MAX {
                let mut back = vec![0u8; N];
                assert!(d2h(1 - dev, &mut back, keep[1 - d]));
                assert!(back == pattern(last[1 - d], N), "round {i}");
            }
            assert!(h2d(dev, keep[d], &pattern(i, N)));
            last[d] = i;
            let n = [16, 5000, 200_000][i % 3];
            let t = alloc(dev, n);
            assert_eq!(owner(t), dev);
            round_trip(dev, t, n, i);
            assert!(dfree(dev, t));
        }
        assert_clean();
        assert!(dfree(0, keep[0]) && dfree(1, keep[1]));
        assert!(fini(1) && fini(0));
        return;
    }
    if let Some(c) = with_stub(T, &[], &[]) {
        assert_no_errors(&c);
    }
}

/// Page-locked host memory (from the pinned pool of the first open device) serves
/// both devices: copies to and from it take no staging on either device, both see it
/// as accessible; a user range locked through device 1 serves device 0 as well.
#[test]
fn page_locked_memory_serves_both_devices() {
    const T: &str = "page_locked_memory_serves_both_devices";
    if support::is_child(T) {
        start(2);
        assert!(init(0) && init(1));
        const BIG: usize = 2 * STAGED;
        let small = pinned_alloc(1 << 20);
        let src = pinned_alloc(BIG);
        let dst = pinned_alloc(BIG);
        assert_eq!((owner(small), owner(src), owner(dst)), (-1, -1, -1));
        assert!(stats(0).live_host_allocs >= 2, "device 0's pool");
        assert_eq!(stats(1).live_host_allocs, 0, "nothing from device 1");
        // SAFETY: page-locked blocks of these sizes, used only here.
        let (src_b, dst_b) = unsafe { (bytes(src, BIG), bytes(dst, BIG)) };
        for d in 0..2 {
            src_b.copy_from_slice(&pattern(d as usize + 7, BIG));
            let p = alloc(d, BIG);
            assert!(h2d(d, p, src_b));
            dst_b.fill(0);
            assert!(d2h(d, dst_b, p));
            assert!(dst_b == src_b, "device {d}: page-locked round trip");
            assert_eq!(accessible(d, small, 1 << 20), 1);
            assert_eq!(accessible(d, src, BIG), 1);
            assert!(dfree(d, p));
        }
        assert_eq!(stats(1).live_host_allocs, 0, "page-locked copies staged");
        // The control: a pageable copy that large is staged (buffers in device 1).
        let p = alloc(1, BIG);
        round_trip(1, p, BIG, 3);
        assert!(stats(1).live_host_allocs > 0, "pageable copies staged");
        assert!(pinned_free(small) && pinned_free(src) && pinned_free(dst));
        let pageable = [0u8; 64];
        assert!(
            !pinned_free(pageable.as_ptr() as usize),
            "not page-locked memory"
        );
        // gomp_nvptx_host_lock through device 1, then copies to both devices.
        let mut user = pattern(11, 3 << 20);
        let u = user.as_mut_ptr().cast::<c_void>();
        // SAFETY: a live buffer of that length, unlocked below.
        assert_eq!(unsafe { gomp_nvptx_host_lock(u, user.len(), 1) }, 0);
        assert_eq!(stats(1).live_host_regs, 1);
        assert_eq!(stats(1).ctx_refs, 2, "the lock holds device 1's context");
        for d in 0..2 {
            assert_eq!(accessible(d, u as usize, user.len()), 1);
            let p = alloc(d, user.len());
            assert!(h2d(d, p, &user));
            let mut back = vec![0u8; user.len()];
            assert!(d2h(d, &mut back, p));
            assert!(back == user);
            assert!(dfree(d, p));
        }
        // SAFETY: locked above.
        assert_eq!(unsafe { gomp_nvptx_host_unlock(u, 1) }, 0);
        assert_eq!((stats(1).live_host_regs, stats(1).ctx_refs), (0, 1));
        assert_clean();
        assert!(fini(0) && fini(1));
        assert_closed(0);
        assert_closed(1);
        return;
    }
    // The pools' own allocations are counted: no kept block beside them.
    if let Some(c) = with_stub(T, &[], &[("GOMP_NVPTX_TUNE", "pinkeep=0")]) {
        c.assert_line_starts("libgomp: page_locked_host_free: ")
            .assert_stderr_lacks("stub libcuda:");
    }
}

/// OpenACC async queues on both devices, used alternately from one thread: copies
/// queued on each device's queues come back, callbacks run once per queue in order,
/// queues of one device serialize; synchronous copies (now on CUDA's legacy stream of
/// the current context) still reach the right device.
#[test]
fn openacc_queues_on_both_devices() {
    const T: &str = "openacc_queues_on_both_devices";
    if support::is_child(T) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        unsafe extern "C" fn bump(data: *mut c_void) {
            // SAFETY: `data` is one of the counters below, alive until the end.
            unsafe { &*data.cast::<AtomicUsize>() }.fetch_add(1, Ordering::SeqCst);
        }
        start(2);
        assert!(init(0) && init(1));
        const N: usize = 40_000;
        let count = [AtomicUsize::new(0), AtomicUsize::new(0)];
        // SAFETY: (this block) the plugin's entry points with queues it made, blocks
        // it allocated and host buffers of `N` bytes alive until synchronized.
        unsafe {
            let q = [
                GOMP_OFFLOAD_openacc_async_construct(0),
                GOMP_OFFLOAD_openacc_async_construct(1),
            ];
            let q1b = GOMP_OFFLOAD_openacc_async_construct(1);
            assert!(!q[0].is_null() && !q[1].is_null() && !q1b.is_null());
            let a = [alloc(0, N), alloc(1, N)];
            let b = [alloc(0, N), alloc(1, N)];
            for r in 0..20usize {
                let src = [pattern(2 * r, N), pattern(2 * r + 1, N)];
                let mut back = [vec![0u8; N], vec![0u8; N]];
                for d in 0..2 {
                    let dev = d as c_int;
                    let (ad, bd) = (a[d] as *mut c_void, b[d] as *mut c_void);
                    assert!(GOMP_OFFLOAD_openacc_async_host2dev(
                        dev,
                        ad,
                        src[d].as_ptr().cast(),
                        N,
                        q[d]
                    ));
                    assert!(GOMP_OFFLOAD_openacc_async_dev2dev(dev, bd, ad, N, q[d]));
                    assert!(GOMP_OFFLOAD_openacc_async_dev2host(
                        dev,
                        back[d].as_mut_ptr().cast(),
                        bd,
                        N,
                        q[d]
                    ));
                    let c = (&count[d] as *const AtomicUsize).cast_mut().cast();
                    GOMP_OFFLOAD_openacc_async_queue_callback(q[d], bump, c);
                }
                assert!(GOMP_OFFLOAD_openacc_async_serialize(q[1], q1b));
                for d in 0..2 {
                    assert!(GOMP_OFFLOAD_openacc_async_synchronize(q[d]));
                    assert!(back[d] == src[d], "round {r}, device {d}");
                    assert_eq!(count[d].load(Ordering::SeqCst), r + 1);
                    assert_eq!(GOMP_OFFLOAD_openacc_async_test(q[d]), 1);
                }
            }
            // Synchronous copies after OpenACC use.
            round_trip(0, a[0], N, 7);
            round_trip(1, a[1], N, 8);
            assert!(GOMP_OFFLOAD_openacc_async_destruct(q1b));
            assert!(GOMP_OFFLOAD_openacc_async_destruct(q[0]));
            assert!(GOMP_OFFLOAD_openacc_async_destruct(q[1]));
            for d in 0..2 {
                assert!(dfree(d as c_int, a[d]) && dfree(d as c_int, b[d]));
            }
        }
        assert_clean();
        assert!(fini(0) && fini(1));
        assert_closed(0);
        assert_closed(1);
        return;
    }
    if let Some(c) = with_stub(T, &[], &[]) {
        assert_no_errors(&c);
    }
}

/// A range locked with `gomp_nvptx_host_lock` before its device is opened holds the
/// device's primary context, so it survives the device's finalization and serves the
/// device opened again; the last unlock lets the context go.
#[test]
fn host_lock_outlives_its_device() {
    const T: &str = "host_lock_outlives_its_device";
    if support::is_child(T) {
        start(2);
        let mut user = pattern(3, 1 << 20);
        let (u, n) = (user.as_mut_ptr().cast::<c_void>(), user.len());
        // SAFETY: a live buffer of that length, unlocked below.
        assert_eq!(unsafe { gomp_nvptx_host_lock(u, n, 1) }, 0);
        assert_eq!((stats(1).ctx_refs, stats(1).live_host_regs), (1, 1));
        assert_eq!(stats(0).ctx_refs, 0, "device 0 not involved");
        assert!(init(1));
        assert_eq!(stats(1).ctx_refs, 2);
        assert_eq!(accessible(1, u as usize, n), 1);
        let p = alloc(1, n);
        assert!(h2d(1, p, &user));
        assert!(fini(1));
        assert_eq!((stats(1).ctx_refs, stats(1).live_host_regs), (1, 1));
        assert_eq!(stats(1).ctx_resets, 0, "the lock kept the context");
        assert!(init(1));
        assert_eq!(accessible(1, u as usize, n), 1, "still page-locked");
        round_trip(1, alloc(1, n), n, 4);
        // SAFETY: locked above.
        assert_eq!(unsafe { gomp_nvptx_host_unlock(u, 1) }, 0);
        assert_eq!((stats(1).ctx_refs, stats(1).live_host_regs), (1, 0));
        assert_eq!(accessible(1, u as usize, n), 0, "pageable again");
        assert!(fini(1));
        assert_closed(1);
        assert_clean();
        return;
    }
    if let Some(c) = with_stub(T, &[], &[]) {
        assert_no_errors(&c);
    }
}

/// The pinned pool is the first open device's; a block goes back to the pool it came
/// from whichever devices are open, and a device's pool goes with the device.
#[test]
fn page_locked_memory_follows_its_pool() {
    const T: &str = "page_locked_memory_follows_its_pool";
    if support::is_child(T) {
        start(2);
        assert!(init(1));
        let a = pinned_alloc(4096);
        assert_eq!(
            (stats(0).live_host_allocs, stats(1).live_host_allocs),
            (0, 1)
        );
        assert!(init(0));
        let b = pinned_alloc(4096);
        assert_eq!(
            stats(0).live_host_allocs,
            1,
            "now device 0 is the first open"
        );
        assert!(pinned_free(a), "back to device 1's pool");
        let c = pinned_alloc(4096);
        assert_eq!(stats(0).live_host_allocs, 1, "device 0's pool serves it");
        assert_ne!(b, c);
        assert!(fini(1));
        assert_eq!(stats(1).live_host_allocs, 0, "device 1's pool went with it");
        // Device 0's blocks still serve device 0.
        // SAFETY: a live page-locked block of 4096 bytes.
        let bb = unsafe { bytes(b, 4096) };
        bb.copy_from_slice(&pattern(5, 4096));
        let p = alloc(0, 4096);
        assert!(h2d(0, p, bb));
        let mut back = vec![0u8; 4096];
        assert!(d2h(0, &mut back, p));
        assert!(back == bb);
        assert!(pinned_free(b) && pinned_free(c));
        assert_clean();
        assert!(fini(0));
        assert_closed(0);
        return;
    }
    // The pools' own allocations are counted: no kept block beside them.
    if let Some(c) = with_stub(T, &[], &[("GOMP_NVPTX_TUNE", "pinkeep=0")]) {
        assert_no_errors(&c);
    }
}

/// What the driver would report free on device `d` plus what its pool keeps unused,
/// from the stand-in's own books.
fn driver_free_and_pool_unused(d: c_int) -> i64 {
    let s = stats(d);
    TOTAL_MEM as i64 - s.live_bytes + s.pool_reserved - s.pool_used
}

/// The stand-in's counters that any giving back of memory moves.
fn give_back_counters(d: c_int) -> (i64, i64, i64, i64) {
    let s = stats(d);
    (s.pool_trims, s.pool_released, s.frees, s.total_allocs)
}

/// A device cache of 8 MiB, and no pool warm-up: its thread's allocation and trim
/// would move the counters the tests read at moments of their own.
const CACHE_8M: &[(&str, &str)] = &[
    ("GOMP_NVPTX_DEVICE_CACHE", "8m"),
    ("GOMP_NVPTX_TUNE", "poolwarm=0"),
];

/// The free-memory property of an open device is the driver's free memory plus what
/// the plugin holds unused (pool reserve, cached large blocks, free small blocks), and
/// asking for it gives nothing back. With `GOMP_NVPTX_DEVICE_CACHE=8m`: a large block
/// within the cache's room is kept, one beyond goes back through the pool at the free,
/// and empty small-block chunks beyond their room go back too. After `alloc(n)` the
/// property drops by at least n, also when the memory was already held.
#[test]
fn free_memory_property_counts_the_caches_and_trims_nothing() {
    const T: &str = "free_memory_property_counts_the_caches_and_trims_nothing";
    const MIB: usize = 1 << 20;
    if support::is_child(T) {
        start(2);
        assert!(init(0));
        let prop = || prop_size(0, PROP_FREE_MEMORY) as i64;
        // Property = driver view + `held` (what the plugin keeps, counted by hand).
        let check = |held: i64, what: &str| -> i64 {
            let before = give_back_counters(0);
            let p = prop();
            assert_eq!(
                p,
                driver_free_and_pool_unused(0) + held,
                "{what}: property against the driver's view plus {held} held"
            );
            assert_eq!(prop(), p, "{what}: asked again");
            assert_eq!(
                give_back_counters(0),
                before,
                "{what}: a query gave back memory"
            );
            p
        };
        let p0 = check(0, "fresh device");
        // A small block: a 64 KiB chunk from the pool, 1 KiB of it handed out.
        let a = alloc(0, 1000);
        let p1 = check((64 << 10) - 1024, "after alloc(1000)");
        assert_eq!(p0 - p1, 1024, "drops by the block's size class");
        // A large block from the pool.
        let b = alloc(0, 3 * MIB);
        let p2 = check((64 << 10) - 1024, "after alloc(3 MiB)");
        assert_eq!(p1 - p2, 3 * MIB as i64);
        // Freed: kept by the large-block cache (room 8 - 4 MiB), counted as free.
        assert!(dfree(0, b));
        let held = (64 << 10) - 1024 + 3 * MIB as i64;
        let p3 = check(held, "after free(3 MiB)");
        assert_eq!(p3, p1);
        // Served again from the cache: no driver call, and still it drops by n.
        let n_before = give_back_counters(0);
        let c = alloc(0, 3 * MIB);
        assert_eq!(give_back_counters(0), n_before, "served by the cache");
        assert_eq!(
            p3 - check((64 << 10) - 1024, "cached block taken"),
            3 * MIB as i64
        );
        assert!(dfree(0, c));
        check(held, "cached block freed again");
        // 6 MiB does not fit the room: back to the pool, and the pool gives it to the
        // device at once (one trim; the block is released).
        let d = alloc(0, 6 * MIB);
        let p4 = check(held, "after alloc(6 MiB)");
        assert_eq!(p3 - p4, 6 * MIB as i64);
        let (t0, r0, _, _) = give_back_counters(0);
        assert!(dfree(0, d));
        let (t1, r1, _, _) = give_back_counters(0);
        assert_eq!((t1 - t0, r1 - r0), (1, 1), "trimmed at the free");
        let s = stats(0);
        assert_eq!(
            s.pool_reserved, s.pool_used,
            "the pool keeps nothing unused"
        );
        assert_eq!(check(held, "after free(6 MiB)"), p3);
        // Nine chunks of 64 KiB blocks (16 per 1 MiB chunk), then all freed: the empty
        // chunks may take max(8 - 3, 4) = 5 MiB; four go back.
        let blocks: Vec<usize> = (0..9 * 16).map(|_| alloc(0, 64 << 10)).collect();
        let p5 = check(held, "after 144 x 64 KiB");
        assert_eq!(p3 - p5, 9 * MIB as i64);
        let (_, r0, _, _) = give_back_counters(0);
        for &q in &blocks {
            assert!(dfree(0, q));
        }
        let (_, r1, _, _) = give_back_counters(0);
        assert_eq!(r1 - r0, 4, "four empty chunks released");
        let p6 = check(held + 5 * MIB as i64, "after freeing them");
        assert_eq!(p6 - p5, 9 * MIB as i64);
        // The last small block: its chunk is empty and over the room, and goes back.
        assert!(dfree(0, a));
        let p7 = check(8 * MIB as i64, "after free(a)");
        assert_eq!(p7 - p6, 1024, "rises by the block's size class");
        assert_clean();
        assert!(fini(0));
        assert_closed(0);
        return;
    }
    let Some(c) = with_stub(T, &[], CACHE_8M) else {
        return;
    };
    assert_no_errors(&c);
}

/// Idle soft-stack blocks beyond the cache bound are kept while the device is busy and
/// given back once it has launched nothing for a second, by the idle trimmer's thread
/// with no call from the program; meanwhile the free-memory property counts them.
#[test]
fn idle_stacks_beyond_the_bound_are_given_back() {
    const T: &str = "idle_stacks_beyond_the_bound_are_given_back";
    const MIB: usize = 1 << 20;
    if support::is_child(T) {
        start(2);
        assert!(init(0));
        let dev = gomp_plugin_nvptx::plugin::device(0).expect("device 0 is open");
        let stacks = dev.shared().memory().stacks();
        let small = stacks.acquire(MIB).expect("1 MiB of stacks");
        let big = stacks.acquire(64 * MIB).expect("64 MiB of stacks");
        let frees = stats(0).frees;
        stacks.release(small);
        stacks.release(big);
        assert_eq!(stats(0).frees, frees, "kept while the device is busy");
        assert_eq!(stacks.idle_bytes(), 65 * MIB);
        assert_eq!(
            prop_size(0, PROP_FREE_MEMORY) as i64,
            driver_free_and_pool_unused(0) + 65 * MIB as i64,
            "idle stacks count as free"
        );
        let t0 = std::time::Instant::now();
        while stats(0).frees == frees && t0.elapsed() < std::time::Duration::from_secs(20) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(stats(0).frees, frees + 1, "the 64 MiB block went back");
        assert_eq!(stacks.idle_bytes(), MIB, "the 1 MiB block fits the bound");
        assert_eq!(
            prop_size(0, PROP_FREE_MEMORY) as i64,
            driver_free_and_pool_unused(0) + MIB as i64
        );
        drop(dev);
        assert_clean();
        assert!(fini(0));
        assert_closed(0);
        return;
    }
    let Some(c) = with_stub(T, &[], CACHE_8M) else {
        return;
    };
    assert_no_errors(&c);
}

/// `GOMP_NVPTX_PINNED_CACHE` bounds what the pinned pool keeps: freed large blocks
/// beyond it go back to the driver at `page_locked_host_free`.
#[test]
fn pinned_cache_is_bounded() {
    const T: &str = "pinned_cache_is_bounded";
    const MIB: usize = 1 << 20;
    if support::is_child(T) {
        start(2);
        assert!(init(0));
        let base = stats(0).live_host_allocs;
        let ps: Vec<usize> = (0..4).map(|_| pinned_alloc(3 * MIB)).collect();
        assert_eq!(stats(0).live_host_allocs - base, 4);
        for p in ps {
            assert!(pinned_free(p));
        }
        // Room for large blocks: 8 MiB minus one 4 MiB chunk: one 3 MiB block stays.
        assert_eq!(stats(0).live_host_allocs - base, 1);
        let q = pinned_alloc(3 * MIB);
        assert_eq!(stats(0).live_host_allocs - base, 1, "served by the cache");
        assert!(pinned_free(q));
        assert_clean();
        assert!(fini(0));
        assert_closed(0);
        return;
    }
    let Some(c) = with_stub(T, &[], &[("GOMP_NVPTX_PINNED_CACHE", "8m")]) else {
        return;
    };
    assert_no_errors(&c);
}

/// fini_device with blocks left on both devices (the driver's context reset frees
/// them), twice; the other device is untouched; a closed device refuses work and opens
/// again.
fn fini_with_allocations_left() {
    start(2);
    assert!(init(0) && init(1));
    let left = [
        [alloc(0, 100), alloc(0, 3 << 20)],
        [alloc(1, 100), alloc(1, 3 << 20)],
    ];
    let _pinned = pinned_alloc(1000);
    let kept = alloc(1, 5000);
    round_trip(1, kept, 5000, 1);
    assert!(fini(0), "fini_device 0 with blocks left");
    assert_closed(0);
    assert!(stats(0).reset_freed >= 1, "{:?}", stats(0));
    assert!(fini(0), "fini_device 0 again");
    let mut back = vec![0u8; 5000];
    assert!(d2h(1, &mut back, kept));
    assert!(back == pattern(1, 5000), "device 1's data survived");
    assert_eq!(stats(1).ctx_refs, 1);
    // SAFETY: plain calls on a closed device.
    unsafe {
        assert!(
            GOMP_OFFLOAD_alloc(0, 8).is_null(),
            "alloc on a closed device"
        );
        assert!(!GOMP_OFFLOAD_free(0, left[0][0] as *mut c_void));
    }
    assert!(fini(1) && fini(1), "fini_device 1 twice");
    assert_closed(1);
    assert!(stats(1).reset_freed >= 1, "{:?}", stats(1));
    // SAFETY: plain call.
    assert_eq!(unsafe { GOMP_OFFLOAD_get_num_devices(0) }, 2);
    assert!(init(0), "init_device 0 after fini");
    assert_eq!(stats(0).ctx_refs, 1);
    let p = alloc(0, 1 << 20);
    assert_eq!(owner(p), 0);
    round_trip(0, p, 1 << 20, 2);
    assert!(dfree(0, p));
    assert!(fini(0));
    assert_closed(0);
    assert_eq!((stats(0).ctx_resets, stats(1).ctx_resets), (2, 1));
    assert_clean();
}

#[test]
fn fini_with_allocations_left_with_pools() {
    const T: &str = "fini_with_allocations_left_with_pools";
    if support::is_child(T) {
        return fini_with_allocations_left();
    }
    if let Some(c) = with_stub(T, &[], &[]) {
        c.assert_line("libgomp: nvptx device 0 is not open")
            .assert_stderr_lacks("stub libcuda:");
    }
}

#[test]
fn fini_with_allocations_left_without_pools() {
    const T: &str = "fini_with_allocations_left_without_pools";
    if support::is_child(T) {
        return fini_with_allocations_left();
    }
    if let Some(c) = with_stub(T, &["-DNO_POOLS"], &[]) {
        c.assert_line("libgomp: nvptx device 0 is not open")
            .assert_stderr_lacks("stub libcuda:");
    }
}

/// `CUDA_VISIBLE_DEVICES=1`: one device, physical device 1.
#[test]
fn visible_devices_one() {
    const T: &str = "visible_devices_one";
    if support::is_child(T) {
        start(1);
        assert_eq!(uid(0), Some(uuid(1)));
        assert_eq!(uid(1), None);
        assert!(!init(1), "only one device");
        assert!(init(0));
        assert!(prop_name(0).ends_with("device 1)"));
        let p = alloc(0, 4096);
        assert_eq!(owner(p), 0);
        round_trip(0, p, 4096, 1);
        assert!(dfree(0, p));
        assert!(fini(0));
        assert_closed(0);
        assert_eq!(stats(0).misuse, 0);
        return;
    }
    if let Some(c) = with_stub(T, &[], &[("CUDA_VISIBLE_DEVICES", "1")]) {
        c.assert_line(&format!("{DEBUG}CUDA driver 12.8, 1 device(s)"))
            .assert_line(&device_line(0, 1, true))
            .assert_line("libgomp: no nvptx device 1")
            .assert_stderr_lacks("stub libcuda:");
    }
}

/// `CUDA_VISIBLE_DEVICES=1,0`: both, in that order.
#[test]
fn visible_devices_swapped() {
    const T: &str = "visible_devices_swapped";
    if support::is_child(T) {
        start(2);
        assert_eq!(uid(0), Some(uuid(1)));
        assert_eq!(uid(1), Some(uuid(0)));
        assert!(init(0) && init(1));
        assert!(prop_name(0).ends_with("device 1)"));
        assert!(prop_name(1).ends_with("device 0)"));
        assert!(fini(0) && fini(1));
        return;
    }
    if let Some(c) = with_stub(T, &[], &[("CUDA_VISIBLE_DEVICES", "1,0")]) {
        c.assert_line(&device_line(0, 1, true))
            .assert_line(&device_line(1, 0, true))
            .assert_stderr_lacks("stub libcuda:");
    }
}

/// `CUDA_VISIBLE_DEVICES=0,7,1`: CUDA stops at the first bad entry: one device.
#[test]
fn visible_devices_stop_at_a_bad_entry() {
    const T: &str = "visible_devices_stop_at_a_bad_entry";
    if support::is_child(T) {
        start(1);
        assert_eq!(uid(0), Some(uuid(0)));
        return;
    }
    with_stub(T, &[], &[("CUDA_VISIBLE_DEVICES", "0,7,1")]);
}

/// `CUDA_VISIBLE_DEVICES=` (empty): cuInit finds no device; the plugin reports 0.
#[test]
fn visible_devices_none() {
    const T: &str = "visible_devices_none";
    if support::is_child(T) {
        start(0);
        assert!(!init(0));
        assert_eq!(uid(0), None);
        return;
    }
    if let Some(c) = with_stub(T, &[], &[("CUDA_VISIBLE_DEVICES", "")]) {
        c.assert_line(&format!(
            "{DEBUG}no CUDA devices: cuInit error: no CUDA-capable device is detected"
        ))
        .assert_line("libgomp: no nvptx device 0");
    }
}

/// The child of the pool warm-up tests: the device's first allocation (1000 bytes)
/// while the pool is not yet ready, then, once the warm-up has ended (the free-memory
/// property waits for it), a 32 MiB one; prints `DIRECT N` (device memory outside the
/// pool after the first allocation, beyond what the device held before it) and `POOL
/// N` (bytes the pool handed out after the second), then frees both and closes.
fn first_allocations() {
    start(2);
    assert!(init(0));
    let outside = |s: &support::StubStats| s.live_bytes - s.pool_reserved;
    let before = stats(0);
    let a = alloc(0, 1000);
    let _ = prop_size(0, PROP_FREE_MEMORY);
    let s = stats(0);
    println!("DIRECT {}", outside(&s) - outside(&before));
    round_trip(0, a, 1000, 11);
    let b = alloc(0, 32 << 20);
    round_trip(0, b, 32 << 20, 12);
    let s = stats(0);
    println!("POOL {}", s.pool_used);
    assert!(dfree(0, a) && dfree(0, b));
    // A direct chunk the caches give back (GOMP_NVPTX_DEVICE_CACHE=0 gives back an
    // empty chunk at once) is kept aside, not freed with cuMemFree, until the close.
    let s = stats(0);
    println!(
        "RUNTIME_FREES {} DIRECT_LEFT {}",
        s.frees,
        outside(&s) - outside(&before)
    );
    println!(
        "FREE_GAP {}",
        TOTAL_MEM as i64 - prop_size(0, PROP_FREE_MEMORY) as i64
    );
    assert_clean();
    assert!(fini(0));
    assert_closed(0);
}

/// The `N` of the child's `WHAT N` line.
fn printed(c: &support::Child, what: &str) -> i64 {
    c.stdout
        .lines()
        .find_map(|l| l.split_once(&format!("{what} ")).map(|(_, n)| n))
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {what} line\n{}", c.stdout))
}

/// By default the device's first allocation starts the pool's warm-up on a thread of
/// its own and takes plain `cuMemAlloc` memory meanwhile; once the warm-up has ended,
/// allocations come from the pool; everything is freed by the close.
#[test]
fn first_allocations_before_the_pool_is_ready() {
    const T: &str = "first_allocations_before_the_pool_is_ready";
    if support::is_child(T) {
        return first_allocations();
    }
    let Some(c) = with_stub(T, &[], &[]) else {
        return;
    };
    c.assert_stderr_lacks("stub libcuda:");
    assert!(printed(&c, "DIRECT") > 0, "{}", c.stdout);
    assert!(printed(&c, "POOL") >= 32 << 20, "{}", c.stdout);
}

/// A direct chunk given back by the block caches while the program runs is not freed
/// (`cuMemFree` may wait for running kernels) but kept until the device closes, and
/// counts as free memory meanwhile.
#[test]
fn direct_chunks_are_kept_until_the_close() {
    const T: &str = "direct_chunks_are_kept_until_the_close";
    if support::is_child(T) {
        return first_allocations();
    }
    let Some(c) = with_stub(T, &[], &[("GOMP_NVPTX_DEVICE_CACHE", "0")]) else {
        return;
    };
    c.assert_stderr_lacks("stub libcuda:");
    let direct = printed(&c, "DIRECT");
    assert!(direct > 0, "{}", c.stdout);
    assert_eq!(printed(&c, "RUNTIME_FREES"), 0, "{}", c.stdout);
    assert_eq!(printed(&c, "DIRECT_LEFT"), direct, "{}", c.stdout);
    // Kept aside, the chunk still counts as free memory (given back before an
    // allocation fails).
    assert_eq!(printed(&c, "FREE_GAP"), 0, "{}", c.stdout);
}

/// The child of the `poolwarm=later` test: 16 allocations of 256 KiB (each a chunk of
/// its own) with no kernel run, then (the free-memory property waits for a warm-up
/// that was started) `POOL_BEFORE N` and `TRIMS_BEFORE N` (the warm-up ends with a
/// trim); a 17th, the wait again, an 18th, `POOL_AFTER N`.
fn later_allocations() {
    start(2);
    assert!(init(0));
    let mut v: Vec<_> = (0..16).map(|_| alloc(0, 256 << 10)).collect();
    let _ = prop_size(0, PROP_FREE_MEMORY);
    let s = stats(0);
    println!("POOL_BEFORE {}", s.pool_used);
    println!("TRIMS_BEFORE {}", s.pool_trims);
    v.push(alloc(0, 256 << 10));
    let _ = prop_size(0, PROP_FREE_MEMORY);
    v.push(alloc(0, 256 << 10));
    println!("POOL_AFTER {}", stats(0).pool_used);
    for p in v {
        assert!(dfree(0, p));
    }
    assert_clean();
    assert!(fini(0));
    assert_closed(0);
}

/// `GOMP_NVPTX_TUNE=poolwarm=later`: no warm-up before a kernel has completed, so
/// allocations stay plain `cuMemAlloc` ones, until 16 such chunks are held: the next
/// allocation starts it, and later ones come from the pool. By default (`first`) the
/// first allocation starts it.
#[test]
fn later_warm_up_waits_for_a_kernel_or_16_chunks() {
    const T: &str = "later_warm_up_waits_for_a_kernel_or_16_chunks";
    if support::is_child(T) {
        return later_allocations();
    }
    let Some(c) = with_stub(T, &[], &[("GOMP_NVPTX_TUNE", "poolwarm=later")]) else {
        return;
    };
    c.assert_stderr_lacks("stub libcuda:");
    assert_eq!(printed(&c, "POOL_BEFORE"), 0, "{}", c.stdout);
    assert_eq!(
        printed(&c, "TRIMS_BEFORE"),
        0,
        "no warm-up yet\n{}",
        c.stdout
    );
    assert!(printed(&c, "POOL_AFTER") >= 256 << 10, "{}", c.stdout);
    let Some(c) = with_stub(T, &[], &[]) else {
        return;
    };
    assert!(
        printed(&c, "TRIMS_BEFORE") > 0,
        "warmed up at once\n{}",
        c.stdout
    );
}

/// `GOMP_NVPTX_TUNE=poolwarm=0`: the first allocation comes from the pool.
#[test]
fn first_allocations_from_the_pool_without_warm_up() {
    const T: &str = "first_allocations_from_the_pool_without_warm_up";
    if support::is_child(T) {
        return first_allocations();
    }
    let Some(c) = with_stub(T, &[], &[("GOMP_NVPTX_TUNE", "poolwarm=0")]) else {
        return;
    };
    c.assert_stderr_lacks("stub libcuda:");
    assert_eq!(printed(&c, "DIRECT"), 0, "{}", c.stdout);
    assert!(printed(&c, "POOL") >= 32 << 20, "{}", c.stdout);
}

/// `GOMP_NVPTX_TUNE=pinkeep`: with `open` each opened device makes one page-locked block
/// on a thread of its own; with `load` (the default) a device makes it once an image is
/// loaded on it (here device 0 only, when the child loads one); `0` makes none. All are
/// freed at close.
#[test]
fn page_locked_block_kept_while_open() {
    const T: &str = "page_locked_block_kept_while_open";
    if support::is_child(T) {
        start(2);
        assert!(init(0) && init(1), "init_device 0 and 1");
        let text = ".version 7.0\n.target sm_52\n.address_size 64\n\
                    .visible .entry k$_omp_fn$0 ()\n{\n\tret;\n}\n";
        let img = support::image::Image::new(
            vec![std::ffi::CString::new(text).unwrap()],
            &["k$_omp_fn$0"],
        );
        if std::env::var("LOAD").is_ok() {
            assert_eq!(img.load(0, false).0, 2, "one kernel and the ICV entry");
        }
        assert!(fini(0) && fini(1));
        assert_eq!(
            (stats(0).live_host_allocs, stats(1).live_host_allocs),
            (0, 0),
            "the kept blocks are freed at close"
        );
        assert_clean();
        return;
    }
    let kept = |tune: &[(&str, &str)]| -> Option<usize> {
        let c = with_stub(T, &[], tune)?;
        assert_no_errors(&c);
        let made = c
            .stderr
            .lines()
            .filter(|l| l.contains("kept page-locked block"));
        Some(
            made.inspect(|l| assert!(l.ends_with(" us"), "not made: {l}"))
                .count(),
        )
    };
    let Some(open) = kept(&[("GOMP_NVPTX_TUNE", "pinkeep=open")]) else {
        return;
    };
    assert_eq!(open, 2, "one kept block per opened device");
    assert_eq!(kept(&[]).unwrap(), 0, "load: no image, no block");
    assert_eq!(kept(&[("LOAD", "1")]).unwrap(), 1, "load: device 0's image");
    let off = [("GOMP_NVPTX_TUNE", "pinkeep=0"), ("LOAD", "1")];
    assert_eq!(kept(&off).unwrap(), 0);
}
