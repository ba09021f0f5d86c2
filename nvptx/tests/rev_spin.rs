//! GCC's device-side reverse-offload wait rewritten before the JIT link
//! (nvptx/src/image/rev_spin.rs), against the stand-in driver
//! (tests/fallback/stub_libcuda_2dev.c, whose "cubin" is the linked PTX text, which the
//! linked-image cache stores): an image holding GCC 16's `GOMP_target_ext` wait is
//! linked with the wait polling by volatile loads and one fence after the loop when
//! libgomp asks for the reverse-offload table; as GCC wrote it without that request and
//! with `GOMP_NVPTX_TUNE=revspin=0`. Each case in a child process with a cache of its
//! own.

use gomp_plugin_conformance::support;

use gomp_plugin_nvptx as _; // links the rlib holding the exported shells
use std::ffi::{CString, OsStr};
use support::api::*;
use support::image::Image;

/// GCC 16's wait (sm_52 libgomp), as in the PTX of a GCC 16 binary.
const WAIT: &str = "$L23:\n.loc 2 146 10\nld.global.u64 %r62,[__gomp_rev_offload_var];\n\
ld.u64 %r34,[%r62];\nmembar.sys;\n.loc 2 146 72\nsetp.ne.u64 %r63,%r34,0;\n@%r63 bra $L23;\n\
.loc 4 58 3\nmembar.sys;\n";
/// The same, rewritten.
const REWRITTEN: &str = "$L23:\n.loc 2 146 10\nld.global.u64 %r62,[__gomp_rev_offload_var];\n\
ld.volatile.u64 %r34,[%r62];\n.loc 2 146 72\nsetp.ne.u64 %r63,%r34,0;\n@%r63 bra $L23;\n\
membar.sys;\n.loc 4 58 3\nmembar.sys;\n";

/// The child: loads an image of a kernel and a PTX object defining `GOMP_target_ext`
/// with GCC's wait, asking for the reverse-offload table when `RS_REVERSE=1`.
fn child() {
    // SAFETY: libgomp's sequence (version, device count, init), plain calls.
    unsafe {
        assert_eq!(GOMP_OFFLOAD_version(), 0);
        assert!(GOMP_OFFLOAD_get_num_devices(0) > 0);
        assert!(GOMP_OFFLOAD_init_device(0), "init_device");
    }
    let kernel = CString::new(
        "// rev_spin test\n.version 7.3\n.target sm_52\n.address_size 64\n\
         .visible .entry main$_omp_fn$0 ()\n{\n\tret;\n}\n",
    )
    .unwrap();
    let runtime = CString::new(format!(
        ".version 7.3\n.target sm_52\n.address_size 64\n\
         // BEGIN GLOBAL FUNCTION DEF: GOMP_target_ext\n\
         .visible .func GOMP_target_ext (.param .u32 %in_ar0)\n{{\n{WAIT}ret;\n}}\n\
         // BEGIN GLOBAL FUNCTION DEF: GOMP_target_data_ext\n\
         .visible .func GOMP_target_data_ext\n{{\n\ttrap;\n}}\n"
    ))
    .unwrap();
    let img = Image::new(vec![kernel, runtime], &["main$_omp_fn$0"]);
    let want_rev = std::env::var("RS_REVERSE").is_ok_and(|v| v == "1");
    // The image lives until the process ends.
    let (n, _, _) = img.load(0, want_rev);
    println!("LOAD {n}");
}

/// The linked images the cache under `dir` holds, as text.
fn cached(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir.join("gomp-plugin-rs")).expect("a cache directory") {
        let p = e.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("cubin-")
        {
            out.push(String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned());
        }
    }
    out
}

#[test]
fn the_wait_is_rewritten_for_reverse_offload_only() {
    const T: &str = "the_wait_is_rewritten_for_reverse_offload_only";
    if support::is_child(T) {
        return child();
    }
    if !support::have_tools(T, &["cc"]) {
        return;
    }
    let scratch = support::Scratch::new("rev-spin");
    let lib = support::stub_libcuda_2dev(&scratch, &[]);
    for (case, reverse, tune, rewritten) in [
        ("reverse", "1", "", true),
        ("reverse-revspin0", "1", "revspin=0", false),
        ("no-reverse", "0", "", false),
    ] {
        let cache = scratch.join(case);
        let c = support::run_child(
            T,
            &[
                ("GOMP_PLUGIN_RS_LIBCUDA", lib.as_os_str()),
                ("CUDA_CACHE_PATH", cache.as_os_str()),
                ("HOME", scratch.path().as_os_str()),
                ("XDG_CACHE_HOME", scratch.path().as_os_str()),
                ("GOMP_NVPTX_TUNE", OsStr::new(tune)),
                ("RS_REVERSE", OsStr::new(reverse)),
            ],
        );
        c.assert_passed().assert_stderr_lacks("stub libcuda:");
        assert!(
            c.stdout.contains("LOAD 2"),
            "{case}: one kernel and the ICV entry\n{}\n{}",
            c.stdout,
            c.stderr
        );
        let images = cached(&cache);
        assert_eq!(images.len(), 1, "{case}: one linked image stored");
        let text = &images[0];
        assert!(
            text.contains("main$_omp_fn$0"),
            "{case}: the kernel's object"
        );
        let (want, not) = if rewritten {
            (REWRITTEN, WAIT)
        } else {
            (WAIT, REWRITTEN)
        };
        assert!(text.contains(want), "{case}: want\n{want}\nin\n{text}");
        assert!(
            !text.contains(not),
            "{case}: did not want\n{not}\nin\n{text}"
        );
        assert!(
            text.contains(".visible .func GOMP_target_data_ext\n{\n\ttrap;\n}"),
            "{case}: the rest of the object as it was"
        );
    }
}
