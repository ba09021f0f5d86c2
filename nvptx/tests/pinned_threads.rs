//! Page-locked host memory (`page_locked_host_alloc`/`_free`, libgomp 16's pinned
//! allocator) from many host threads at once, against the stand-in libcuda of
//! tests/fallback/stub_libcuda_2dev.c, through the exported entry points as libgomp
//! calls them: every thread gets blocks no other thread holds, blocks freed by another
//! thread than the one that allocated them go back, a double free and a foreign address
//! are refused, and the first small allocation pins little. The stand-in's driver calls
//! are cheap, so `pinned_threads_bench` (ignored; run it with `--ignored --nocapture`)
//! shows what the plugin's own bookkeeping costs per pair (locks, shared counters) with
//! one and with several threads. Each scenario runs in a child process (see
//! support/mod.rs).

use gomp_plugin_conformance::support;

use gomp_plugin_nvptx as _; // links the rlib holding the exported shells
use std::ffi::{c_void, OsStr};
use std::sync::{Arc, Barrier};
use std::time::Instant;
use support::api::*;
use support::stub_stats as stats;

// SAFETY (all wrappers): plain calls of the exported entry points with valid arguments.

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

/// Fills the ends of block `p` (`n` bytes, live and ours) with `c`, as the benchmark
/// does (offload_bench `pinned_alloc_mt`).
fn fill_ends(p: usize, n: usize, c: u8) {
    let k = n.min(256);
    // SAFETY: `p` is a live block of `n` bytes owned by the caller.
    unsafe {
        std::ptr::write_bytes(p as *mut u8, c, k);
        std::ptr::write_bytes((p + n - k) as *mut u8, c, k);
    }
}

/// Whether the ends of block `p` still hold `c`.
fn ends_hold(p: usize, n: usize, c: u8) -> bool {
    let k = n.min(256);
    // SAFETY: `p` is a live block of `n` bytes owned by the caller.
    let (a, b) = unsafe {
        (
            std::slice::from_raw_parts(p as *const u8, k),
            std::slice::from_raw_parts((p + n - k) as *const u8, k),
        )
    };
    a.iter().chain(b).all(|&x| x == c)
}

/// Builds the stand-in and runs `test` in a child against it with `env`.
fn with_stub(test: &str, env: &[(&str, &str)]) -> Option<support::Child> {
    with_stub_run(test, env, support::run_child)
}

/// [`with_stub`] with `run` starting the child.
fn with_stub_run(
    test: &str,
    env: &[(&str, &str)],
    run: fn(&str, &[(&str, &OsStr)]) -> support::Child,
) -> Option<support::Child> {
    if !support::have_tools(test, &["cc"]) {
        return None;
    }
    let dir = support::Scratch::new("stub-libcuda-pinned");
    let lib = support::stub_libcuda_2dev(&dir, &[]);
    let mut all: Vec<(&str, &OsStr)> = vec![("GOMP_PLUGIN_RS_LIBCUDA", lib.as_os_str())];
    all.extend(env.iter().map(|(k, v)| (*k, OsStr::new(v))));
    let c = run(test, &all);
    c.assert_passed()
        .assert_stderr_lacks("panicked")
        .assert_stderr_lacks("stub libcuda:");
    Some(c)
}

/// `threads` threads each run `pairs` alloc+free pairs of `bytes` with 4 blocks live
/// (the benchmark's pattern), every block's ends checked before its free; returns the
/// slowest thread's seconds.
fn pairs_on_threads(threads: usize, pairs: usize, bytes: usize) -> f64 {
    let go = Arc::new(Barrier::new(threads));
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let go = Arc::clone(&go);
            std::thread::spawn(move || {
                let pat = t as u8 + 1;
                let mut live = [0usize; 4];
                go.wait();
                let t0 = Instant::now();
                for i in 0..pairs {
                    let slot = &mut live[i % 4];
                    if *slot != 0 {
                        assert!(
                            ends_hold(*slot, bytes, pat),
                            "thread {t}: block overwritten"
                        );
                        assert!(pinned_free(*slot));
                    }
                    *slot = pinned_alloc(bytes);
                    fill_ends(*slot, bytes, pat);
                }
                for p in live.into_iter().filter(|&p| p != 0) {
                    assert!(ends_hold(p, bytes, pat), "thread {t}: block overwritten");
                    assert!(pinned_free(p));
                }
                t0.elapsed().as_secs_f64()
            })
        })
        .collect();
    hs.into_iter()
        .map(|h| h.join().expect("thread"))
        .fold(0.0, f64::max)
}

/// Eight threads allocate and free 4 KiB blocks at once, each checking that no other
/// thread wrote into its blocks; then blocks allocated by one thread are freed by
/// others; a double free and memory the plugin did not allocate are refused; at the
/// device's close every page-locked block goes back to the driver.
#[test]
fn threads_get_their_own_blocks_and_free_each_others() {
    const T: &str = "threads_get_their_own_blocks_and_free_each_others";
    if support::is_child(T) {
        start(2);
        assert!(init(0));
        pairs_on_threads(8, 2000, 4096);
        // Allocated on 4 threads, freed on 4 others (and the sizes of every path:
        // small classes and a large block).
        let sizes = [64usize, 4096, 5000, 256 << 10, 1 << 20];
        let blocks: Vec<Vec<usize>> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    sizes
                        .iter()
                        .map(|&n| {
                            let p = pinned_alloc(n);
                            fill_ends(p, n, 0x40 + t as u8);
                            p
                        })
                        .collect::<Vec<_>>()
                })
                .join()
                .unwrap()
            })
            .collect();
        let mut all: Vec<(usize, usize)> = blocks
            .iter()
            .flat_map(|b| b.iter().copied().zip(sizes))
            .collect();
        all.sort();
        for w in all.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "overlap at {:#x}", w[1].0);
        }
        let hs: Vec<_> = blocks
            .into_iter()
            .enumerate()
            .map(|(t, b)| {
                std::thread::spawn(move || {
                    for (p, n) in b.into_iter().zip(sizes) {
                        assert!(ends_hold(p, n, 0x40 + t as u8));
                        assert!(pinned_free(p), "freed by another thread");
                        assert!(!pinned_free(p), "double free refused");
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let pageable = [0u8; 64];
        assert!(!pinned_free(pageable.as_ptr() as usize), "not page-locked");
        assert!(pinned_free(0), "NULL is accepted");
        assert!(stats(0).live_host_allocs > 0, "the pool keeps some");
        assert!(fini(0));
        assert_eq!(stats(0).live_host_allocs, 0, "all back at close");
        return;
    }
    with_stub(T, &[]);
}

/// A block from the pool of a device that is no longer the first open one (device 1
/// opened alone, device 0 opened after the allocation) still goes back to its own
/// pool: the free asks the host-range registry when the first device's pool does not
/// hold it.
#[test]
fn a_block_goes_back_to_the_pool_that_made_it() {
    const T: &str = "a_block_goes_back_to_the_pool_that_made_it";
    if support::is_child(T) {
        start(2);
        assert!(init(1));
        let before = stats(1).live_host_allocs;
        let small = pinned_alloc(4096);
        let large = pinned_alloc(1 << 20);
        assert_eq!(stats(1).live_host_allocs, before + 2, "device 1's pool");
        assert!(init(0));
        let before0 = stats(0).live_host_allocs;
        assert!(pinned_free(small) && pinned_free(large));
        assert!(!pinned_free(small), "double free refused");
        assert!(!pinned_free(large), "double free refused");
        assert_eq!(stats(0).live_host_allocs, before0, "nothing from device 0");
        assert!(fini(1));
        assert_eq!(stats(1).live_host_allocs, 0);
        assert!(fini(0));
        return;
    }
    with_stub(T, &[]);
}

/// The first small page-locked allocation pins a small chunk, not the pool's largest:
/// pinning costs time by the byte, and the first request waits for it.
#[test]
fn first_small_allocation_pins_little() {
    const T: &str = "first_small_allocation_pins_little";
    if support::is_child(T) {
        start(2);
        assert!(init(0));
        let before = stats(0);
        let p = pinned_alloc(4096 + 64);
        let after = stats(0);
        assert_eq!(after.live_host_allocs, before.live_host_allocs + 1);
        let pinned = after.live_host_bytes - before.live_host_bytes;
        assert!(
            pinned <= 64 << 10,
            "the first chunk pinned {pinned} bytes for a 4 KiB request"
        );
        assert!(pinned_free(p));
        assert!(fini(0));
        return;
    }
    with_stub(T, &[]);
}

/// What the plugin's own bookkeeping costs per page-locked alloc+free pair of 4 KiB,
/// with 1, 2 and 8 threads (`PINNED_BENCH_THREADS=1,8` picks; the stand-in's driver
/// calls are cheap), `PINNED_BENCH_PAIRS` pairs per thread (default 200000). Prints
/// `pinned_threads T: N ns per pair per thread, M pairs/s`.
#[test]
#[ignore]
fn pinned_threads_bench() {
    const T: &str = "pinned_threads_bench";
    if support::is_child(T) {
        start(2);
        assert!(init(0));
        let pairs: usize = std::env::var("PINNED_BENCH_PAIRS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200_000);
        let counts: Vec<usize> = std::env::var("PINNED_BENCH_THREADS")
            .ok()
            .map(|v| v.split(',').filter_map(|t| t.trim().parse().ok()).collect())
            .unwrap_or_else(|| vec![1, 2, 8]);
        pairs_on_threads(1, 1000, 4096);
        for threads in counts {
            let s = pairs_on_threads(threads, pairs, 4096);
            eprintln!(
                "pinned_threads {threads}: {:.0} ns per pair per thread, {:.0} pairs/s",
                s / pairs as f64 * 1e9,
                (threads * pairs) as f64 / s
            );
        }
        assert!(fini(0));
        return;
    }
    let env: Vec<(&str, String)> = [
        "PINNED_BENCH_PAIRS",
        "PINNED_BENCH_THREADS",
        "GOMP_NVPTX_TUNE",
    ]
    .iter()
    .filter_map(|k| std::env::var(k).ok().map(|v| (*k, v)))
    .collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    if let Some(c) = with_stub_run(T, &env, support::run_ignored_child) {
        for l in c.stderr.lines().filter(|l| l.starts_with("pinned_threads")) {
            println!("{l}");
        }
    }
}
