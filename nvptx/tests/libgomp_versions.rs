//! The nvptx plugin's libgomp detection against stand-in libgomps
//! (tests/fake_libgomp/fake_libgomp.c, built here with a version script giving it the
//! symbol-version nodes of one release: GCC 11, 12, 13, 14, 15, 16, an invented newer
//! release, and a newer plugin interface), loaded into the process the way a program
//! linked with libgomp has it. `GOMP_OFFLOAD_version` must answer 1 for 12, 2 for 13,
//! 3 for 14-16, and 0 with a clear message otherwise; no driver means 0 devices. Then, under
//! the stand-in libgomp 16, every entry point is called the wrong way and must answer
//! by libgomp's error convention through `GOMP_PLUGIN_error`. The Rust port of
//! tests/libgomp_versions.sh (with tests/fake_libgomp/drive.c and badcalls.c).

use gomp_plugin_conformance::support;

use gomp_plugin_nvptx as _; // links the rlib holding the exported shells
use std::ffi::{c_void, OsStr};
use std::path::Path;
use support::api::*;

/// The stand-in libgomp a child loads before its first call.
const LIBGOMP_ENV: &str = "GOMP_PLUGIN_RS_TEST_LIBGOMP";
const NO_LIBCUDA: &str = "/nonexistent/libcuda.so.1";

extern "C" {
    fn GOMP_OFFLOAD_page_locked_host_alloc(ptr: *mut *mut c_void, size: usize) -> bool;
}

/// In a child: loads the stand-in libgomp named by [`LIBGOMP_ENV`].
fn load_libgomp() {
    let lib = std::env::var_os(LIBGOMP_ENV).expect("the parent names a libgomp");
    support::load_global(&lib);
}

/// Runs `test` in a child with the stand-in libgomp at `lib` and no CUDA driver.
fn child_with(test: &str, lib: &Path) -> support::Child {
    support::run_child(
        test,
        &[
            (LIBGOMP_ENV, lib.as_os_str()),
            ("GOMP_PLUGIN_RS_LIBCUDA", OsStr::new(NO_LIBCUDA)),
        ],
    )
}

#[test]
fn version_per_libgomp_release() {
    const T: &str = "version_per_libgomp_release";
    if support::is_child(T) {
        load_libgomp();
        // SAFETY: plain calls without arguments to check.
        let (v, n) = unsafe { (GOMP_OFFLOAD_version(), GOMP_OFFLOAD_get_num_devices(0)) };
        eprintln!("version={v}");
        eprintln!("devices={n}");
        return;
    }
    if !support::have_tools(T, &["cc"]) {
        return;
    }
    let dir = support::Scratch::new("fake-libgomp");
    let r = support::RELEASE_NODES;
    let n17 = ("GOMP_6.0.2", "GOMP_barrier_ext");
    let future = ("GOMP_7.0", "GOMP_future_entry");
    let plugin_1_5 = ("GOMP_PLUGIN_1.5", "GOMP_future_entry");
    let cases = [
        (
            "gcc11",
            vec![("GOMP_5.0.1", "GOMP_alloc")],
            0,
            "does not support a libgomp older than GCC 12",
        ),
        ("gcc12", vec![("GOMP_5.1", "GOMP_teams4")], 1, ""),
        ("gcc13", r[..1].to_vec(), 2, ""),
        ("gcc14", r[..2].to_vec(), 3, ""),
        ("gcc15", r[..3].to_vec(), 3, ""),
        ("gcc16", r.to_vec(), 3, ""),
        ("gcc17", [&r[..], &[n17]].concat(), 4, ""),
        (
            "gcc18",
            [&r[..], &[n17, future]].concat(),
            0,
            "does not support a libgomp newer than GCC 17 (defines GOMP_7.0; supported: libgomp 12 to 17)",
        ),
        (
            "plugin-abi-1.5",
            [&r[..], &[n17, plugin_1_5]].concat(),
            0,
            "newer than GCC 17 (defines GOMP_PLUGIN_1.5; supported: libgomp 12 to 17)",
        ),
    ];
    for (name, nodes, want, msg) in cases {
        let lib = support::fake_libgomp(&dir.join(name), &nodes);
        let c = child_with(T, &lib);
        eprintln!("{name}: want version={want}");
        c.assert_passed()
            .assert_line(&format!("version={want}"))
            .assert_line("devices=0");
        if msg.is_empty() {
            assert_eq!(c.count_lines("libgomp: "), 0, "{name}: {}", c.stderr);
        } else {
            // Through the stand-in's GOMP_PLUGIN_error, which prints "libgomp: ...".
            c.assert_line_starts("libgomp: nvptx plugin (gomp-plugin-rs ")
                .assert_stderr(msg)
                .assert_stderr("not offloading to NVIDIA GPUs");
        }
    }
}

#[test]
fn wrong_calls_under_libgomp_16() {
    const T: &str = "wrong_calls_under_libgomp_16";
    if support::is_child(T) {
        load_libgomp();
        let mut buf = [0u8; 64];
        let b = buf.as_mut_ptr().cast::<c_void>();
        let mut table: *mut AddrPair = std::ptr::null_mut();
        let mut pinned = b;
        // SAFETY: the plugin's C entry points with valid host buffers and out-pointers,
        // NULL, or devices and images it must refuse.
        unsafe {
            assert_eq!(GOMP_OFFLOAD_version(), 3, "libgomp 16: GOMP_VERSION 3");
            assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 0, "no libcuda: 0 devices");
            assert!(
                !GOMP_OFFLOAD_init_device(3),
                "init_device of a missing device"
            );
            assert!(
                GOMP_OFFLOAD_fini_device(0),
                "fini_device of a device never opened"
            );
            assert!(
                GOMP_OFFLOAD_alloc(0, 64).is_null(),
                "alloc, unopened device"
            );
            assert!(!GOMP_OFFLOAD_free(0, b), "free, unopened device");
            assert!(
                !GOMP_OFFLOAD_host2dev(0, b, b, 8),
                "host2dev, unopened device"
            );
            assert!(
                !GOMP_OFFLOAD_dev2host(0, b, b, 8),
                "dev2host, unopened device"
            );
            assert!(!GOMP_OFFLOAD_memset(0, b, 0, 8), "memset, unopened device");
            let newer = 0x30002; // GOMP_VERSION_PACK (3, GOMP_VERSION_NVIDIA_PTX + 1)
            let n = GOMP_OFFLOAD_load_image(
                0,
                newer,
                b,
                &mut table,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
            assert_eq!(n, -1, "load_image of a newer device version");
            let n = GOMP_OFFLOAD_load_image(
                0,
                0x30001,
                std::ptr::null(),
                &mut table,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
            assert_eq!(n, -1, "load_image without a descriptor");
            assert!(table.is_null(), "no table after failed loads");
            assert!(
                !GOMP_OFFLOAD_unload_image(0, 0x30001, b),
                "unload of an unknown image"
            );
            assert!(
                GOMP_OFFLOAD_get_uid(7).is_null(),
                "get_uid of a missing device"
            );
            assert!(
                !GOMP_OFFLOAD_page_locked_host_alloc(&mut pinned, 4096),
                "page_locked_host_alloc"
            );
            assert_eq!(
                GOMP_OFFLOAD_is_accessible_ptr(0, b, 8),
                0,
                "is_accessible_ptr"
            );
        }
        return;
    }
    if !support::have_tools(T, &["cc"]) {
        return;
    }
    let dir = support::Scratch::new("fake-libgomp16");
    let lib = support::fake_libgomp(dir.path(), &support::RELEASE_NODES);
    let c = child_with(T, &lib);
    // The image version is checked before the device is looked up (as the stock plugin
    // does), so the newer-version load_image is refused for its version.
    c.assert_passed()
        .assert_line_starts(
            "libgomp: Offload data incompatible with PTX plugin (expected 1, received 2)",
        )
        .assert_line_starts("libgomp: no nvptx device is open")
        .assert_line_starts("libgomp: no nvptx device 3")
        .assert_line_starts("libgomp: nvptx device 0 is not open")
        .assert_stderr_lacks("panicked")
        .assert_stderr_lacks("internal error");
    // One message per refused call (all but get_num_devices, fini_device, get_uid).
    assert_eq!(c.count_lines("libgomp: "), 11, "{}", c.stderr);
}
