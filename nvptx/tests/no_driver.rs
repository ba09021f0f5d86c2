//! The nvptx plugin in a process without libgomp and without a CUDA driver
//! (`GOMP_PLUGIN_RS_LIBCUDA` names a file that does not exist): every exported entry
//! point called here answers by libgomp's error convention, says why on stderr, and
//! never crashes; errors of `run` are fatal. Nothing here needs a compiler or a GPU.

use gomp_plugin_conformance::support;

use gomp_plugin_nvptx as _; // links the rlib holding the exported shells
use std::ffi::{c_int, c_void, OsStr};
use support::api::*;

extern "C" {
    fn gomp_nvptx_host_lock(p: *mut c_void, size: usize, device: c_int) -> c_int;
    fn gomp_nvptx_host_unlock(p: *mut c_void, device: c_int) -> c_int;
}

const NO_LIBCUDA: &str = "/nonexistent/libcuda.so.1";

/// libgomp-plugin.h: GOMP_OFFLOAD_CAP_OPENMP_400 | GOMP_OFFLOAD_CAP_OPENACC_200.
const NVPTX_CAPS: u32 = 4 | 8;
/// libgomp-plugin.h: OFFLOAD_TARGET_TYPE_NVIDIA_PTX.
const NVPTX_TYPE: c_int = 5;

/// The calls, in the child process.
fn calls_without_driver() {
    let mut buf = vec![0u8; 1 << 20];
    let b = buf.as_mut_ptr().cast::<c_void>();
    // SAFETY: the plugin's C entry points, called with valid host buffers, NULL or
    // device numbers it must refuse.
    unsafe {
        assert_eq!(GOMP_OFFLOAD_version(), 0, "no libgomp: version 0");
        assert_eq!(name(), "nvptx");
        assert_eq!(GOMP_OFFLOAD_get_caps(), NVPTX_CAPS);
        assert_eq!(GOMP_OFFLOAD_get_type(), NVPTX_TYPE);
        assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 0);
        assert_eq!(GOMP_OFFLOAD_get_num_devices(0x20), 0, "requires USM");
        assert!(!GOMP_OFFLOAD_init_device(0), "init_device 0");
        assert!(!GOMP_OFFLOAD_init_device(-1), "init_device -1");
        assert!(GOMP_OFFLOAD_alloc(0, 8).is_null(), "alloc");
        assert!(!GOMP_OFFLOAD_free(0, b), "free");
        assert!(!GOMP_OFFLOAD_host2dev(0, b, b, 8), "host2dev");
        assert!(!GOMP_OFFLOAD_dev2host(0, b, b, 8), "dev2host");
        assert!(!GOMP_OFFLOAD_memset(0, b, 0, 8), "memset");
        assert_eq!(GOMP_OFFLOAD_is_accessible_ptr(0, b, 8), 0);
        assert!(GOMP_OFFLOAD_get_uid(0).is_null(), "get_uid");
        assert!(
            GOMP_OFFLOAD_fini_device(0),
            "closing an unopened device is fine"
        );
        // The plugin's own C API (include/gomp_plugin_nvptx.h), as tests/fallback/host_lock.c.
        assert_ne!(gomp_nvptx_host_lock(b, buf.len(), 0), 0, "host_lock");
        assert_ne!(gomp_nvptx_host_unlock(b, 0), 0, "host_unlock");
        assert_ne!(
            gomp_nvptx_host_lock(std::ptr::null_mut(), 0, 0),
            0,
            "lock NULL"
        );
    }
}

#[test]
fn entry_points_without_libcuda() {
    const T: &str = "entry_points_without_libcuda";
    if support::is_child(T) {
        return calls_without_driver();
    }
    let cuda = ("GOMP_PLUGIN_RS_LIBCUDA", OsStr::new(NO_LIBCUDA));
    let debug = support::run_child(T, &[cuda, ("GOMP_DEBUG", OsStr::new("1"))]);
    debug
        .assert_passed()
        .assert_line_starts("libgomp: nvptx plugin (gomp-plugin-rs ")
        .assert_stderr("does not support no libgomp; not offloading to NVIDIA GPUs")
        .assert_line_starts(&format!(
            "nvptx (gomp-plugin-rs): no CUDA devices: cannot load {NO_LIBCUDA}"
        ))
        .assert_line_starts("libgomp: no nvptx device 0")
        .assert_line_starts("libgomp: no nvptx device -1")
        .assert_line_starts("libgomp: nvptx device 0 is not open")
        .assert_line_starts(&format!(
            "libgomp: gomp_nvptx_host_lock: no CUDA driver: cannot load {NO_LIBCUDA}"
        ))
        .assert_line_starts("libgomp: gomp_nvptx_host_unlock: no CUDA driver")
        .assert_line_starts("libgomp: gomp_nvptx_host_lock: nothing to lock (0x0, 0 bytes)")
        .assert_line_starts("nvptx (gomp-plugin-rs): gomp-plugin-rs ")
        .assert_stderr(" loaded by no libgomp")
        .assert_stderr_lacks("panicked")
        .assert_stderr_lacks("internal error");
    // Each failed call said why, once: the version refusal, init_device x2, alloc,
    // free, two copies, memset, is_accessible_ptr and the plugin's API x3 (get_uid
    // answers NULL without a message).
    let n = debug.count_lines("libgomp: ");
    assert_eq!(n, 12, "libgomp: messages\n{}", debug.stderr);

    // Without GOMP_DEBUG the same calls give the errors but no debug lines.
    let quiet = support::run_child(T, &[cuda]);
    quiet
        .assert_passed()
        .assert_line_starts("libgomp: no nvptx device 0")
        .assert_stderr_lacks("(gomp-plugin-rs): ");
    assert_eq!(quiet.count_lines("libgomp: "), n, "{}", quiet.stderr);
}

#[test]
fn run_errors_are_fatal() {
    const T: &str = "run_errors_are_fatal";
    if support::is_child(T) {
        // NULL arguments, which the shell refuses before touching anything.
        gomp_plugin_nvptx::entry_points::run(
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        panic!("GOMP_OFFLOAD_run returned after an error");
    }
    let c = support::run_child(T, &[("GOMP_PLUGIN_RS_LIBCUDA", OsStr::new(NO_LIBCUDA))]);
    assert_eq!(
        c.code,
        Some(1),
        "exit status of a fatal error\n{}",
        c.stderr
    );
    c.assert_line_starts("libgomp: No target arguments provided")
        .assert_stderr_lacks("returned after an error");
}

/// A bad setting is reported at the plugin's first use (get_num_devices), once, even
/// without a driver: a typo is seen on a machine without a GPU, and the default is kept.
#[test]
fn bad_settings_are_reported_without_a_gpu() {
    const T: &str = "bad_settings_are_reported_without_a_gpu";
    if support::is_child(T) {
        // SAFETY: plain calls with valid arguments.
        unsafe {
            assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 0);
            assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 0);
        }
        return;
    }
    let c = support::run_child(
        T,
        &[
            ("GOMP_PLUGIN_RS_LIBCUDA", OsStr::new(NO_LIBCUDA)),
            ("GOMP_NVPTX_SOFT_STACK_SIZE", OsStr::new("12q")),
            ("GOMP_NVPTX_PROFILE", OsStr::new("yes please")),
        ],
    );
    c.assert_passed();
    let stack = c
        .stderr
        .lines()
        .filter(|l| l.starts_with("libgomp: ") && l.contains("GOMP_NVPTX_SOFT_STACK_SIZE"))
        .count();
    assert_eq!(
        stack, 1,
        "one warning for the soft-stack size\n{}",
        c.stderr
    );
    let profile = c
        .stderr
        .lines()
        .filter(|l| l.starts_with("libgomp: ") && l.contains("GOMP_NVPTX_PROFILE"))
        .count();
    assert_eq!(
        profile, 1,
        "one warning for the profile switch\n{}",
        c.stderr
    );
}
