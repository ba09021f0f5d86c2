//! Kernel launches of the gcn plugin (docs/gcn-launch.md) against the stand-in HSA
//! runtime of tests/fallback/stub_libhsa.c, which plays the device: its queue thread
//! checks every AQL packet and kernarg block against the spec (each failed comparison
//! prints "stub-hsa: BAD ..."), then performs the script of `STUB_HSA_SCRIPT` on the
//! device side of the output ring and completes the signal. The exported entry points
//! are called as libgomp 16 calls them (a stand-in libgomp recording reverse-offload
//! calls and async completions, tests/fallback/gcn_libgomp.c), each scenario in its own
//! child process (exits and aborts end it). The `session17_*` tests call them as
//! libgomp 17 does (sessions, the table in kernarg memory: docs/gcn-launch.md §1a). A
//! stand-in is not an AMD GPU: this checks the host side of the protocol, not device
//! code.

use gomp_plugin_conformance::support;

mod gcn_image;
use gcn_image::{GcnImage, GcnImageDesc, Kernel};

use gomp_plugin_gcn as _; // links the rlib holding the exported shells
use std::ffi::{c_char, c_int, c_uint, c_void, CString, OsStr};
use std::path::{Path, PathBuf};
use support::api::*;

extern "C" {
    fn GOMP_OFFLOAD_can_run(tgt_fn: *mut c_void) -> bool;
    #[link_name = "free"]
    fn libc_free(p: *mut c_void);
    // OpenACC (the kernel handle is passed where libgomp passes its `fn`).
    fn GOMP_OFFLOAD_openacc_create_thread_data(ord: c_int) -> *mut c_void;
    fn GOMP_OFFLOAD_openacc_destroy_thread_data(data: *mut c_void);
    /// `union goacc_property_value`: a size or a string pointer, in RAX.
    fn GOMP_OFFLOAD_openacc_get_property(ord: c_int, prop: c_uint) -> usize;
    // libgomp 17's sessions.
    fn GOMP_OFFLOAD_session_size() -> usize;
    fn GOMP_OFFLOAD_session_start(session: *mut c_void, ord: c_int);
    fn GOMP_OFFLOAD_session_allocate_target_var_table(
        session: *mut c_void,
        size: usize,
    ) -> *mut c_void;
}

/// GOMP_VERSION_PACK (GOMP_VERSION 3, GOMP_VERSION_GCN 3).
const VER: u32 = 0x30003;
const SCENARIO: &str = "GCN_TEST_SCENARIO";
const LIBGOMP_ENV: &str = "GOMP_PLUGIN_RS_TEST_LIBGOMP";
const IMAGE_ENV: &str = "GOMP_PLUGIN_RS_TEST_IMAGE";

// ---- building the stand-ins ----

/// The recording libgomp with the version nodes of GCC `gcc` (14, 16 or 17).
fn recording_libgomp(dir: &Path, gcc: u32) -> PathBuf {
    let mut nodes = support::RELEASE_NODES[..if gcc == 14 { 2 } else { 4 }].to_vec();
    if gcc == 17 {
        nodes.push(("GOMP_6.0.2", "GOMP_barrier_ext"));
    }
    support::recording_libgomp(dir, &nodes)
}

/// The stand-in runtime with its gfx90a agent (it defines every entry point).
fn gpu_stub(dir: &Path) -> PathBuf {
    let lib = dir.join("libhsa.so");
    support::cc_shared(
        "tests/fallback/stub_libhsa.c",
        &lib,
        &["-DINIT_RESULT=0", "-DONE_GPU=\"gfx90a\"", "-pthread"],
    );
    lib
}

/// Runs scenario `name` of test `test` in a child with the stand-ins (libgomp of GCC
/// `gcc`) and `env`.
fn scenario(test: &str, name: &str, gcc: u32, env: &[(&str, &str)]) -> Option<support::Child> {
    if !support::have_tools(test, &["cc", "xz"]) {
        return None;
    }
    let dir = support::Scratch::new("gcn-launch");
    let lib = gpu_stub(dir.path());
    let gomp = recording_libgomp(dir.path(), gcc);
    let image = dir.join("vadd-gfx90a.hsaco");
    support::unxz_fixture("vadd-gfx90a.hsaco.xz", &image);
    let mut all: Vec<(&str, &OsStr)> = vec![
        ("HSA_RUNTIME_LIB", lib.as_os_str()),
        (LIBGOMP_ENV, gomp.as_os_str()),
        (IMAGE_ENV, image.as_os_str()),
        (SCENARIO, OsStr::new(name)),
        ("GOMP_DEBUG", OsStr::new("1")),
        (
            "GCN_TEST_GCC",
            OsStr::new(if gcc == 17 { "17" } else { "16" }),
        ),
    ];
    all.extend(env.iter().map(|(k, v)| (*k, OsStr::new(*v))));
    let c = support::run_child(test, &all);
    drop(dir);
    Some(c)
}

// ---- the child: libgomp's calls ----

fn gomp_sym<T>(name: &str) -> *mut T {
    support::symbol_of_loaded(&std::env::var_os(LIBGOMP_ENV).expect("libgomp"), name).cast()
}

fn stub_sym<T>(name: &str) -> *mut T {
    support::symbol_of_loaded(&std::env::var_os("HSA_RUNTIME_LIB").expect("stub"), name).cast()
}

/// Where the stand-in loaded `name` (its `stub_hsa_image_symbol`).
fn stand_in_symbol(name: &str) -> u64 {
    let f = stub_sym::<c_void>("stub_hsa_image_symbol");
    // SAFETY: the stand-in's `uint64_t stub_hsa_image_symbol(const char *)`.
    let f: unsafe extern "C" fn(*const c_char) -> u64 = unsafe { std::mem::transmute(f) };
    let c = CString::new(name).unwrap();
    // SAFETY: a NUL-terminated name.
    unsafe { f(c.as_ptr()) }
}

/// Waits (20 s at most) until the recording libgomp has seen `n` async completions,
/// and checks that they came in the order of their launches (async data 1, 2, ... n).
fn completions_in_order(n: usize) {
    let t0 = std::time::Instant::now();
    while (read(gomp_sym::<c_int>("gcn_completion_count")) as usize) < n {
        assert!(t0.elapsed().as_secs() < 20, "completions did not arrive");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let done: [usize; 64] = read(gomp_sym("gcn_completions"));
    let want: Vec<usize> = (1..=n).collect();
    assert_eq!(done[..n], want[..], "completions in order");
}

fn read<T: Copy>(p: *mut T) -> T {
    // SAFETY: a live symbol of a loaded stand-in.
    unsafe { std::ptr::read_volatile(p) }
}

/// NUM_TEAMS and THREAD_LIMIT for all devices, as the compiler passes them.
fn args(teams: isize, threads: isize) -> Vec<usize> {
    vec![
        (teams << 16) as usize | 0x100,
        (threads << 16) as usize | 0x200,
        0,
    ]
}

/// What the child checks after its launches.
struct Session {
    kernel: *mut c_void,
    rev_table: *mut u64,
    out: *mut c_void,
    vars: *mut c_void,
}

/// Opens device 0 (requiring reverse offload when `rev`) and loads the vadd image with
/// its constructors; the kernel handle, and a `tgt_vars` block whose slot 0 points at
/// a device int.
fn open(rev: bool) -> Session {
    support::load_global(&std::env::var_os(LIBGOMP_ENV).expect("libgomp"));
    let image = std::fs::read(std::env::var_os(IMAGE_ENV).expect("image")).expect("image");
    let img = Box::leak(Box::new(GcnImage {
        size: image.len(),
        image: Box::leak(image.into_boxed_slice()).as_ptr(),
    }));
    let names: Vec<CString> = ["_init_array", "_fini_array", "main._omp_fn.0"]
        .iter()
        .map(|n| CString::new(*n).unwrap())
        .collect();
    let kernels: &'static [Kernel] = Box::leak(
        names
            .into_iter()
            .map(|n| Kernel {
                name: Box::leak(n.into_boxed_c_str()).as_ptr(),
                oacc_dims: [0; 3],
                sgpr_count: 0,
                vgpr_count: 48,
            })
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    let desc = Box::leak(Box::new(GcnImageDesc {
        gcn_image: img,
        kernel_count: 3,
        kernel_infos: kernels.as_ptr(),
        ind_func_count: 0,
        global_variable_count: 0,
    }));
    // SAFETY: the entry points as libgomp calls them, with valid out-pointers.
    unsafe {
        let v17 = std::env::var("GCN_TEST_GCC").as_deref() == Ok("17");
        assert_eq!(GOMP_OFFLOAD_version(), if v17 { 4 } else { 3 });
        let mask = if rev { 0x80 } else { 0 };
        assert_eq!(GOMP_OFFLOAD_get_num_devices(mask), 1);
        assert!(GOMP_OFFLOAD_init_device(0), "init_device");
        let mut t: *mut AddrPair = std::ptr::null_mut();
        let mut r: *mut u64 = std::ptr::null_mut();
        let n = GOMP_OFFLOAD_load_image(
            0,
            VER,
            (desc as *const GcnImageDesc).cast(),
            &mut t,
            if rev { &mut r } else { std::ptr::null_mut() },
            std::ptr::null_mut(),
        );
        assert_eq!(n, 2, "one kernel + ICVs");
        let kernel = (*t).start as *mut c_void;
        libc_free(t.cast());
        assert!(GOMP_OFFLOAD_can_run(kernel), "can_run of a loaded kernel");
        assert!(!GOMP_OFFLOAD_can_run(8 as *mut c_void), "can_run of junk");
        let out = GOMP_OFFLOAD_alloc(0, 4);
        let vars = GOMP_OFFLOAD_alloc(0, 8);
        let p = out as u64;
        assert!(GOMP_OFFLOAD_host2dev(0, vars, (&p as *const u64).cast(), 8));
        Session {
            kernel,
            rev_table: r,
            out,
            vars,
        }
    }
}

/// A kernel handle as the OpenACC entry points take it (libgomp passes the handle where
/// the C prototype has a function pointer).
fn kernel_fn(k: *mut c_void) -> Option<unsafe extern "C" fn(*mut c_void)> {
    // SAFETY: same size; the handle is only compared against the live kernels, never
    // called.
    unsafe { std::mem::transmute::<*mut c_void, Option<unsafe extern "C" fn(*mut c_void)>>(k) }
}

fn run(s: &Session, a: &mut [usize]) {
    // A loaded kernel, a device block, a NULL-terminated argument array.
    gomp_plugin_gcn::entry_points::run(0, s.kernel, s.vars, a.as_mut_ptr().cast());
}

fn device_int(s: &Session) -> i32 {
    let mut v = 0i32;
    // SAFETY: a device block of 4 bytes into a local.
    assert!(unsafe { GOMP_OFFLOAD_dev2host(0, (&mut v as *mut i32).cast(), s.out, 4) });
    v
}

/// Closes the device; nothing may be left in the runtime.
fn close() {
    // SAFETY: the entry point.
    assert!(unsafe { GOMP_OFFLOAD_fini_device(0) }, "fini_device");
    let live: [c_int; 5] = read(stub_sym("stub_hsa_live"));
    assert_eq!(
        live, [0; 5],
        "blocks, readers, executables, signals, queues left"
    );
    let bad: c_int = read(stub_sym("stub_hsa_bad"));
    println!("stub-hsa bad checks: {bad}");
}

fn child() {
    let name = std::env::var(SCENARIO).expect("scenario");
    match name.as_str() {
        "run" => {
            let s = open(false);
            run(&s, &mut args(3, 8));
            assert_eq!(device_int(&s), 42, "the device's store");
            let blocks = read(stub_sym::<[c_int; 5]>("stub_hsa_live"))[0];
            run(&s, &mut args(3, 8));
            assert_eq!(
                read(stub_sym::<[c_int; 5]>("stub_hsa_live"))[0],
                blocks,
                "the second launch reuses the kernarg and ephemeral blocks"
            );
            let l: [c_int; 2] = read(stub_sym("stub_hsa_launches"));
            assert_eq!(l, [2, 1], "two launches and _init_array");
            close();
            let l: [c_int; 2] = read(stub_sym("stub_hsa_launches"));
            assert_eq!(l, [2, 2], "_fini_array at fini_device");
        }
        "once" => {
            let s = open(false);
            let teams = std::env::var("TEAMS").map_or(3, |v| v.parse().unwrap());
            let threads = std::env::var("THREADS").map_or(8, |v| v.parse().unwrap());
            run(&s, &mut args(teams, threads));
            close();
        }
        "reverse" => {
            let s = open(true);
            assert!(!s.rev_table.is_null(), "a reverse-offload table");
            // The loaded image's .offload_func_table, as the stand-in relocated it.
            let table = stand_in_symbol(".offload_func_table") as *const u64;
            assert!(!table.is_null(), "the image has an .offload_func_table");
            // SAFETY: libgomp's copy of the table and the loaded one, one entry per
            // offload function (the image has one).
            let (got, want) = unsafe { (*s.rev_table, *table) };
            assert!(
                want != 0 && got == want,
                ".offload_func_table: {got:#x} vs {want:#x}"
            );
            run(&s, &mut args(1, 1));
            let n: c_int = read(gomp_sym("gcn_rev_count"));
            assert_eq!(n, 3, "three requests reached GOMP_PLUGIN_target_rev");
            let calls: [[u64; 6]; 64] = read(gomp_sym("gcn_rev_calls"));
            for (i, c) in calls[..3].iter().enumerate() {
                let i = i as u64;
                assert_eq!(
                    *c,
                    [0xf000 + i, i, 0xa000 + i, 0xb000 + i, 0xc000 + i, 0],
                    "request {i}"
                );
            }
            close();
        }
        "async" => {
            let s = open(false);
            let mut a = args(2, 4);
            for i in 1..=5usize {
                // GOMP_OFFLOAD_async_run's implementation (within this link the exported
                // name is its IFUNC resolver); async_data is an opaque value for libgomp.
                gomp_plugin_gcn::async_run(0, s.kernel, s.vars, a.as_mut_ptr().cast(), i as _);
            }
            completions_in_order(5);
            assert_eq!(device_int(&s), 42);
            close();
        }
        "ends" => {
            let s = open(false);
            run(&s, &mut args(1, 1));
            println!("run returned");
        }
        "acc_exec" => {
            let s = open(false);
            let mut dims: Vec<c_uint> = std::env::var("ACC_DIMS")
                .expect("ACC_DIMS")
                .split(',')
                .map(|v| v.parse().unwrap())
                .collect();
            // A loaded kernel, libgomp's devaddrs block, a 3-entry dims array.
            gomp_plugin_gcn::entry_points::openacc_exec(
                kernel_fn(s.kernel),
                1,
                std::ptr::null_mut(),
                s.vars.cast(),
                dims.as_mut_ptr(),
                std::ptr::null_mut(),
            );
            assert_eq!(device_int(&s), 42, "the device's store through devaddrs");
            close();
        }
        "acc_queue" => acc_queue(),
        "session17_run" => session17_run(),
        "session17_async" => session17_async(),
        "session17_acc" => session17_acc(),
        "acc_props" => acc_props(),
        other => panic!("unknown scenario {other}"),
    }
}

// ---- libgomp 17: sessions, the table in kernarg memory ----

/// A session block as libgomp 17 allocates it (16-byte aligned, session_size bytes).
#[repr(C, align(16))]
struct SessionBlock([u8; 64]);

fn live_blocks() -> c_int {
    read(stub_sym::<[c_int; 5]>("stub_hsa_live"))[0]
}

/// Whether [p, p+n) lies inside one live block of the stand-in's device memory.
fn stand_in_holds(p: *const c_void, n: usize) -> bool {
    let f = stub_sym::<c_void>("stub_hsa_holds");
    // SAFETY: the stand-in's `int stub_hsa_holds(const void *, size_t)`.
    let f: unsafe extern "C" fn(*const c_void, usize) -> c_int = unsafe { std::mem::transmute(f) };
    // SAFETY: only compares addresses.
    unsafe { f(p, n) != 0 }
}

/// Starts a session in `b` and has the plugin place a table of `entries` entries, then
/// writes it as libgomp does: entry 0 the device int, the others junk. Returns the table.
fn session_with_table(b: &mut SessionBlock, entries: usize, out: *mut c_void) -> *mut u64 {
    let p = b.0.as_mut_ptr().cast::<c_void>();
    // SAFETY: libgomp 17's calls on a 16-aligned block of session_size bytes.
    let t = unsafe {
        assert!(GOMP_OFFLOAD_session_size() <= b.0.len());
        GOMP_OFFLOAD_session_start(p, 0);
        GOMP_OFFLOAD_session_allocate_target_var_table(p, 8 * entries)
    }
    .cast::<u64>();
    assert!(
        !t.is_null() && t as usize % 16 == 0,
        "a 16-aligned table: {t:p}"
    );
    assert!(
        stand_in_holds(t.cast(), 8 * entries),
        "the table lies inside a block of device memory (the kernarg block)"
    );
    for i in 0..entries {
        // SAFETY: the plugin's answer has room for `entries` words.
        unsafe {
            t.add(i).write(if i == 0 {
                out as u64
            } else {
                0x1000 + i as u64
            })
        };
    }
    t
}

/// Synchronous launches through sessions whose tables the plugin placed: the kernel
/// stores through entry 0 of the table it finds at kernarg + 0; a reservation no launch
/// claimed goes back at the next one for the same session block; one left at
/// fini_device is freed there (close checks that nothing is left).
fn session17_run() {
    let s = open(false);
    let mut b = SessionBlock([0; 64]);
    let p = b.0.as_mut_ptr().cast::<c_void>();
    let mut a = args(3, 8);
    session_with_table(&mut b, 1, s.out);
    gomp_plugin::edge::shell::run_session::<gomp_plugin_gcn::plugin::Gcn>(
        p,
        s.kernel,
        a.as_mut_ptr().cast(),
    );
    assert_eq!(device_int(&s), 42, "the device's store through the table");
    let blocks = live_blocks();
    // The same session block again, a bigger table (100 entries): the cached block
    // has room, nothing new is allocated.
    session_with_table(&mut b, 100, s.out);
    gomp_plugin::edge::shell::run_session::<gomp_plugin_gcn::plugin::Gcn>(
        p,
        s.kernel,
        a.as_mut_ptr().cast(),
    );
    assert_eq!(device_int(&s), 42);
    assert_eq!(live_blocks(), blocks, "the kernarg block was reused");
    // Reservations no launch claims: the second for the same session block gives the
    // first back, so the count stays put after the first new block.
    session_with_table(&mut b, 1, s.out);
    let after_one = live_blocks();
    for _ in 0..5 {
        session_with_table(&mut b, 1, s.out);
    }
    assert_eq!(
        live_blocks(),
        after_one,
        "unclaimed reservations of one session block do not pile up"
    );
    // A table too big for a cached block (1000 entries): a block of its own, used by
    // its launch.
    session_with_table(&mut b, 1000, s.out);
    gomp_plugin::edge::shell::run_session::<gomp_plugin_gcn::plugin::Gcn>(
        p,
        s.kernel,
        a.as_mut_ptr().cast(),
    );
    assert_eq!(device_int(&s), 42, "the store through a 1000-entry table");
    // One left reserved at fini_device.
    session_with_table(&mut b, 1, s.out);
    println!("session17 run ok");
    close();
}

/// `n` zeroed device ints.
fn device_ints(n: usize) -> Vec<*mut c_void> {
    let zero = 0i32;
    (0..n)
        .map(|_| {
            // SAFETY: the entry points; a 4-byte device block and a host int.
            unsafe {
                let d = GOMP_OFFLOAD_alloc(0, 4);
                assert!(GOMP_OFFLOAD_host2dev(0, d, (&zero as *const i32).cast(), 4));
                d
            }
        })
        .collect()
}

/// The values of device ints.
fn read_ints(ints: &[*mut c_void]) -> Vec<i32> {
    ints.iter()
        .map(|&d| {
            let mut v = 0i32;
            // SAFETY: a 4-byte device block into a local.
            assert!(unsafe { GOMP_OFFLOAD_dev2host(0, (&mut v as *mut i32).cast(), d, 4) });
            v
        })
        .collect()
}

/// async_run through sessions: each table's block is claimed before async_run returns,
/// so libgomp may start the next session in the same block at once; each launch
/// stores through its own table into its own int (a table overwritten by the next
/// session would leave an int at 0).
fn session17_async() {
    let s = open(false);
    let mut b = SessionBlock([0; 64]);
    let p = b.0.as_mut_ptr().cast::<c_void>();
    let mut a = args(2, 4);
    let ints = device_ints(5);
    for i in 1..=5usize {
        session_with_table(&mut b, 1, ints[i - 1]);
        gomp_plugin::edge::shell::async_run_session::<gomp_plugin_gcn::plugin::Gcn>(
            p,
            s.kernel,
            a.as_mut_ptr().cast(),
            i as *mut c_void,
        );
    }
    completions_in_order(5);
    assert_eq!(
        read_ints(&ints),
        [42; 5],
        "each launch stored through its own table"
    );
    println!("session17 async ok");
    close();
}

/// OpenACC launches through sessions, synchronous and on an async queue (claimed when
/// queued: the session block is reused before the queue runs the launch).
fn session17_acc() {
    let s = open(false);
    let mut b = SessionBlock([0; 64]);
    let p = b.0.as_mut_ptr().cast::<c_void>();
    session_with_table(&mut b, 1, s.out);
    let mut dims: [c_uint; 3] = [2, 4, 0];
    gomp_plugin::edge::shell::acc_exec_session::<gomp_plugin_gcn::plugin::Gcn>(
        p,
        kernel_fn(s.kernel),
        1,
        std::ptr::null_mut(),
        dims.as_mut_ptr(),
        std::ptr::null_mut(),
    );
    assert_eq!(device_int(&s), 42, "the store through the table (OpenACC)");
    let ints = device_ints(3);
    // SAFETY: (the block) the entry points with a live queue.
    unsafe {
        let aq = GOMP_OFFLOAD_openacc_async_construct(0);
        assert!(!aq.is_null(), "async_construct");
        for &d in &ints {
            session_with_table(&mut b, 1, d);
            gomp_plugin::edge::shell::acc_async_exec_session::<gomp_plugin_gcn::plugin::Gcn>(
                p,
                kernel_fn(s.kernel),
                1,
                std::ptr::null_mut(),
                dims.as_mut_ptr(),
                std::ptr::null_mut(),
                aq.cast(),
            );
        }
        assert!(GOMP_OFFLOAD_openacc_async_synchronize(aq));
        assert!(GOMP_OFFLOAD_openacc_async_destruct(aq), "async_destruct");
    }
    assert_eq!(
        read_ints(&ints),
        [42; 3],
        "each queued launch stored through its own table"
    );
    println!("session17 acc ok");
    close();
}

// ---- OpenACC ----

/// What the callbacks saw: (their id, the host int they were given).
static CALLBACKS: std::sync::Mutex<Vec<(usize, i32)>> = std::sync::Mutex::new(Vec::new());

/// A queue callback: records its id and the int its data points at then.
unsafe extern "C" fn record(data: *mut c_void) {
    // SAFETY: `data` is a live (id, host int) pair of the child (synchronized before
    // it goes out of scope).
    let (id, p) = unsafe { *data.cast::<(usize, *const i32)>() };
    // SAFETY: as above.
    let v = unsafe { p.read_volatile() };
    CALLBACKS.lock().unwrap().push((id, v));
}

/// The queue scenario: order on one queue (copies, launches, callbacks), test and
/// synchronize, serialize, destroy with pending work. Each launch sleeps, then makes
/// the device int `x*10+1`, so any reordering changes the values read back.
fn acc_queue() {
    let s = open(false);
    let x = s.out;
    let exec = |aq: *mut c_void| {
        let mut dims: [c_uint; 3] = [2, 4, 0];
        // A loaded kernel, the devaddrs block, dims, a live queue.
        gomp_plugin_gcn::entry_points::openacc_async_exec(
            kernel_fn(s.kernel),
            1,
            std::ptr::null_mut(),
            s.vars.cast(),
            dims.as_mut_ptr(),
            std::ptr::null_mut(),
            aq.cast(),
        );
    };
    // SAFETY: (all blocks below) the entry points with live queues, device blocks of
    // 4 bytes and host ints that outlive the synchronization of their queue.
    unsafe {
        let aq = GOMP_OFFLOAD_openacc_async_construct(0);
        assert!(!aq.is_null(), "async_construct");
        assert_eq!(
            GOMP_OFFLOAD_openacc_async_test(aq),
            1,
            "a new queue is idle"
        );
        let (seven, three) = (7i32, 3i32);
        let (mut y1, mut y2, mut y3) = (0i32, 0i32, 0i32);
        let h = |v: &i32| (v as *const i32).cast::<c_void>();
        assert!(GOMP_OFFLOAD_openacc_async_host2dev(0, x, h(&seven), 4, aq));
        exec(aq);
        exec(aq);
        assert!(GOMP_OFFLOAD_openacc_async_dev2host(
            0,
            (&mut y1 as *mut i32).cast(),
            x,
            4,
            aq
        ));
        let mut cb1 = (1usize, &y1 as *const i32);
        GOMP_OFFLOAD_openacc_async_queue_callback(
            aq,
            record,
            (&mut cb1 as *mut (usize, *const i32)).cast(),
        );
        assert_eq!(
            GOMP_OFFLOAD_openacc_async_test(aq),
            0,
            "busy while launches sleep"
        );
        assert!(GOMP_OFFLOAD_openacc_async_host2dev(0, x, h(&three), 4, aq));
        exec(aq);
        assert!(GOMP_OFFLOAD_openacc_async_dev2host(
            0,
            (&mut y2 as *mut i32).cast(),
            x,
            4,
            aq
        ));
        let mut cb2 = (2usize, &y2 as *const i32);
        GOMP_OFFLOAD_openacc_async_queue_callback(
            aq,
            record,
            (&mut cb2 as *mut (usize, *const i32)).cast(),
        );
        let other = GOMP_OFFLOAD_alloc(0, 4);
        assert!(GOMP_OFFLOAD_openacc_async_dev2dev(0, other, x, 4, aq));
        assert!(GOMP_OFFLOAD_openacc_async_dev2host(
            0,
            (&mut y3 as *mut i32).cast(),
            other,
            4,
            aq
        ));
        assert!(GOMP_OFFLOAD_openacc_async_synchronize(aq));
        assert_eq!(
            GOMP_OFFLOAD_openacc_async_test(aq),
            1,
            "idle after synchronize"
        );
        let (y1, y2, y3) = (
            std::ptr::read_volatile(&y1),
            std::ptr::read_volatile(&y2),
            std::ptr::read_volatile(&y3),
        );
        assert_eq!((y1, y2, y3), (711, 31, 31), "copies and launches in order");
        assert_eq!(
            *CALLBACKS.lock().unwrap(),
            [(1, 711), (2, 31)],
            "callbacks in order, after the work queued before them"
        );
        // serialize: aq2's copy waits for aq's launch.
        let aq2 = GOMP_OFFLOAD_openacc_async_construct(0);
        assert!(!aq2.is_null() && aq2 != aq, "a second queue");
        let five = 5i32;
        let mut y4 = 0i32;
        assert!(GOMP_OFFLOAD_openacc_async_host2dev(0, x, h(&five), 4, aq));
        exec(aq);
        assert!(GOMP_OFFLOAD_openacc_async_serialize(aq, aq2));
        assert!(GOMP_OFFLOAD_openacc_async_dev2host(
            0,
            (&mut y4 as *mut i32).cast(),
            x,
            4,
            aq2
        ));
        assert!(GOMP_OFFLOAD_openacc_async_synchronize(aq2));
        assert_eq!(
            std::ptr::read_volatile(&y4),
            51,
            "aq2 waited for aq's launch"
        );
        // destroy with pending work: it runs first.
        let nine = 9i32;
        let mut y5 = 0i32;
        assert!(GOMP_OFFLOAD_openacc_async_host2dev(0, x, h(&nine), 4, aq2));
        exec(aq2);
        assert!(GOMP_OFFLOAD_openacc_async_dev2host(
            0,
            (&mut y5 as *mut i32).cast(),
            x,
            4,
            aq2
        ));
        assert!(GOMP_OFFLOAD_openacc_async_destruct(aq2), "async_destruct");
        assert_eq!(
            std::ptr::read_volatile(&y5),
            91,
            "pending work ran before destruct"
        );
        assert!(GOMP_OFFLOAD_openacc_async_destruct(aq), "async_destruct");
        let live: [c_int; 5] = read(stub_sym("stub_hsa_live"));
        assert_eq!(live[4], 1, "only the synchronous queue is left");
        assert!(GOMP_OFFLOAD_free(0, other));
    }
    println!("acc queue ok");
    close();
}

fn acc_props() {
    let _s = open(false);
    let text = |ord: c_int, prop: c_uint| {
        // SAFETY: the entry point; a string property is NULL or a C string.
        let p = unsafe { GOMP_OFFLOAD_openacc_get_property(ord, prop) } as *const c_char;
        if p.is_null() {
            None
        } else {
            // SAFETY: as above.
            Some(
                unsafe { std::ffi::CStr::from_ptr(p) }
                    .to_str()
                    .unwrap()
                    .to_owned(),
            )
        }
    };
    // SAFETY: (all blocks below) the entry points.
    unsafe {
        assert_eq!(GOMP_OFFLOAD_openacc_get_property(0, 1), 16 << 30, "MEMORY");
        assert_eq!(GOMP_OFFLOAD_openacc_get_property(0, 2), 0, "FREE_MEMORY");
        assert_eq!(GOMP_OFFLOAD_openacc_get_property(0, 0x999), 0, "unknown");
        assert_eq!(GOMP_OFFLOAD_openacc_get_property(1, 1), 0, "no device 1");
    }
    assert_eq!(text(0, 0x10001).as_deref(), Some("gfx90a"), "NAME");
    assert_eq!(text(0, 0x10002).as_deref(), Some("AMD"), "VENDOR");
    assert_eq!(
        text(0, 0x10003).as_deref(),
        Some("HSA Runtime 1.4"),
        "DRIVER"
    );
    assert_eq!(text(0, 0x10001), text(0, 0x10001), "stable");
    assert_eq!(text(1, 0x10001), None, "no device 1");
    // SAFETY: the entry points.
    unsafe {
        let t = GOMP_OFFLOAD_openacc_create_thread_data(0);
        assert!(!t.is_null(), "thread data of device 0");
        GOMP_OFFLOAD_openacc_destroy_thread_data(t);
        assert!(
            GOMP_OFFLOAD_openacc_create_thread_data(3).is_null(),
            "no device 3"
        );
    }
    println!("acc props ok");
    close();
}

/// The child's test, reached through each parent test below.
fn dispatch(test: &str) -> bool {
    if support::is_child(test) {
        child();
        return true;
    }
    false
}

fn no_bad(c: &support::Child) {
    c.assert_stderr_lacks("stub-hsa: BAD")
        .assert_stderr_lacks("panicked");
}

#[test]
fn run_checks_packet_console_and_stores() {
    const T: &str = "run_checks_packet_console_and_stores";
    if dispatch(T) {
        return;
    }
    let env = [
        ("STUB_HSA_SCRIPT", "print:3,long,types,store:0:42"),
        ("STUB_HSA_EXPECT_GRID", "3,8"),
    ];
    let Some(c) = scenario(T, "run", 16, &env) else {
        return;
    };
    c.assert_passed()
        .assert_line("stub-hsa: packet _init_array grid=1,64,1 wg=1,64,1 lds=65536")
        .assert_line("stub-hsa: packet main._omp_fn.0 grid=3,64,8 wg=1,64,8 lds=65536")
        .assert_line("stub-hsa: packet _fini_array grid=1,64,1 wg=1,64,1 lds=65536")
        .assert_stderr("launch 2: kernel main._omp_fn.0 on device 0: 3 team(s) x 8 thread(s)");
    no_bad(&c);
    let out = &c.stdout;
    assert_eq!(out.matches("line 0\nline 1\nline 2\n").count(), 2, "{out}");
    let long = format!("long:{}\n", "x".repeat(294));
    assert!(
        out.contains(&long),
        "the 300-byte message over two slots: {out}"
    );
    for want in [
        "ival=-42\n",
        "dval=2.500000\n",
        "str=abc\n",
        "GCN print buffer error!\n",
    ] {
        assert!(out.contains(want), "{want:?} in {out}");
    }
    assert!(out.contains("stub-hsa bad checks: 0"), "{out}");
}

#[test]
fn ring_wraps_around_1024_slots_in_order() {
    const T: &str = "ring_wraps_around_1024_slots_in_order";
    if dispatch(T) {
        return;
    }
    // 16 teams on 8 CUs: 2 teams per CU, LDS 32768; THREAD_LIMIT 0: 16 threads.
    let env = [
        ("STUB_HSA_SCRIPT", "print:3000"),
        ("STUB_HSA_EXPECT_GRID", "16,16"),
        ("TEAMS", "40"),
        ("THREADS", "0"),
    ];
    let Some(c) = scenario(T, "once", 16, &env) else {
        return;
    };
    c.assert_passed()
        .assert_line("stub-hsa: packet main._omp_fn.0 grid=16,64,16 wg=1,64,16 lds=32768");
    no_bad(&c);
    // (The first line follows libtest's "test ... " on the same line.)
    let lines: Vec<&str> = c
        .stdout
        .lines()
        .filter_map(|l| l.find("line ").map(|i| &l[i..]))
        .collect();
    assert_eq!(lines.len(), 3000, "3000 lines, none lost");
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(*l, format!("line {i}"), "in order");
    }
}

#[test]
fn environment_overrides_shape_the_packet() {
    const T: &str = "environment_overrides_shape_the_packet";
    if dispatch(T) {
        return;
    }
    let env = [
        ("STUB_HSA_SCRIPT", "print:1"),
        ("GCN_NUM_TEAMS", "50"),
        ("GCN_NUM_THREADS", "4"),
        ("GCN_STACK_SIZE", "65536"),
        ("GCN_TEAM_ARENA_SIZE", "4096"),
        ("GCN_HEAP_SIZE", "1048576"),
        ("GOMP_GCN_LOWLAT_POOL", "1000"),
        ("STUB_HSA_EXPECT_GRID", "50,4"),
    ];
    let Some(c) = scenario(T, "once", 16, &env) else {
        return;
    };
    c.assert_passed()
        .assert_line("stub-hsa: packet main._omp_fn.0 grid=50,64,4 wg=1,64,4 lds=1000")
        .assert_line("stub-hsa: packet _init_array grid=1,64,1 wg=1,64,1 lds=1000");
    no_bad(&c);
    // Bad values: one libgomp message each, the defaults used (the stand-in expects
    // the packet the arguments give, and the default LDS).
    let env = [
        ("GCN_NUM_TEAMS", "many"),
        ("GCN_NUM_THREADS", "zero"),
        ("GOMP_GCN_LOWLAT_POOL", "big"),
        ("STUB_HSA_EXPECT_LDS", "65536"),
        ("STUB_HSA_EXPECT_GRID", "3,8"),
    ];
    let Some(c) = scenario(T, "once", 16, &env) else {
        return;
    };
    c.assert_passed()
        .assert_line_starts("libgomp: Invalid value 'many' for GCN_NUM_TEAMS")
        .assert_line_starts("libgomp: Invalid value 'big' for GOMP_GCN_LOWLAT_POOL");
    no_bad(&c);
    assert_eq!(c.count_lines("libgomp: Invalid value"), 3, "{}", c.stderr);
}

#[test]
fn stand_in_comparisons_can_fail() {
    const T: &str = "stand_in_comparisons_can_fail";
    if dispatch(T) {
        return;
    }
    // A wrong expected grid and a GCC 14 LDS layout the plugin (libgomp 16) does not use.
    let env = [
        ("STUB_HSA_EXPECT_GRID", "4,4"),
        ("GOMP_GCN_LOWLAT_POOL", "0"),
        ("STUB_HSA_LOWLAT_HEAP", "40"),
    ];
    let Some(c) = scenario(T, "once", 16, &env) else {
        return;
    };
    c.assert_passed()
        .assert_line("stub-hsa: BAD main._omp_fn.0: grid 3 teams x 8 threads, want 4 x 4")
        .assert_line("stub-hsa: BAD main._omp_fn.0: group segment 56, want 48");
}

#[test]
fn libgomp_14_lds_layout() {
    const T: &str = "libgomp_14_lds_layout";
    if dispatch(T) {
        return;
    }
    let env = [
        ("GOMP_GCN_LOWLAT_POOL", "0"),
        ("STUB_HSA_LOWLAT_HEAP", "40"),
    ];
    let Some(c) = scenario(T, "once", 14, &env) else {
        return;
    };
    c.assert_passed()
        .assert_stderr("libgomp 14 LDS layout")
        .assert_line("stub-hsa: packet main._omp_fn.0 grid=3,64,8 wg=1,64,8 lds=48");
    no_bad(&c);
}

#[test]
fn reverse_offload_through_the_ring() {
    const T: &str = "reverse_offload_through_the_ring";
    if dispatch(T) {
        return;
    }
    let env = [("STUB_HSA_SCRIPT", "print:1,rev:3,print:1")];
    let Some(c) = scenario(T, "reverse", 16, &env) else {
        return;
    };
    c.assert_passed()
        .assert_stderr("device 0: reverse offload of fn 0xf002 (2 mapping(s))");
    no_bad(&c);
    assert_eq!(c.stdout.matches("line 0\n").count(), 2, "{}", c.stdout);
}

#[test]
fn async_run_completes_in_order() {
    const T: &str = "async_run_completes_in_order";
    if dispatch(T) {
        return;
    }
    let env = [
        ("STUB_HSA_SCRIPT", "sleep:2,print:1,store:0:42"),
        ("STUB_HSA_EXPECT_GRID", "2,4"),
    ];
    let Some(c) = scenario(T, "async", 16, &env) else {
        return;
    };
    c.assert_passed();
    no_bad(&c);
    assert_eq!(c.stdout.matches("line 0\n").count(), 5, "{}", c.stdout);
}

/// A scenario whose kernel ends the program: its exit status and output.
fn ends(test: &str, script: &str, debug: bool) -> Option<support::Child> {
    let mut env = vec![("STUB_HSA_SCRIPT", script)];
    if debug {
        env.push(("GCN_DEBUG", "1"));
    }
    let c = scenario(test, "ends", 16, &env)?;
    assert!(!c.stdout.contains("run returned"), "{}", c.stdout);
    no_bad(&c);
    Some(c)
}

#[test]
fn device_exit_and_abort_end_the_program() {
    const T: &str = "device_exit_and_abort_end_the_program";
    if dispatch(T) {
        return;
    }
    let Some(c) = ends(T, "print:1,exit:7", false) else {
        return;
    };
    assert_eq!(c.code, Some(7), "exit(7) on the device: {}", c.stderr);
    assert!(c.stdout.contains("line 0\n"), "output drained before exit");
    let c = ends(T, "exit:0", false).unwrap();
    assert_eq!(c.code, Some(0), "exit(0)");
    let c = ends(T, "abort", true).unwrap();
    assert_eq!(c.code, None, "abort: killed by SIGABRT");
    assert!(c.stdout.contains("GCN Kernel Aborted\n"), "{}", c.stdout);
    c.assert_line("GCN Kernel aborted");
    let c = ends(T, "abort", false).unwrap();
    c.assert_stderr_lacks("GCN Kernel aborted");
    let c = ends(T, "signal:11", false).unwrap();
    assert_eq!(c.code, None, "another signal: abort");
    let c = ends(T, "corrupt", false).unwrap();
    assert_eq!(c.code, None);
    c.assert_line_starts("libgomp: Possible kernel exit value corruption")
        .assert_stderr("0x12345678");
    let c = ends(T, "queue_error", false).unwrap();
    assert_eq!(c.code, Some(1), "GOMP_PLUGIN_fatal");
    c.assert_line("libgomp: GCN fatal error: Asynchronous queue error")
        .assert_line("Runtime message: stub error text");
}

#[test]
fn ring_overflow_is_reported() {
    const T: &str = "ring_overflow_is_reported";
    if dispatch(T) {
        return;
    }
    let env = [("STUB_HSA_SCRIPT", "overflow")];
    let Some(c) = scenario(T, "once", 16, &env) else {
        return;
    };
    c.assert_passed();
    no_bad(&c);
    assert_eq!(
        c.stdout.matches("GCN print buffer overflowed.\n").count(),
        1,
        "{}",
        c.stdout
    );
}

#[test]
fn openacc_exec_grid_and_kernargs() {
    const T: &str = "openacc_exec_grid_and_kernargs";
    if dispatch(T) {
        return;
    }
    // (libgomp's dims, the grid the spec gives on 8 CUs, its LDS.)
    for (dims, grid, lds) in [
        ("3,5,0", "3,5", 65536),
        ("0,0,0", "32,8", 16384),
        ("0,4,32", "64,4", 8192),
        ("4,0,0", "4,16", 65536),
    ] {
        let env = [
            ("STUB_HSA_SCRIPT", "store:0:42"),
            ("STUB_HSA_OPENACC", "1"),
            ("STUB_HSA_EXPECT_GRID", grid),
            ("ACC_DIMS", dims),
        ];
        let Some(c) = scenario(T, "acc_exec", 16, &env) else {
            return;
        };
        let (x, z) = grid.split_once(',').unwrap();
        let wz = z.parse::<u32>().unwrap().min(16);
        c.assert_passed().assert_line(&format!(
            "stub-hsa: packet main._omp_fn.0 grid={x},64,{z} wg=1,64,{wz} lds={lds}"
        ));
        no_bad(&c);
    }
    // The stand-in notices an OpenMP-style expectation (a team arena) it does not get.
    let env = [
        ("STUB_HSA_SCRIPT", "store:0:42"),
        ("STUB_HSA_EXPECT_GRID", "3,6"),
        ("ACC_DIMS", "3,5,0"),
    ];
    let c = scenario(T, "acc_exec", 16, &env).unwrap();
    c.assert_passed()
        .assert_line("stub-hsa: BAD main._omp_fn.0: grid 3 teams x 5 threads, want 3 x 6")
        .assert_line(
            "stub-hsa: BAD main._omp_fn.0: arena 0 / stack 32768 per team/wavefront, want 65536 / 32768",
        );
}

#[test]
fn openacc_async_queues_order_serialize_destroy() {
    const T: &str = "openacc_async_queues_order_serialize_destroy";
    if dispatch(T) {
        return;
    }
    let env = [
        ("STUB_HSA_SCRIPT", "sleep:20,step:0"),
        ("STUB_HSA_OPENACC", "1"),
        ("STUB_HSA_EXPECT_GRID", "2,4"),
    ];
    let Some(c) = scenario(T, "acc_queue", 16, &env) else {
        return;
    };
    c.assert_passed();
    no_bad(&c);
    assert!(c.stdout.contains("acc queue ok"), "{}", c.stdout);
    assert!(c.stdout.contains("stub-hsa bad checks: 0"), "{}", c.stdout);
}

#[test]
fn openacc_properties_and_thread_data() {
    const T: &str = "openacc_properties_and_thread_data";
    if dispatch(T) {
        return;
    }
    let Some(c) = scenario(T, "acc_props", 16, &[]) else {
        return;
    };
    c.assert_passed()
        .assert_line_starts("libgomp: no gcn device 3");
    no_bad(&c);
    assert!(c.stdout.contains("acc props ok"), "{}", c.stdout);
}

/// Runs scenario `session17_<name>` (libgomp 17) and checks that it passed, said
/// "session17 <name> ok", and that the stand-in found nothing wrong; false when the
/// tools to run it are missing (`scenario`).
fn session17(test: &str, name: &str, env: &[(&str, &str)]) -> bool {
    let Some(c) = scenario(test, &format!("session17_{name}"), 17, env) else {
        return false;
    };
    c.assert_passed();
    assert!(
        c.stdout.contains(&format!("session17 {name} ok")),
        "{}",
        c.stdout
    );
    no_bad(&c);
    assert!(c.stdout.contains("stub-hsa bad checks: 0"), "{}", c.stdout);
    true
}

#[test]
fn session17_tables_in_kernarg_memory_run() {
    const T: &str = "session17_tables_in_kernarg_memory_run";
    if dispatch(T) {
        return;
    }
    let dir = support::Scratch::new("gcn-session17");
    let trace = dir.join("trace");
    let env = [
        ("STUB_HSA_SCRIPT", "store:0:42"),
        ("STUB_HSA_TRACE", trace.to_str().unwrap()),
    ];
    if !session17(T, "run", &env) {
        return;
    }
    let t = std::fs::read_to_string(&trace).expect("the stand-in's trace");
    // Three offload launches, each with its argument inside its kernarg block, at
    // kernarg + 270416 (the kernarg block is 274432 bytes under libgomp 17, or larger
    // for the 1000-entry table).
    let args: Vec<&str> = t.lines().filter(|l| l.starts_with("arg ")).collect();
    assert_eq!(
        args.iter().filter(|l| l.ends_with("where=kernarg")).count(),
        3,
        "{t}"
    );
    assert_eq!(
        args.iter().filter(|l| l.ends_with("where=none")).count(),
        2,
        "init + fini: {t}"
    );
    for l in t
        .lines()
        .filter(|l| l.starts_with("ka ") && !l.contains("dummy1=0 "))
    {
        let k = l
            .split(' ')
            .find_map(|w| w.strip_prefix("out="))
            .and_then(|o| o.split('+').next())
            .unwrap();
        assert!(
            l.contains(&format!("dummy1={k}+0x42050 ")),
            "the table at kernarg + 270416: {l}"
        );
    }
    assert!(t.contains("region=kernarg size=274432"), "{t}");
    assert!(
        !t.contains("region=kernarg size=270408"),
        "no block without room for a table: {t}"
    );
}

#[test]
fn session17_tables_in_kernarg_memory_async_run() {
    const T: &str = "session17_tables_in_kernarg_memory_async_run";
    if dispatch(T) {
        return;
    }
    let env = [("STUB_HSA_SCRIPT", "sleep:2,store:0:42")];
    // Skipped (false) when the tools are missing; the checks are session17's.
    session17(T, "async", &env);
}

#[test]
fn session17_tables_in_kernarg_memory_openacc() {
    const T: &str = "session17_tables_in_kernarg_memory_openacc";
    if dispatch(T) {
        return;
    }
    let env = [
        ("STUB_HSA_SCRIPT", "sleep:2,store:0:42"),
        ("STUB_HSA_OPENACC", "1"),
    ];
    // Skipped (false) when the tools are missing; the checks are session17's.
    session17(T, "acc", &env);
}
