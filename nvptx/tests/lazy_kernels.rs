//! Kernels looked up at their first launch or by the load (nvptx/src/image/mod.rs, `Kernel::code`)
//! against the stand-in driver (tests/fallback/stub_libcuda_2dev.c, which counts
//! `cuModuleGetFunction` calls): `load_image` asks the driver for no kernel, a kernel's
//! first launch looks it up once, later launches reuse it, and a kernel the module
//! lacks loads but fails its launch with a `libgomp:` error naming it. Checked with the
//! linked-image cache linking (miss), loading (hit) and off, each in a child process
//! as a program run, with `GOMP_NVPTX_TUNE=lazykernels=1`. By default, and when libgomp
//! asks for the reverse-offload table whatever the knob says, every kernel is looked up
//! by `load_image`, and a missing one fails the load.

use gomp_plugin_conformance::support;

use gomp_plugin_nvptx as _; // links the rlib holding the exported shells
use std::ffi::{c_void, CString, OsStr};
use support::api::*;
use support::image::Image;

/// The kernels the image's PTX defines.
const DEFINED: [&str; 2] = ["main$_omp_fn$0", "main$_omp_fn$1"];
/// A kernel the image's table names but its PTX does not define.
const ABSENT: &str = "absent$_omp_fn$2";

/// The stand-in's count of `cuModuleGetFunction` calls.
fn lookups() -> i64 {
    let lib = std::env::var_os("GOMP_PLUGIN_RS_LIBCUDA").expect("set by the parent");
    let f = support::symbol_of_loaded(&lib, "stub_libcuda_function_lookups");
    // SAFETY: the stand-in's `long stub_libcuda_function_lookups (void)`.
    let f: unsafe extern "C" fn() -> i64 = unsafe { std::mem::transmute(f) };
    // SAFETY: plain call.
    unsafe { f() }
}

/// The child: loads the image (its table: the two defined kernels, then the absent
/// one), prints `LOOKUPS load N`, launches the first kernel twice and the second once
/// (`LOOKUPS run N` after each), then launches the absent kernel, which must not
/// return.
fn child() {
    // SAFETY: libgomp's sequence (version, device count, init), plain calls.
    unsafe {
        assert_eq!(GOMP_OFFLOAD_version(), 0);
        assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 2);
        assert!(GOMP_OFFLOAD_init_device(0), "init_device");
    }
    let text = CString::new(format!(
        "// lazy kernels test\n.version 7.0\n.target sm_52\n.address_size 64\n\
         .visible .entry {} ()\n{{\n\tret;\n}}\n.visible .entry {} ()\n{{\n\tret;\n}}\n",
        DEFINED[0], DEFINED[1]
    ))
    .unwrap();
    let img = Image::new(vec![text], &[DEFINED[0], DEFINED[1], ABSENT]);
    let want_rev = std::env::var("LK_REVERSE").is_ok_and(|v| v == "1");
    // The image lives until the process ends.
    let (n, table, _) = img.load(0, want_rev);
    if want_rev || n < 0 {
        println!("LOAD {n}");
        println!("LOOKUPS load {}", lookups());
        return;
    }
    assert_eq!(n, 4, "three kernels and the ICV entry");
    // SAFETY: `n` entries the plugin allocated.
    let t = unsafe { std::slice::from_raw_parts(table, n as usize) };
    let handles: Vec<*mut c_void> = t[..3].iter().map(|p| p.start as *mut c_void).collect();
    println!("LOOKUPS load {}", lookups());
    let mut args: [*mut c_void; 1] = [std::ptr::null_mut()];
    for k in [0, 0, 1] {
        // A kernel of the loaded image; NULL-terminated target arguments.
        gomp_plugin_nvptx::entry_points::run(
            0,
            handles[k],
            std::ptr::null_mut(),
            args.as_mut_ptr(),
        );
        println!("LOOKUPS run {}", lookups());
    }
    // As above; the plugin reports the missing kernel as a fatal error.
    gomp_plugin_nvptx::entry_points::run(0, handles[2], std::ptr::null_mut(), args.as_mut_ptr());
    panic!("the launch of a kernel the module lacks returned");
}

#[test]
fn kernels_are_looked_up_at_first_launch() {
    const T: &str = "kernels_are_looked_up_at_first_launch";
    if support::is_child(T) {
        return child();
    }
    if !support::have_tools(T, &["cc"]) {
        return;
    }
    let scratch = support::Scratch::new("lazy-kernels");
    let lib = support::stub_libcuda_2dev(&scratch, &[]);
    let cache = scratch.join("cuda-cache");
    for round in ["miss", "hit", "off"] {
        let mut vars: Vec<(&str, &OsStr)> = vec![
            ("GOMP_PLUGIN_RS_LIBCUDA", lib.as_os_str()),
            ("CUDA_CACHE_PATH", cache.as_os_str()),
            // Nothing of the developer's own cache directory is used.
            ("HOME", scratch.path().as_os_str()),
            ("XDG_CACHE_HOME", scratch.path().as_os_str()),
            ("GOMP_NVPTX_SOFT_STACK_SIZE", OsStr::new("1024")),
            ("GOMP_NVPTX_INFO", OsStr::new("1")),
            ("GOMP_NVPTX_TUNE", OsStr::new("lazykernels=1")),
        ];
        if round == "off" {
            vars.push(("GOMP_NVPTX_LINK_CACHE", OsStr::new("0")));
        }
        let c = support::run_child(T, &vars);
        assert_eq!(c.code, Some(1), "{round}: a fatal error\n{}", c.stderr);
        let how = match round {
            "miss" => "linked-image cache miss, linked, stored",
            "hit" => "linked-image cache hit",
            _ => "linked (linked-image cache off)",
        };
        assert!(
            c.stderr
                .lines()
                .any(|l| l.starts_with("libgomp: nvptx info: device 0: image") && l.contains(how)),
            "{round}: no image line saying {how:?}\n{}",
            c.stderr
        );
        let seen: Vec<&str> = c
            .stdout
            .lines()
            // libtest's "test NAME ... " may start the first line.
            .filter_map(|l| l.find("LOOKUPS ").map(|i| &l[i..]))
            .collect();
        assert_eq!(
            seen,
            [
                "LOOKUPS load 0",
                "LOOKUPS run 1",
                "LOOKUPS run 1",
                "LOOKUPS run 2"
            ],
            "{round}: function look-ups\n{}\n{}",
            c.stdout,
            c.stderr
        );
        c.assert_line_starts(&format!("libgomp: offload image lacks kernel '{ABSENT}'"))
            .assert_stderr_lacks("kernel the module lacks returned")
            .assert_stderr_lacks("panicked")
            .assert_stderr_lacks("stub libcuda:");
    }
    // By default, and with reverse offload even when asked for lazy look-ups: every
    // kernel looked up by the load, which the missing one fails.
    for (tune, reverse) in [("", "0"), ("lazykernels=1", "1")] {
        let c = support::run_child(
            T,
            &[
                ("GOMP_PLUGIN_RS_LIBCUDA", lib.as_os_str()),
                ("CUDA_CACHE_PATH", cache.as_os_str()),
                ("HOME", scratch.path().as_os_str()),
                ("XDG_CACHE_HOME", scratch.path().as_os_str()),
                ("GOMP_NVPTX_TUNE", OsStr::new(tune)),
                ("LK_REVERSE", OsStr::new(reverse)),
            ],
        );
        eager_load(&c);
    }
}

/// A child whose load looked every kernel up and failed on the missing one.
fn eager_load(c: &support::Child) {
    c.assert_passed()
        .assert_line_starts(&format!("libgomp: offload image lacks kernel '{ABSENT}'"))
        .assert_stderr_lacks("stub libcuda:");
    let seen: Vec<&str> = c
        .stdout
        .lines()
        .filter_map(|l| {
            l.find("LOAD ")
                .or_else(|| l.find("LOOKUPS "))
                .map(|i| &l[i..])
        })
        .collect();
    assert_eq!(seen, ["LOAD -1", "LOOKUPS load 3"], "{}", c.stdout);
}
