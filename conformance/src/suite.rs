//! The conformance suite: what every backend must do when libgomp drives it through
//! the exported `GOMP_OFFLOAD_*` entry points, checked against the backend's stand-in
//! driver (tests/fallback/: libcuda for nvptx, libhsa-runtime64 for gcn), as IREE's
//! `cts/` checks each HAL driver with one set of tests.
//!
//! Each scenario is written once here, generic over a [`Backend`] (how to build the
//! stand-in, a minimal image with one kernel and what that kernel does to memory,
//! images the backend must refuse, what the stand-in says about device memory), and
//! a product instantiates all of them in its `tests/conformance.rs` with
//! [`conformance_suite!`](crate::conformance_suite). Every scenario runs in a child
//! process (see [`crate::support`]) under the recording stand-in libgomp 16
//! (tests/fallback/gcn_libgomp.c), so `GOMP_OFFLOAD_version` answers 3, messages come
//! as `libgomp: ...` lines, and async completions and reverse-offload requests are
//! recorded. The parent checks that the child passed, that nothing panicked, and that
//! the stand-in refused no call ([`Backend::COMPLAINT`]).
//!
//! Backend-only behaviour (launch geometry, the link cache, two devices, the launch
//! protocol's ring...) stays in the product's own test files beside it.
//!
//! Run one scenario of one backend:
//!
//! ```text
//! cargo test --profile test-fast -p gomp-plugin-gcn --test conformance run_kernel
//! ```

use crate::support::{self, api::*};
use std::ffi::{c_int, c_void, OsStr, OsString};
use std::sync::Mutex;

extern "C" {
    #[link_name = "free"]
    fn libc_free(p: *mut c_void);
}

/// The variable naming the recording libgomp in a child.
const LIBGOMP_ENV: &str = "GOMP_PLUGIN_RS_CONFORMANCE_LIBGOMP";
/// libgomp-plugin.h's `GOMP_REQUIRES_REVERSE_OFFLOAD`.
const REQUIRES_REVERSE_OFFLOAD: u32 = 0x80;
/// Bytes of the device buffer the minimal kernel works on.
pub const BUF: usize = 64;

/// An image descriptor as libgomp passes it to `load_image` (`target_data`), with
/// everything it points into owned by the value. Built and used by one thread.
pub trait Image {
    /// The descriptor's address, alive as long as `self`.
    fn data(&self) -> *const c_void;
}

/// What the suite needs to know of a backend. The associated functions marked
/// "child" run in the scenario's child process, after the plugin loaded the stand-in;
/// the others in the test's own process. Implemented by a unit type in the product's
/// `tests/conformance.rs`; nothing here is shared between threads.
pub trait Backend {
    /// The product's crate directory, which is also what `GOMP_OFFLOAD_get_name` says.
    const PRODUCT: &'static str;
    /// `GOMP_OFFLOAD_get_caps`.
    const CAPS: u32;
    /// `GOMP_OFFLOAD_get_type` (libgomp-plugin.h's `OFFLOAD_TARGET_TYPE_*`).
    const TYPE: c_int;
    /// Devices of the stand-in (the suite uses device 0).
    const DEVICES: c_int;
    /// The version word of the backend's images under libgomp 16
    /// (`GOMP_VERSION_PACK (3, device version)`).
    const IMAGE_VERSION: u32;
    /// Entries of the table `load_image` answers for [`Backend::image`] (its kernel
    /// first, then what the backend adds: the ICV block).
    const TABLE_ENTRIES: usize;
    /// The start of what the stand-in prints when it refuses a call.
    const COMPLAINT: &'static str;
    /// Tools the parent needs to build the stand-in (checked by
    /// [`support::have_tools`]).
    const TOOLS: &'static [&'static str];
    /// Each image [`Backend::bad_image`] makes: what is wrong with it, and the text of
    /// the `libgomp:` line its refusal must print.
    const BAD_IMAGES: &'static [(&'static str, &'static str)];
    /// The scenarios of [`SCENARIOS`] this backend does not run on its stand-in, each
    /// with the reason and where the behaviour is checked instead. Each is reported as
    /// a `SKIPPED` check (scripts/test lists it with its reason), never as a pass; a
    /// name that is not a scenario fails every test of the backend.
    const SKIP: &'static [(&'static str, &'static str)];

    /// Builds the stand-in driver (and whatever the images need) into `dir`; the
    /// child's environment that makes the plugin use it. With `reverse`, the kernel of
    /// [`Backend::image`] posts one reverse-offload request for function 0 of its image
    /// (only asked of a backend that does not skip `reverse_offload`).
    fn stand_in(dir: &support::Scratch, reverse: bool) -> Vec<(&'static str, OsString)>;
    /// Child: a minimal image whose first kernel works on the [`BUF`] bytes the
    /// argument block of [`Backend::vars`] gives it, as [`Backend::kernel`] says.
    fn image() -> Box<dyn Image>;
    /// Child: the `i`-th image of [`Backend::BAD_IMAGES`].
    fn bad_image(i: usize) -> Box<dyn Image>;
    /// Child: the `tgt_vars` block that makes the kernel work on the device buffer
    /// `buf` of device 0 (may allocate; [`Backend::free_vars`] gives it back).
    fn vars(buf: *mut c_void) -> *mut c_void;
    /// Child: gives back what [`Backend::vars`] made for `buf`.
    fn free_vars(vars: *mut c_void, buf: *mut c_void);
    /// What the buffer holds after one run of the kernel over `before` (the
    /// stand-in's model of the kernel, computed on the host).
    fn kernel(before: &[u8; BUF]) -> [u8; BUF];
    /// Child: whether the stand-in holds `[p, p+n)` as device memory of device 0.
    fn driver_holds(p: *const c_void, n: usize) -> bool;
    /// Child: after `fini_device(0)`, asserts the stand-in holds nothing of device 0
    /// (memory, queues, code objects...).
    fn assert_released();
    /// Child: `GOMP_OFFLOAD_run`'s implementation for libgomp 12-16 (the product's
    /// `entry_points::run`: within the test's link the exported name is its IFUNC
    /// resolver).
    fn run(ord: c_int, tgt_fn: *mut c_void, vars: *mut c_void, args: *mut *mut c_void);
    /// Child: `GOMP_OFFLOAD_async_run`'s implementation (the product's `async_run`:
    /// within the test's link the exported name is its IFUNC resolver).
    fn async_run(
        ord: c_int,
        tgt_fn: *mut c_void,
        vars: *mut c_void,
        args: *mut *mut c_void,
        data: *mut c_void,
    );
}

/// Every scenario of the suite, in the order [`conformance_suite!`] instantiates them.
pub const SCENARIOS: &[&str] = &[
    "identity",
    "load_and_unload",
    "alloc_and_free",
    "copies_round_trip",
    "run_kernel",
    "async_run_completes",
    "openacc_queues",
    "bad_images_are_refused",
    "reverse_offload",
];

/// Whether backend `B` runs scenario `test`: false for one in [`Backend::SKIP`], after
/// printing `SKIPPED conformance/PRODUCT/TEST: reason` (past libtest's capture, so
/// scripts/test counts and lists it). Panics when `SKIP` names no scenario.
pub fn runs<B: Backend>(test: &str) -> bool {
    for (name, _) in B::SKIP {
        assert!(
            SCENARIOS.contains(name),
            "{}: Backend::SKIP names '{name}', which is no scenario of the suite",
            B::PRODUCT
        );
    }
    match B::SKIP.iter().find(|(name, _)| *name == test) {
        None => true,
        Some((_, why)) => {
            if !support::is_child(test) {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "SKIPPED conformance/{}/{test}: {why}",
                    B::PRODUCT
                );
            }
            false
        }
    }
}

/// Instantiates every scenario of the suite ([`SCENARIOS`]) as a `#[test]` of the
/// calling crate (a product's `tests/conformance.rs`, at its root) for backend `$b`;
/// a scenario in the backend's [`Backend::SKIP`] says why and runs nothing.
#[macro_export]
macro_rules! conformance_suite {
    ($b:ty) => {
        $crate::conformance_suite!(@tests $b; identity, load_and_unload, alloc_and_free,
            copies_round_trip, run_kernel, async_run_completes, openacc_queues,
            bad_images_are_refused, reverse_offload);
    };
    (@tests $b:ty; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                if $crate::suite::runs::<$b>(stringify!($name)) {
                    $crate::suite::$name::<$b>(stringify!($name));
                }
            }
        )*
    };
}

// ---- the parent ----

/// Runs scenario `test` in a child against the stand-in; checks that it passed, that
/// nothing panicked and that the stand-in refused no call. `None` when a tool is
/// missing (the test is then reported as skipped by [`support::have_tools`]).
fn parent<B: Backend>(test: &str, reverse: bool) -> Option<support::Child> {
    let mut tools = vec!["cc"];
    tools.extend(B::TOOLS);
    if !support::have_tools(test, &tools) {
        return None;
    }
    let dir = support::Scratch::new(&format!("conformance-{}", B::PRODUCT));
    let gomp = support::recording_libgomp(&dir.join("libgomp"), &support::RELEASE_NODES);
    let mut env: Vec<(&str, OsString)> = B::stand_in(&dir, reverse);
    env.push((LIBGOMP_ENV, gomp.into_os_string()));
    env.push(("GOMP_DEBUG", "1".into()));
    let env: Vec<(&str, &OsStr)> = env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    let c = support::run_child(test, &env);
    drop(dir);
    c.assert_passed()
        .assert_stderr_lacks("panicked")
        .assert_stderr_lacks("internal error")
        .assert_stderr_lacks(B::COMPLAINT);
    Some(c)
}

// ---- the child ----

/// The recording libgomp's counter or array `name`.
fn gomp_sym<T>(name: &str) -> *mut T {
    let lib = std::env::var_os(LIBGOMP_ENV).expect("set by the parent");
    support::symbol_of_loaded(&lib, name).cast()
}

fn read<T: Copy>(p: *mut T) -> T {
    // SAFETY: a live symbol of the loaded stand-in libgomp, written with atomics by
    // the plugin's threads; a volatile read sees the latest value.
    unsafe { std::ptr::read_volatile(p) }
}

/// Loads the recording libgomp as a program linked with it has it, then does what
/// libgomp does first: the version, the devices (with the `requires` mask), device 0
/// opened.
fn open<B: Backend>(requires: u32) {
    support::load_global(&std::env::var_os(LIBGOMP_ENV).expect("set by the parent"));
    // SAFETY: the entry points as libgomp calls them.
    unsafe {
        assert_eq!(GOMP_OFFLOAD_version(), 3, "libgomp 16's GOMP_VERSION");
        assert_eq!(GOMP_OFFLOAD_get_num_devices(requires), B::DEVICES);
        assert!(GOMP_OFFLOAD_init_device(0), "init_device 0");
    }
}

/// Closes device 0; the stand-in must hold nothing of it afterwards.
fn close<B: Backend>() {
    // SAFETY: the entry point.
    assert!(unsafe { GOMP_OFFLOAD_fini_device(0) }, "fini_device 0");
    B::assert_released();
}

/// `load_image` of `img` on `ord` with `version`; the table (copied, then freed as
/// libgomp frees it) and, when `rev`, the reverse-offload table (left to the caller);
/// or `load_image`'s negative answer, the table pointer checked untouched.
fn load(
    ord: c_int,
    version: u32,
    img: &dyn Image,
    rev: bool,
) -> Result<(Vec<AddrPair>, *mut u64), c_int> {
    let mut t: *mut AddrPair = std::ptr::null_mut();
    let mut r: *mut u64 = std::ptr::null_mut();
    // SAFETY: a descriptor laid out as the product's mkoffload lays it out, valid
    // out-pointers; the table is the plugin's GOMP_PLUGIN_malloc (the stand-in
    // libgomp's malloc) and freed here, as libgomp frees it.
    unsafe {
        let n = GOMP_OFFLOAD_load_image(
            ord,
            version,
            img.data(),
            &mut t,
            if rev { &mut r } else { std::ptr::null_mut() },
            std::ptr::null_mut(),
        );
        if n < 0 {
            assert!(t.is_null(), "a refused load_image set the table");
            return Err(n);
        }
        assert!(!t.is_null(), "load_image answered {n} without a table");
        let v = std::slice::from_raw_parts(t, n as usize).to_vec();
        libc_free(t.cast());
        Ok((v, r))
    }
}

/// Loads `img` on device 0; its kernel's handle (checked to be one).
fn load_kernel<B: Backend>(img: &dyn Image) -> *mut c_void {
    let (t, _) = load(0, B::IMAGE_VERSION, img, false).expect("load_image of the image");
    assert_eq!(t.len(), B::TABLE_ENTRIES, "the table: {t:x?}");
    assert!(
        t[0].start != 0 && t[0].end == t[0].start + 1,
        "entry 0 is a kernel handle: {t:x?}"
    );
    t[0].start as *mut c_void
}

fn unload<B: Backend>(img: &dyn Image) -> bool {
    // SAFETY: the entry point, with a descriptor that is alive.
    unsafe { GOMP_OFFLOAD_unload_image(0, B::IMAGE_VERSION, img.data()) }
}

/// `n` bytes of a pattern distinct per `seed`.
fn pattern(seed: usize, n: usize) -> Vec<u8> {
    (0..n).map(|i| ((i * 7 + seed * 31) % 251) as u8).collect()
}

fn alloc(n: usize) -> *mut c_void {
    // SAFETY: the entry point.
    let p = unsafe { GOMP_OFFLOAD_alloc(0, n) };
    assert!(!p.is_null(), "alloc({n})");
    p
}

fn dfree(p: *mut c_void) -> bool {
    // SAFETY: the entry point; a wrong address must be refused by it.
    unsafe { GOMP_OFFLOAD_free(0, p) }
}

fn h2d(p: *mut c_void, src: &[u8]) -> bool {
    // SAFETY: `src` is readable for its length; the device side is checked by the plugin.
    unsafe { GOMP_OFFLOAD_host2dev(0, p, src.as_ptr().cast(), src.len()) }
}

fn d2h(dst: &mut [u8], p: *const c_void) -> bool {
    // SAFETY: `dst` is writable for its length; the device side is checked by the plugin.
    unsafe { GOMP_OFFLOAD_dev2host(0, dst.as_mut_ptr().cast(), p, dst.len()) }
}

fn back(p: *const c_void, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    assert!(d2h(&mut v, p), "dev2host of {n} bytes");
    v
}

/// The target arguments the compiler passes for `num_teams(1) thread_limit(1)`
/// (gomp-constants.h: `GOMP_TARGET_ARG_NUM_TEAMS`, `_THREAD_LIMIT`, for all devices,
/// the value above bit 16), NULL-terminated.
fn target_args() -> [*mut c_void; 3] {
    [
        ((1 << 16) | 0x100) as *mut c_void,
        ((1 << 16) | 0x200) as *mut c_void,
        std::ptr::null_mut(),
    ]
}

fn run<B: Backend>(kernel: *mut c_void, vars: *mut c_void) {
    let mut args = target_args();
    // A kernel handle of a loaded image, its argument block, and a NULL-terminated
    // argument array.
    B::run(0, kernel, vars, args.as_mut_ptr())
}

/// The kernel's model applied `times` times.
fn kernel_times<B: Backend>(before: &[u8], times: usize) -> Vec<u8> {
    let mut b: [u8; BUF] = before.try_into().expect("BUF bytes");
    for _ in 0..times {
        b = B::kernel(&b);
    }
    b.to_vec()
}

// ---- the scenarios ----

/// The plugin says what it is; device 0 opens once, a device the stand-in lacks
/// does not, and device 0 closes.
pub fn identity<B: Backend>(test: &str) {
    if support::is_child(test) {
        open::<B>(0);
        // SAFETY: the entry points.
        unsafe {
            assert_eq!(name(), B::PRODUCT, "get_name");
            assert_eq!(GOMP_OFFLOAD_get_caps(), B::CAPS, "get_caps");
            assert_eq!(GOMP_OFFLOAD_get_type(), B::TYPE, "get_type");
            assert!(!GOMP_OFFLOAD_init_device(0), "init_device 0 again");
            assert!(
                !GOMP_OFFLOAD_init_device(B::DEVICES),
                "init_device of a device the stand-in lacks"
            );
        }
        close::<B>();
        assert!(
            // SAFETY: the entry point.
            unsafe { GOMP_OFFLOAD_fini_device(0) },
            "fini_device of a closed device"
        );
        return;
    }
    if let Some(c) = parent::<B>(test, false) {
        c.assert_line_starts(&format!("libgomp: {} device 0 is already open", B::PRODUCT));
    }
}

/// An image loads (its table names the kernel), unloading it works once, and it
/// loads again after. (Loading an image already loaded is left to each backend:
/// libgomp never does it; gcn refuses it, nvptx loads it again.)
pub fn load_and_unload<B: Backend>(test: &str) {
    if support::is_child(test) {
        open::<B>(0);
        let img = B::image();
        load_kernel::<B>(&*img);
        assert!(unload::<B>(&*img), "unload_image");
        assert!(!unload::<B>(&*img), "unload_image of an image not loaded");
        load_kernel::<B>(&*img);
        assert!(unload::<B>(&*img), "unload_image after the second load");
        close::<B>();
        return;
    }
    if let Some(c) = parent::<B>(test, false) {
        c.assert_line_starts("libgomp: unload_image: image 0x");
    }
}

/// Blocks come from the stand-in's device memory, distinct; a wrong free is refused
/// with a message, freeing NULL is not an error, a device the stand-in lacks
/// allocates nothing.
pub fn alloc_and_free<B: Backend>(test: &str) {
    if support::is_child(test) {
        open::<B>(0);
        let a = alloc(4096);
        let b = alloc(100);
        assert_ne!(a, b, "two blocks");
        assert!(B::driver_holds(a, 4096), "the block lies in device memory");
        assert!(B::driver_holds(b, 100), "the block lies in device memory");
        // SAFETY: the entry points, with addresses the plugin must check.
        unsafe {
            assert!(GOMP_OFFLOAD_free(0, a), "free");
            assert!(!GOMP_OFFLOAD_free(0, a), "double free");
            assert!(
                !GOMP_OFFLOAD_free(0, b.cast::<u8>().add(8).cast()),
                "free inside a block"
            );
            assert!(GOMP_OFFLOAD_free(0, std::ptr::null_mut()), "free of NULL");
            assert!(
                GOMP_OFFLOAD_alloc(B::DEVICES, 8).is_null(),
                "missing device"
            );
            assert!(GOMP_OFFLOAD_free(0, b), "free");
        }
        close::<B>();
        assert!(
            // SAFETY: the entry point.
            unsafe { GOMP_OFFLOAD_alloc(0, 8) }.is_null(),
            "alloc on a closed device"
        );
        return;
    }
    if let Some(c) = parent::<B>(test, false) {
        assert!(c.count_lines("libgomp: ") >= 2, "{}", c.stderr);
    }
}

/// Host to device, device to device, device to host, memset: the bytes come back,
/// only the ranges asked for change, copies of 0 bytes are fine, copies past a block
/// or to NULL are refused.
pub fn copies_round_trip<B: Backend>(test: &str) {
    if support::is_child(test) {
        open::<B>(0);
        const N: usize = 8192;
        let input = pattern(1, N);
        let (d, e) = (alloc(N), alloc(N));
        assert!(h2d(d, &input), "host2dev");
        assert_eq!(back(d, N), input, "round trip");
        // SAFETY: (this block) the entry points on blocks of N bytes, ranges inside them.
        unsafe {
            assert!(GOMP_OFFLOAD_dev2dev(0, e, d, N), "dev2dev");
            assert!(
                GOMP_OFFLOAD_memset(0, e.cast::<u8>().add(100).cast(), 0x15a, 1000),
                "memset"
            );
            let mut want = input.clone();
            want[100..1100].fill(0x5a);
            assert_eq!(back(e, N), want, "dev2dev, then memset of its low byte");
            assert_eq!(back(d, N), input, "the source is unchanged");
            let part = pattern(2, 100);
            assert!(
                h2d(d.cast::<u8>().add(N - 100).cast(), &part),
                "to the tail"
            );
            let mut want = input.clone();
            want[N - 100..].copy_from_slice(&part);
            assert_eq!(back(d, N), want, "only the tail changed");
            assert!(
                GOMP_OFFLOAD_host2dev(0, d, input.as_ptr().cast(), 0),
                "0 bytes"
            );
            assert!(GOMP_OFFLOAD_dev2host(0, want.as_mut_ptr().cast(), d, 0));
            assert!(GOMP_OFFLOAD_dev2dev(0, e, d, 0), "dev2dev of 0 bytes");
            assert!(
                !h2d(d.cast::<u8>().add(8).cast(), &input),
                "host2dev past the end"
            );
            assert!(
                !GOMP_OFFLOAD_dev2host(0, std::ptr::null_mut(), d, 8),
                "dev2host into NULL"
            );
        }
        assert!(dfree(d) && dfree(e), "free");
        close::<B>();
        return;
    }
    if let Some(c) = parent::<B>(test, false) {
        assert!(c.count_lines("libgomp: ") >= 2, "{}", c.stderr);
    }
}

/// `run` launches the kernel, which sees the copies before it; its result is there
/// when `run` returns.
pub fn run_kernel<B: Backend>(test: &str) {
    if support::is_child(test) {
        open::<B>(0);
        let img = B::image();
        let k = load_kernel::<B>(&*img);
        let buf = alloc(BUF);
        let vars = B::vars(buf);
        let input = pattern(3, BUF);
        assert!(h2d(buf, &input));
        run::<B>(k, vars);
        assert_eq!(back(buf, BUF), kernel_times::<B>(&input, 1), "one run");
        run::<B>(k, vars);
        assert_eq!(back(buf, BUF), kernel_times::<B>(&input, 2), "two runs");
        B::free_vars(vars, buf);
        assert!(dfree(buf));
        close::<B>();
        return;
    }
    parent::<B>(test, false);
}

/// `async_run` (`target nowait`) launches the kernel; each launch is reported to
/// libgomp once (`GOMP_PLUGIN_target_task_completion` with its data), after which its
/// result is on the device.
pub fn async_run_completes<B: Backend>(test: &str) {
    if support::is_child(test) {
        open::<B>(0);
        let img = B::image();
        let k = load_kernel::<B>(&*img);
        let buf = alloc(BUF);
        let vars = B::vars(buf);
        let input = pattern(4, BUF);
        assert!(h2d(buf, &input));
        let mut args = target_args();
        for i in 1..=3usize {
            B::async_run(0, k, vars, args.as_mut_ptr(), i as *mut c_void);
        }
        let t0 = std::time::Instant::now();
        while read(gomp_sym::<c_int>("gcn_completion_count")) < 3 {
            // A liveness guard, not a timing check: a lost completion hangs here.
            assert!(t0.elapsed().as_secs() < 60, "completions did not arrive");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let done: [usize; 64] = read(gomp_sym("gcn_completions"));
        let mut got = done[..3].to_vec();
        got.sort_unstable();
        assert_eq!(got, [1, 2, 3], "each launch completed once");
        assert_eq!(back(buf, BUF), kernel_times::<B>(&input, 3), "three runs");
        assert_eq!(
            read(gomp_sym::<c_int>("gcn_completion_count")),
            3,
            "no completion twice"
        );
        B::free_vars(vars, buf);
        assert!(dfree(buf));
        close::<B>();
        return;
    }
    parent::<B>(test, false);
}

/// What the queue callbacks saw: (their id, the first byte of their host buffer).
static CALLBACKS: Mutex<Vec<(usize, u8)>> = Mutex::new(Vec::new());

/// A queue callback: records its id and the first byte of its host buffer then.
unsafe extern "C" fn record(data: *mut c_void) {
    // SAFETY: `data` is a live (id, host buffer) pair of the scenario, which
    // synchronizes the queue before the pair goes out of scope.
    let (id, p) = unsafe { *data.cast::<(usize, *const u8)>() };
    // SAFETY: as above.
    let v = unsafe { p.read_volatile() };
    CALLBACKS.lock().unwrap().push((id, v));
}

/// OpenACC async queues: copies queued on a queue run in order (host to device,
/// device to device, device to host), a callback runs after the work queued before
/// it, `synchronize` waits, `test` says idle after, `serialize` makes a second queue
/// wait for the first, and destroying a queue with work pending runs the work first.
pub fn openacc_queues<B: Backend>(test: &str) {
    if support::is_child(test) {
        open::<B>(0);
        const N: usize = 40_000;
        let (a, b) = (alloc(N), alloc(N));
        let src = pattern(5, N);
        let mut out = vec![0u8; N];
        // SAFETY: (this block) the entry points with queues they made, blocks of N
        // bytes, and host buffers alive until their queue is synchronized or destroyed.
        unsafe {
            let q = GOMP_OFFLOAD_openacc_async_construct(0);
            let q2 = GOMP_OFFLOAD_openacc_async_construct(0);
            assert!(!q.is_null() && !q2.is_null() && q != q2, "two queues");
            assert_eq!(GOMP_OFFLOAD_openacc_async_test(q), 1, "a new queue is idle");
            assert!(GOMP_OFFLOAD_openacc_async_host2dev(
                0,
                a,
                src.as_ptr().cast(),
                N,
                q
            ));
            assert!(GOMP_OFFLOAD_openacc_async_dev2dev(0, b, a, N, q));
            assert!(GOMP_OFFLOAD_openacc_async_dev2host(
                0,
                out.as_mut_ptr().cast(),
                b,
                N,
                q
            ));
            let mut cb = (1usize, out.as_ptr());
            GOMP_OFFLOAD_openacc_async_queue_callback(
                q,
                record,
                (&mut cb as *mut (usize, *const u8)).cast(),
            );
            assert!(GOMP_OFFLOAD_openacc_async_synchronize(q), "synchronize");
            assert_eq!(
                GOMP_OFFLOAD_openacc_async_test(q),
                1,
                "idle after synchronize"
            );
            assert!(out == src, "the copies ran in order");
            assert_eq!(
                *CALLBACKS.lock().unwrap(),
                [(1, src[0])],
                "the callback ran once, after the copies queued before it"
            );
            // serialize: q2's copy back waits for q's copy in.
            let src2 = pattern(6, N);
            let mut out2 = vec![0u8; N];
            assert!(GOMP_OFFLOAD_openacc_async_host2dev(
                0,
                a,
                src2.as_ptr().cast(),
                N,
                q
            ));
            assert!(GOMP_OFFLOAD_openacc_async_serialize(q, q2), "serialize");
            assert!(GOMP_OFFLOAD_openacc_async_dev2host(
                0,
                out2.as_mut_ptr().cast(),
                a,
                N,
                q2
            ));
            assert!(GOMP_OFFLOAD_openacc_async_synchronize(q2));
            assert!(out2 == src2, "q2 waited for q's copy");
            // destroy with pending work: it runs first.
            let src3 = pattern(7, N);
            let mut out3 = vec![0u8; N];
            assert!(GOMP_OFFLOAD_openacc_async_host2dev(
                0,
                b,
                src3.as_ptr().cast(),
                N,
                q2
            ));
            assert!(GOMP_OFFLOAD_openacc_async_dev2host(
                0,
                out3.as_mut_ptr().cast(),
                b,
                N,
                q2
            ));
            assert!(GOMP_OFFLOAD_openacc_async_destruct(q2), "destruct");
            assert!(out3 == src3, "pending work ran before destruct");
            assert!(GOMP_OFFLOAD_openacc_async_synchronize(q));
            assert!(GOMP_OFFLOAD_openacc_async_destruct(q), "destruct");
        }
        assert!(dfree(a) && dfree(b));
        close::<B>();
        return;
    }
    parent::<B>(test, false);
}

/// Images the backend cannot run are refused by `load_image` with -1 and a
/// `libgomp:` message, never a crash: each of the backend's bad images, an image of a
/// newer device version, an image for a device the stand-in lacks. The device still
/// loads and runs a good image afterwards.
pub fn bad_images_are_refused<B: Backend>(test: &str) {
    if support::is_child(test) {
        open::<B>(0);
        for (i, (what, _)) in B::BAD_IMAGES.iter().enumerate() {
            let img = B::bad_image(i);
            assert_eq!(
                load(0, B::IMAGE_VERSION, &*img, false).map(|_| ()),
                Err(-1),
                "load_image of {what}"
            );
        }
        let img = B::image();
        assert_eq!(
            load(0, B::IMAGE_VERSION + 1, &*img, false).map(|_| ()),
            Err(-1),
            "a newer device version"
        );
        assert_eq!(
            load(B::DEVICES, B::IMAGE_VERSION, &*img, false).map(|_| ()),
            Err(-1),
            "a device the stand-in lacks"
        );
        let k = load_kernel::<B>(&*img);
        let buf = alloc(BUF);
        let vars = B::vars(buf);
        let input = pattern(8, BUF);
        assert!(h2d(buf, &input));
        run::<B>(k, vars);
        assert_eq!(back(buf, BUF), kernel_times::<B>(&input, 1), "a run after");
        B::free_vars(vars, buf);
        assert!(dfree(buf));
        close::<B>();
        return;
    }
    if let Some(c) = parent::<B>(test, false) {
        for (what, message) in B::BAD_IMAGES {
            assert!(
                c.stderr
                    .lines()
                    .any(|l| l.starts_with("libgomp: ") && l.contains(message)),
                "{what}: no `libgomp: ...{message}...` line\n{}",
                c.stderr
            );
        }
        let missing = format!("{} device {}", B::PRODUCT, B::DEVICES);
        assert!(
            c.stderr
                .lines()
                .any(|l| l.starts_with("libgomp: ") && l.contains(&missing)),
            "the load on a missing device: no `libgomp: ...{missing}...` line\n{}",
            c.stderr
        );
        assert!(
            c.count_lines("libgomp: ") >= B::BAD_IMAGES.len() + 2,
            "one message per refusal\n{}",
            c.stderr
        );
    }
}

/// Reverse offload: with `requires reverse_offload` the device is offered, the load
/// answers the image's reverse-offload table, and a request the kernel posts for
/// function 0 reaches libgomp's `GOMP_PLUGIN_target_rev` with that function's
/// address from the table, while the kernel runs.
pub fn reverse_offload<B: Backend>(test: &str) {
    if support::is_child(test) {
        open::<B>(REQUIRES_REVERSE_OFFLOAD);
        let img = B::image();
        let (t, rev) = load(0, B::IMAGE_VERSION, &*img, true).expect("load_image");
        assert_eq!(t.len(), B::TABLE_ENTRIES);
        assert!(!rev.is_null(), "a reverse-offload table");
        // SAFETY: the plugin's table has an entry per offload function (one or more).
        let f0 = unsafe { *rev };
        assert_ne!(f0, 0, "function 0's device address");
        let buf = alloc(BUF);
        let vars = B::vars(buf);
        run::<B>(t[0].start as *mut c_void, vars);
        assert_eq!(read(gomp_sym::<c_int>("gcn_rev_count")), 1, "one request");
        let calls: [[u64; 6]; 64] = read(gomp_sym("gcn_rev_calls"));
        assert_eq!(calls[0][0], f0, "the request names function 0");
        assert_eq!(calls[0][5], 0, "on device 0");
        B::free_vars(vars, buf);
        assert!(dfree(buf));
        // SAFETY: the table is the plugin's GOMP_PLUGIN_malloc, libgomp's to free.
        unsafe { libc_free(rev.cast()) };
        close::<B>();
        return;
    }
    parent::<B>(test, true);
}
