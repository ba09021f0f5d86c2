//! The gcn plugin's exported entry points against the stand-in HSA runtime of
//! tests/fallback/stub_libhsa.c, built here in each of its forms (as
//! tests/host_fallback.sh section 2c builds them): no runtime at all, one lacking
//! required entry points, one whose `hsa_init` fails, one without a GPU agent, and one
//! with a gfx90a agent serving memory from host memory and executables from fake
//! addresses. With the last, under a stand-in libgomp 16 (tests/fake_libgomp), the
//! device is opened, memory is written, copied, filled and read back, blocks are
//! freed, real GCC 16 images (tests/fixtures/gcn) are loaded and unloaded, and wrong
//! calls must answer by libgomp's error convention: the Rust port of
//! tests/fallback/gcn_calls.c. A stand-in is not an AMD GPU: this checks the plugin's
//! HSA call sequence and bookkeeping, not behaviour on hardware.

use gomp_plugin_conformance::support;

mod gcn_image;
use gcn_image::{GcnImage, GcnImageDesc, Kernel};

use gomp_plugin_gcn as _; // links the rlib holding the exported shells
use std::ffi::{c_int, c_uint, c_void, CString, OsStr};
use std::path::Path;
use support::api::*;

const NO_RUNTIME: &str = "/nonexistent/libhsa-runtime64.so.1";
/// libgomp-plugin.h: GOMP_OFFLOAD_CAP_OPENMP_400 | GOMP_OFFLOAD_CAP_OPENACC_200.
const GCN_CAPS: u32 = 12;
/// libgomp-plugin.h: OFFLOAD_TARGET_TYPE_GCN.
const GCN_TYPE: c_int = 8;
/// GOMP_VERSION_PACK (GOMP_VERSION 3, GOMP_VERSION_GCN 3).
const VER: u32 = 0x30003;

/// The stand-in libgomp a child loads first, when set.
const LIBGOMP_ENV: &str = "GOMP_PLUGIN_RS_TEST_LIBGOMP";
/// The directory holding the decompressed fixture images.
const IMAGES_ENV: &str = "GOMP_PLUGIN_RS_TEST_IMAGES";

extern "C" {
    fn GOMP_OFFLOAD_can_run(tgt_fn: *mut c_void) -> bool;
    #[link_name = "free"]
    fn libc_free(p: *mut c_void);
}

/// The calls of a child without a usable device: the answers every failure form
/// shares. No libgomp is loaded, so the version is 0 and messages go to stderr.
fn calls_without_device() {
    // SAFETY: the plugin's C entry points, called with device numbers it must refuse.
    unsafe {
        assert_eq!(GOMP_OFFLOAD_version(), 0, "no libgomp: version 0");
        assert_eq!(name(), "gcn");
        assert_eq!(GOMP_OFFLOAD_get_caps(), GCN_CAPS);
        assert_eq!(GOMP_OFFLOAD_get_type(), GCN_TYPE);
        assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 0, "get_num_devices");
        assert!(!GOMP_OFFLOAD_init_device(0), "init_device 0");
        assert!(GOMP_OFFLOAD_alloc(0, 8).is_null(), "alloc");
        assert!(
            GOMP_OFFLOAD_fini_device(0),
            "fini_device of an unopened device"
        );
        assert!(
            !GOMP_OFFLOAD_can_run(std::ptr::dangling_mut::<c_void>()),
            "can_run"
        );
    }
}

/// Builds `tests/fallback/stub_libhsa.c` with `flags` into `dir/libhsa.so`; its
/// stub_names.h stubs every table entry the C file does not define (`defined`).
fn build_stub(dir: &Path, flags: &[&str], defined: &[&str]) -> std::path::PathBuf {
    support::write_stub_names(dir, "gcn", defined);
    let include = format!("-I{}", dir.display());
    let mut all = vec![include.as_str()];
    all.extend(flags);
    let lib = dir.join("libhsa.so");
    support::cc_shared("tests/fallback/stub_libhsa.c", &lib, &all);
    lib
}

/// The entries the stand-in defines in its forms without a GPU agent.
const DEFINED_NO_GPU: [&str; 3] = ["hsa_init", "hsa_status_string", "hsa_iterate_agents"];

/// The stand-in with a gfx90a agent: it defines every entry point itself (a table
/// entry it lacked would make the plugin report the runtime incomplete).
fn gpu_stub(dir: &Path) -> std::path::PathBuf {
    build_stub(dir, &["-DINIT_RESULT=0", "-DONE_GPU=\"gfx90a\""], &[])
}

/// Runs `test` in a child against the runtime `lib` (no libgomp) with `GOMP_DEBUG=1`.
fn child_on(test: &str, lib: &OsStr) -> support::Child {
    let env = [("HSA_RUNTIME_LIB", lib), ("GOMP_DEBUG", OsStr::new("1"))];
    let c = support::run_child(test, &env);
    c.assert_passed()
        .assert_line_starts("libgomp: gcn plugin (gomp-plugin-rs ")
        .assert_stderr("does not support no libgomp; not offloading to AMD GPUs")
        .assert_line_starts("libgomp: no gcn device 0")
        .assert_stderr_lacks("panicked")
        .assert_stderr_lacks("internal error");
    c
}

#[test]
fn no_runtime() {
    const T: &str = "no_runtime";
    if support::is_child(T) {
        return calls_without_device();
    }
    child_on(T, OsStr::new(NO_RUNTIME)).assert_line_starts(&format!(
        "gcn (gomp-plugin-rs): no HSA devices: cannot load {NO_RUNTIME}"
    ));
}

#[test]
fn runtime_missing_required_entries() {
    const T: &str = "runtime_missing_required_entries";
    if support::is_child(T) {
        return calls_without_device();
    }
    if !support::have_tools(T, &["cc"]) {
        return;
    }
    let dir = support::Scratch::new("stub-libhsa");
    let lib = build_stub(dir.path(), &["-DPARTIAL", "-DINIT_RESULT=0"], &[]);
    child_on(T, lib.as_os_str())
        .assert_line_starts("gcn (gomp-plugin-rs): no HSA devices: ")
        .assert_stderr("is missing 'hsa_shut_down'");
}

#[test]
fn hsa_init_fails() {
    const T: &str = "hsa_init_fails";
    if support::is_child(T) {
        return calls_without_device();
    }
    if !support::have_tools(T, &["cc"]) {
        return;
    }
    let dir = support::Scratch::new("stub-libhsa");
    // 0x1000: HSA_STATUS_ERROR; hsa_status_string answers "stub error text".
    let lib = build_stub(dir.path(), &["-DINIT_RESULT=0x1000"], &DEFINED_NO_GPU);
    child_on(T, lib.as_os_str())
        .assert_line_starts("gcn (gomp-plugin-rs): no HSA devices: hsa_init error: stub error text")
        .assert_stderr_lacks("is missing");
}

#[test]
fn runtime_without_gpu_agent() {
    const T: &str = "runtime_without_gpu_agent";
    if support::is_child(T) {
        return calls_without_device();
    }
    if !support::have_tools(T, &["cc"]) {
        return;
    }
    let dir = support::Scratch::new("stub-libhsa");
    let lib = build_stub(dir.path(), &["-DINIT_RESULT=0"], &DEFINED_NO_GPU);
    child_on(T, lib.as_os_str())
        .assert_line_starts("gcn (gomp-plugin-rs): HSA runtime loaded, but no GPU agent: 0 devices")
        .assert_stderr_lacks("no HSA devices");
}

/// The child of [`gpu_agent_is_a_device`]: the agent is device 0, opened and closed.
fn one_device() {
    // SAFETY: the plugin's C entry points with valid arguments.
    unsafe {
        assert_eq!(GOMP_OFFLOAD_version(), 0, "no libgomp (starts the logging)");
        assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 1, "the stand-in's agent");
        assert_eq!(
            GOMP_OFFLOAD_get_num_devices(0x80),
            1,
            "requires reverse_offload: supported"
        );
        assert!(GOMP_OFFLOAD_init_device(0), "init_device");
        assert!(GOMP_OFFLOAD_fini_device(0), "fini_device");
    }
}

#[test]
fn gpu_agent_is_a_device() {
    const T: &str = "gpu_agent_is_a_device";
    if support::is_child(T) {
        return one_device();
    }
    if !support::have_tools(T, &["cc"]) {
        return;
    }
    let dir = support::Scratch::new("stub-libhsa");
    let lib = gpu_stub(dir.path());
    // No switch needed any more; the obsolete one is accepted and ignored.
    for obsolete in [false, true] {
        let mut env = vec![
            ("HSA_RUNTIME_LIB", lib.as_os_str()),
            ("GOMP_DEBUG", OsStr::new("1")),
        ];
        if obsolete {
            env.push(("GOMP_PLUGIN_RS_GCN_EXPERIMENTAL", OsStr::new("1")));
        }
        let c = support::run_child(T, &env);
        c.assert_passed()
            .assert_line_starts("gcn (gomp-plugin-rs): 1 GPU agent(s) [\"gfx90a\"]: 1 device(s)")
            .assert_line_starts("gcn (gomp-plugin-rs): device 0: gfx90a opened (base profile")
            .assert_line_starts("gcn (gomp-plugin-rs): device 0: 8 compute units")
            .assert_stderr_lacks("panicked");
        if obsolete {
            c.assert_stderr("GOMP_PLUGIN_RS_GCN_EXPERIMENTAL is obsolete and ignored");
        } else {
            c.assert_stderr_lacks("GOMP_PLUGIN_RS_GCN_EXPERIMENTAL");
        }
    }
}

// ---- The stand-in's gfx90a agent, driven as libgomp drives a device ----

/// Kernel entries naming `names` (kept alive by the returned strings).
fn kernels(names: &[(&str, i32, i32)]) -> (Vec<CString>, Vec<Kernel>) {
    let s: Vec<CString> = names
        .iter()
        .map(|(n, _, _)| CString::new(*n).expect("kernel name"))
        .collect();
    let k = s
        .iter()
        .zip(names)
        .map(|(c, &(_, sgpr, vgpr))| Kernel {
            name: c.as_ptr(),
            oacc_dims: [0; 3],
            sgpr_count: sgpr,
            vgpr_count: vgpr,
        })
        .collect();
    (s, k)
}

fn desc(img: &GcnImage, k: &[Kernel], ind: c_uint, vars: c_uint) -> GcnImageDesc {
    GcnImageDesc {
        gcn_image: img,
        kernel_count: k.len() as c_uint,
        kernel_infos: k.as_ptr(),
        ind_func_count: ind,
        global_variable_count: vars,
    }
}

/// The stand-in's live-object counters: memory blocks, code object readers, executables.
fn live(lib: &OsStr) -> [c_int; 3] {
    let p = support::symbol_of_loaded(lib, "stub_hsa_live").cast::<[c_int; 3]>();
    // SAFETY: the stand-in's `int stub_hsa_live[3]`, updated only by calls made here.
    unsafe { p.read_volatile() }
}

/// Loads `desc` on device 0; the table (freed here) or the -1 answer.
fn load(d: &GcnImageDesc) -> Result<Vec<AddrPair>, c_int> {
    load_on(0, VER, d)
}

fn load_on(ord: c_int, version: u32, d: &GcnImageDesc) -> Result<Vec<AddrPair>, c_int> {
    let mut t: *mut AddrPair = std::ptr::null_mut();
    // SAFETY: a descriptor mkoffload's way, a valid table out-pointer; the table is
    // the plugin's GOMP_PLUGIN_malloc (the stand-in libgomp's malloc) and freed here.
    unsafe {
        let n = GOMP_OFFLOAD_load_image(
            ord,
            version,
            (d as *const GcnImageDesc).cast(),
            &mut t,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        if n < 0 {
            assert!(t.is_null(), "a failed load_image set the table");
            return Err(n);
        }
        assert!(!t.is_null(), "load_image answered {n} without a table");
        let v = std::slice::from_raw_parts(t, n as usize).to_vec();
        libc_free(t.cast());
        Ok(v)
    }
}

/// The child's whole device session (tests/fallback/gcn_calls.c's checks).
fn device_session() {
    let lib = std::env::var_os("HSA_RUNTIME_LIB").expect("the parent names the stand-in");
    support::load_global(&std::env::var_os(LIBGOMP_ENV).expect("the parent names a libgomp"));
    let images = std::path::PathBuf::from(std::env::var_os(IMAGES_ENV).expect("images"));
    let read = |f: &str| std::fs::read(images.join(f)).expect("read a fixture image");
    // Where the stand-in loaded a symbol of the last image that has it.
    let loaded_at = |s: &str| {
        let f = support::symbol_of_loaded(&lib, "stub_hsa_image_symbol");
        // SAFETY: the stand-in's `uint64_t stub_hsa_image_symbol(const char *)`.
        let f: unsafe extern "C" fn(*const std::ffi::c_char) -> u64 =
            unsafe { std::mem::transmute(f) };
        let c = CString::new(s).unwrap();
        // SAFETY: a NUL-terminated name.
        let a = unsafe { f(c.as_ptr()) } as usize;
        assert_ne!(a, 0, "the stand-in loaded no symbol {s}");
        a
    };
    // SAFETY: (the whole session) the plugin's C entry points, called as libgomp calls
    // them, with valid host buffers, device blocks it returned, or values it must refuse.
    unsafe {
        assert_eq!(GOMP_OFFLOAD_version(), 3, "libgomp 16's GOMP_VERSION");
        assert_eq!(
            GOMP_OFFLOAD_get_num_devices(0x20),
            0,
            "requires unified_shared_memory"
        );
        assert_eq!(
            GOMP_OFFLOAD_get_num_devices(0),
            1,
            "the stand-in's one GPU agent"
        );

        // Device open.
        assert!(
            GOMP_OFFLOAD_alloc(0, 64).is_null(),
            "alloc before init_device"
        );
        assert!(GOMP_OFFLOAD_init_device(0), "init_device 0");
        assert!(
            !GOMP_OFFLOAD_init_device(0),
            "init_device 0 again (already open)"
        );
        assert!(
            !GOMP_OFFLOAD_init_device(1),
            "init_device of a device that does not exist"
        );

        // Memory.
        const N: usize = 4096;
        let input: Vec<u8> = (0..N).map(|i| (i * 7 + 1) as u8).collect();
        let mut out = vec![0u8; N];
        let (inp, outp) = (
            input.as_ptr().cast::<c_void>(),
            out.as_mut_ptr().cast::<c_void>(),
        );
        let d = GOMP_OFFLOAD_alloc(0, N).cast::<u8>();
        let e = GOMP_OFFLOAD_alloc(0, N).cast::<u8>();
        let z = GOMP_OFFLOAD_alloc(0, 0).cast::<u8>();
        assert!(!d.is_null() && !e.is_null() && !z.is_null(), "three blocks");
        assert!(d != e && z != d && z != e, "three distinct blocks");
        assert_eq!(live(&lib)[0], 3, "the runtime holds three blocks");
        assert!(GOMP_OFFLOAD_host2dev(0, d.cast(), inp, N), "host2dev");
        assert!(GOMP_OFFLOAD_dev2host(0, outp, d.cast(), N), "dev2host");
        assert_eq!(out, input, "round trip");
        assert!(
            GOMP_OFFLOAD_memset(0, d.add(100).cast(), 0x15a, 1000),
            "memset"
        );
        assert!(GOMP_OFFLOAD_dev2dev(0, e.cast(), d.cast(), N), "dev2dev");
        out.fill(0);
        assert!(
            GOMP_OFFLOAD_dev2host(0, outp, e.cast(), N),
            "dev2host of the copy"
        );
        for (i, &b) in out.iter().enumerate() {
            let want = if (100..1100).contains(&i) {
                0x5a
            } else {
                input[i]
            };
            assert_eq!(
                b, want,
                "byte {i}: memset writes the value's low byte, exactly its range"
            );
        }
        assert!(
            GOMP_OFFLOAD_host2dev(0, d.cast(), inp, 0),
            "host2dev of 0 bytes"
        );
        assert!(
            GOMP_OFFLOAD_dev2host(0, outp, d.cast(), 0),
            "dev2host of 0 bytes"
        );
        assert!(GOMP_OFFLOAD_memset(0, d.cast(), 0, 0), "memset of 0 bytes");
        assert_eq!(
            GOMP_OFFLOAD_is_accessible_ptr(0, d.cast(), N),
            1,
            "a device block"
        );
        assert_eq!(
            GOMP_OFFLOAD_is_accessible_ptr(0, d.cast(), N + 1),
            0,
            "past its end"
        );
        assert_eq!(
            GOMP_OFFLOAD_is_accessible_ptr(0, inp, 8),
            0,
            "host memory, base profile"
        );
        assert!(
            !GOMP_OFFLOAD_host2dev(0, d.add(8).cast(), inp, N),
            "host2dev past the end"
        );
        assert!(
            !GOMP_OFFLOAD_dev2host(0, std::ptr::null_mut(), d.cast(), 8),
            "into NULL"
        );
        assert!(
            !GOMP_OFFLOAD_memset(0, std::ptr::null_mut(), 0, 8),
            "memset of NULL"
        );
        assert!(GOMP_OFFLOAD_free(0, d.cast()), "free");
        assert!(!GOMP_OFFLOAD_free(0, d.cast()), "double free");
        assert!(
            !GOMP_OFFLOAD_free(0, e.add(8).cast()),
            "free inside a block"
        );
        assert!(GOMP_OFFLOAD_free(0, std::ptr::null_mut()), "free of NULL");
        assert!(GOMP_OFFLOAD_free(0, z.cast()), "free of the 0-byte block");
        assert_eq!(live(&lib)[0], 1, "one block left for fini_device");
        assert!(
            GOMP_OFFLOAD_alloc(5, 8).is_null(),
            "alloc on a missing device"
        );
        assert!(!GOMP_OFFLOAD_free(5, e.cast()), "free on a missing device");

        // Images: the descriptors mkoffload emits for vadd.c and vars.c.
        let (v90a, v908, vars) = (
            read("vadd-gfx90a.hsaco"),
            read("vadd-gfx908.hsaco"),
            read("vars-gfx90a.hsaco"),
        );
        let img = |b: &Vec<u8>| GcnImage {
            size: b.len(),
            image: b.as_ptr(),
        };
        let (i90a, i908, ivars) = (img(&v90a), img(&v908), img(&vars));
        let (_s1, vadd_k) = kernels(&[
            ("_init_array", 0, 0),
            ("_fini_array", 0, 0),
            ("main._omp_fn.0", 62, 48),
        ]);
        let (_s2, vars_k) = kernels(&[
            ("_init_array", 0, 0),
            ("_fini_array", 0, 0),
            ("zfirst._omp_fn.0", 0, 0),
            ("main._omp_fn.0", 0, 0),
        ]);
        let (_s3, bad_k) = kernels(&[("_init_array", 0, 0), ("nosuch._omp_fn.9", 0, 0)]);
        let dv = desc(&i90a, &vadd_k, 0, 0);

        let t = load(&dv).expect("load_image of vadd (gfx90a)");
        let icvs = loaded_at("__gomp_additional_icvs");
        assert_eq!(t.len(), 2, "1 kernel + the ICV block");
        assert!(
            t[0].start != 0 && t[0].end == t[0].start + 1,
            "a kernel handle: {t:?}"
        );
        assert_eq!(
            t[1],
            AddrPair {
                start: icvs,
                end: icvs + 16
            },
            "the ICV block"
        );
        assert_eq!(live(&lib)[1..], [1, 1], "one reader, one executable");
        assert_eq!(load(&dv), Err(-1), "the same image again");

        // Kept alive (libgomp keys images by their descriptor's address): a temporary
        // would leave its stack slot to the next descriptor, which would then look like
        // this loaded image (seen in release builds).
        let dvars = desc(&ivars, &vars_k, 0, 2);
        let t = load(&dvars).expect("load_image of vars");
        assert_eq!(t.len(), 5, "2 kernels + 2 variables + the ICV block");
        assert_eq!(
            t[4],
            AddrPair { start: 0, end: 0 },
            "(0, 0): this image has no ICV block"
        );
        assert!(
            t[0].start != t[1].start && t[1].end == t[1].start + 1,
            "{t:?}"
        );
        let (a, b) = (loaded_at("va"), loaded_at("vb"));
        assert_eq!(
            t[2..4],
            [
                AddrPair {
                    start: a,
                    end: a + 20
                },
                AddrPair {
                    start: b,
                    end: b + 8
                }
            ],
            "variables from .offload_var_table, in order"
        );

        assert_eq!(
            load(&desc(&i908, &vadd_k, 0, 0)),
            Err(-1),
            "a gfx908 image on gfx90a"
        );
        // A kernel the code object has no descriptor for (as a reverse-offload
        // region's device stub): loaded, but not launchable.
        let dbad = desc(&i90a, &bad_k, 0, 0);
        let t = load(&dbad).expect("load_image naming a kernel the image lacks");
        assert_eq!(t.len(), 2, "1 kernel + the ICV block");
        assert!(
            !GOMP_OFFLOAD_can_run(t[0].start as *mut c_void),
            "can_run of a kernel without a descriptor"
        );
        assert!(
            GOMP_OFFLOAD_unload_image(0, VER, (&dbad as *const GcnImageDesc).cast()),
            "unload_image of it"
        );
        assert_eq!(
            load(&desc(&i90a, &vadd_k, 1, 0)),
            Err(-1),
            "indirect functions"
        );
        assert_eq!(load_on(0, 0x30004, &dv), Err(-1), "a newer device version");
        assert_eq!(
            load_on(3, VER, &dv),
            Err(-1),
            "a device that does not exist"
        );
        assert_eq!(live(&lib)[1..], [2, 2], "failed loads left nothing behind");
        assert!(
            !GOMP_OFFLOAD_can_run(std::ptr::dangling_mut::<c_void>()),
            "can_run of an unknown handle"
        );
        let dvp = (&dv as *const GcnImageDesc).cast();
        assert!(
            GOMP_OFFLOAD_unload_image(0, VER, dvp),
            "unload_image of vadd"
        );
        assert!(
            !GOMP_OFFLOAD_unload_image(0, VER, dvp),
            "unload_image of vadd again"
        );
        assert_eq!(live(&lib)[1..], [1, 1], "one executable left");

        // Close: the vars image and the block left are released.
        assert!(GOMP_OFFLOAD_fini_device(0), "fini_device 0");
        assert_eq!(
            live(&lib),
            [0, 0, 0],
            "nothing live in the runtime after fini_device"
        );
        // The framework's registry rule (src/registry.rs): closing a device that is not
        // open is fine, for every product (gcn_calls.c still expects false here).
        assert!(GOMP_OFFLOAD_fini_device(0), "fini_device 0 again");
        assert!(
            GOMP_OFFLOAD_alloc(0, 8).is_null(),
            "alloc on the closed device"
        );
        assert!(
            GOMP_OFFLOAD_init_device(0) && GOMP_OFFLOAD_fini_device(0),
            "reopen, close"
        );
    }
}

#[test]
fn gfx90a_stand_in_device_session() {
    const T: &str = "gfx90a_stand_in_device_session";
    if support::is_child(T) {
        return device_session();
    }
    if !support::have_tools(T, &["cc", "xz"]) {
        return;
    }
    let dir = support::Scratch::new("gcn-session");
    let lib = gpu_stub(dir.path());
    let libgomp = support::fake_libgomp(&dir.join("libgomp16"), &support::RELEASE_NODES);
    for f in ["vadd-gfx90a", "vadd-gfx908", "vars-gfx90a"] {
        support::unxz_fixture(&format!("{f}.hsaco.xz"), &dir.join(&format!("{f}.hsaco")));
    }
    let c = support::run_child(
        T,
        &[
            ("HSA_RUNTIME_LIB", lib.as_os_str()),
            (LIBGOMP_ENV, libgomp.as_os_str()),
            (IMAGES_ENV, dir.path().as_os_str()),
            ("GOMP_DEBUG", OsStr::new("1")),
        ],
    );
    // The messages go through the stand-in libgomp's GOMP_PLUGIN_error and _debug.
    c.assert_passed()
        .assert_stderr(
            "but the program requires 0x20, which this plugin does not support: 0 devices",
        )
        .assert_stderr("1 GPU agent(s) [\"gfx90a\"]: 1 device(s)")
        .assert_stderr_lacks("stub-hsa: BAD")
        .assert_line_starts("gcn (gomp-plugin-rs): device 0: gfx90a opened (base profile")
        .assert_line_starts("libgomp: gcn device 0 is not open")
        .assert_line_starts("libgomp: gcn device 0 is already open")
        .assert_line_starts("libgomp: no gcn device 1")
        .assert_line_starts("libgomp: invalid device address 0x")
        .assert_line_starts("libgomp: invalid size")
        .assert_stderr(
            "(4 kernel(s) of which 2 offload function(s), 2 variable(s)); table of 5 entries",
        )
        .assert_stderr("kernel main._omp_fn.0: object 0x")
        .assert_stderr(", kernargs 8 bytes (align 8), group 1536 bytes")
        .assert_line_starts("libgomp: load_image: image 0x")
        .assert_line_starts("libgomp: gcn image is for gfx908, the device is gfx90a")
        .assert_stderr(
            "kernel 'nosuch._omp_fn.9' has no kernel descriptor 'nosuch._omp_fn.9.kd': loaded, not launchable",
        )
        .assert_line_starts("libgomp: GOMP_OFFLOAD_load_image: an image with 1 indirect function")
        .assert_stderr("Offload data incompatible with GCN plugin (expected 3, received 4)")
        .assert_line_starts("libgomp: unload_image: image 0x")
        .assert_stderr("is not loaded")
        .assert_stderr("device 0: closed (1 image(s) unloaded, 1 block(s) freed)")
        .assert_stderr_lacks("panicked")
        .assert_stderr_lacks("internal error");
}
