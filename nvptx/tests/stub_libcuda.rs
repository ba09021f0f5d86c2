//! The nvptx plugin's driver table against the stand-in libcuda of
//! tests/fallback/stub_libcuda.c, built here in its three forms (as
//! tests/host_fallback.sh section 2 builds them): one lacking required entry points,
//! one whose `cuInit` says there is no device, one that initialises and counts 0
//! devices. Each reports 0 devices with its own `GOMP_DEBUG` line, refuses
//! `init_device` and the plugin's host-lock API with a `libgomp:` message, and never
//! crashes. No libgomp is loaded (messages go to stderr).

use gomp_plugin_conformance::support;

use gomp_plugin_nvptx as _; // links the rlib holding the exported shells
use std::ffi::{c_int, c_void, OsStr};
use support::api::*;

extern "C" {
    fn gomp_nvptx_host_lock(p: *mut c_void, size: usize, device: c_int) -> c_int;
    fn gomp_nvptx_host_unlock(p: *mut c_void, device: c_int) -> c_int;
}

/// The calls, in the child process (the same for every form: none has a device).
fn calls_without_device() {
    let mut buf = vec![0u8; 1 << 16];
    let b = buf.as_mut_ptr().cast::<c_void>();
    // SAFETY: the plugin's C entry points, called with a valid host buffer and device
    // numbers it must refuse.
    unsafe {
        // libgomp asks for the version first; that also starts the GOMP_DEBUG logger.
        assert_eq!(GOMP_OFFLOAD_version(), 0, "no libgomp: version 0");
        assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 0, "get_num_devices");
        assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 0, "asked again");
        assert!(!GOMP_OFFLOAD_init_device(0), "init_device 0");
        assert!(GOMP_OFFLOAD_alloc(0, 8).is_null(), "alloc");
        assert!(
            GOMP_OFFLOAD_fini_device(0),
            "fini_device of an unopened device"
        );
        assert_ne!(gomp_nvptx_host_lock(b, buf.len(), 0), 0, "host_lock");
        assert_ne!(gomp_nvptx_host_unlock(b, 0), 0, "host_unlock");
    }
}

/// Builds the stand-in with `flags` (plus the generated stub_names.h unless
/// `-DPARTIAL`), runs test `test` in a child against it with `GOMP_DEBUG=1`.
fn with_stub(test: &str, flags: &[&str]) -> Option<support::Child> {
    if !support::have_tools(test, &["cc"]) {
        return None;
    }
    let dir = support::Scratch::new("stub-libcuda");
    // The stand-in defines these three itself; every other table entry returns 0.
    support::write_stub_names(
        dir.path(),
        "nvptx",
        &["cuInit", "cuDeviceGetCount", "cuGetErrorString"],
    );
    let include = format!("-I{}", dir.path().display());
    let mut all = vec![include.as_str()];
    all.extend(flags);
    let lib = dir.join("libcuda.so.1");
    support::cc_shared("tests/fallback/stub_libcuda.c", &lib, &all);
    let c = support::run_child(
        test,
        &[
            ("GOMP_PLUGIN_RS_LIBCUDA", lib.as_os_str()),
            ("GOMP_DEBUG", OsStr::new("1")),
        ],
    );
    c.assert_passed()
        .assert_line_starts("libgomp: no nvptx device 0")
        .assert_line_starts("libgomp: nvptx device 0 is not open")
        .assert_stderr_lacks("panicked")
        .assert_stderr_lacks("internal error");
    Some(c)
}

#[test]
fn libcuda_missing_a_required_entry() {
    const T: &str = "libcuda_missing_a_required_entry";
    if support::is_child(T) {
        return calls_without_device();
    }
    let Some(c) = with_stub(T, &["-DPARTIAL", "-DSTUB_INIT_RESULT=0"]) else {
        return;
    };
    c.assert_line_starts("nvptx (gomp-plugin-rs): no CUDA devices: 'libcuda.so.1' is missing 'cuDriverGetVersion'")
        .assert_line_starts("libgomp: gomp_nvptx_host_lock: no CUDA driver: 'libcuda.so.1' is missing 'cuDriverGetVersion'")
        .assert_stderr_lacks("CUDA driver 0.0");
}

#[test]
fn cuinit_says_no_device() {
    const T: &str = "cuinit_says_no_device";
    if support::is_child(T) {
        return calls_without_device();
    }
    // 100: CUDA_ERROR_NO_DEVICE; cuGetErrorString answers "stub error text".
    let Some(c) = with_stub(T, &["-DSTUB_INIT_RESULT=100"]) else {
        return;
    };
    c.assert_line_starts("nvptx (gomp-plugin-rs): no CUDA devices: cuInit error: stub error text")
        .assert_stderr_lacks("is missing")
        .assert_stderr_lacks("CUDA driver 0.0");
}

#[test]
fn driver_with_zero_devices() {
    const T: &str = "driver_with_zero_devices";
    if support::is_child(T) {
        return calls_without_device();
    }
    let Some(c) = with_stub(T, &["-DSTUB_INIT_RESULT=0"]) else {
        return;
    };
    // The driver loaded and answered: its version (the stand-in writes none) and count.
    c.assert_line_starts("nvptx (gomp-plugin-rs): CUDA driver 0.0, 0 device(s)")
        .assert_line_starts(
            "libgomp: gomp_nvptx_host_lock: no nvptx device 0 (the driver reports 0)",
        )
        .assert_stderr_lacks("no CUDA devices")
        .assert_stderr_lacks("no CUDA driver");
}
