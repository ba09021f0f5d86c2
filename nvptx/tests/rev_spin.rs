//! GCC's device-side reverse-offload request rewritten before the JIT link
//! (nvptx/src/image/rev_spin.rs), against the stand-in driver
//! (tests/fallback/stub_libcuda_2dev.c, whose "cubin" is the linked PTX text, which the
//! linked-image cache stores), when libgomp asks for the reverse-offload table: an image
//! holding GCC 16's whole `GOMP_target_ext` request is linked with it in sm_70's scoped
//! forms on a device of compute capability 9.0 (the default, `revspin=acqrel`), with the
//! wait polling by volatile loads and one fence after the loop on one of 6.0 and with
//! `revspin=wait` (and for an object whose request has another shape); as GCC wrote it
//! without that request and with `GOMP_NVPTX_TUNE=revspin=0`. Each case in a child
//! process with a cache of its own.

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

/// GCC 16's request around the wait: the lock, the flag, and after the wait the unlock.
const LOCK: &str = "$L22:\n@%r67 atom.global.exch.b32 %r36,[lock$2],1;\n@%r67 membar.sys;\n\
@%r68 shfl.sync.idx.b32 %r36,%r36,%r66,31,0xffffffff;\nsetp.ne.u32 %r60,%r36,0;\n@%r60 bra $L22;\n\
ld.global.u64 %r26,[__gomp_rev_offload_var];\nst.u64 [%r26+8],%r39;\nmembar.sys;\n\
st.volatile.global.u64 [%r26],%r38;\n";
const UNLOCK: &str = "mov.u32 %r64,0;\nst.global.u32 [lock$2],%r64;\n";
/// The whole request in scoped forms: up to the flag, then (after the first poll's
/// delay, if any) the wait and the unlock.
const SCOPED_HEAD: &str = "$L22:\n@%r67 atom.acquire.gpu.global.exch.b32 %r36,[lock$2],1;\n\
@%r68 shfl.sync.idx.b32 %r36,%r36,%r66,31,0xffffffff;\nsetp.ne.u32 %r60,%r36,0;\n@%r60 bra $L22;\n\
ld.global.u64 %r26,[__gomp_rev_offload_var];\nst.u64 [%r26+8],%r39;\n\
st.release.sys.global.u64 [%r26],%r38;\n";
const SCOPED_TAIL: &str = "$L23:\n.loc 2 146 10\n\
ld.global.u64 %r62,[__gomp_rev_offload_var];\nld.acquire.sys.u64 %r34,[%r62];\n.loc 2 146 72\n\
setp.ne.u64 %r63,%r34,0;\n@%r63 bra $L23;\n.loc 4 58 3\nmov.u32 %r64,0;\n\
st.release.gpu.global.u32 [lock$2],%r64;\n";

/// The first poll's delay of `cycles` clock cycles as the rewrite writes it.
fn delay(cycles: u64) -> String {
    format!(
        "{{\n.reg .u64 %rs_t0;\n.reg .u64 %rs_t1;\n.reg .pred %rs_p;\n\
mov.u64 %rs_t0,%clock64;\n$Lrs_delay:\nmov.u64 %rs_t1,%clock64;\n\
sub.u64 %rs_t1,%rs_t1,%rs_t0;\nsetp.lt.u64 %rs_p,%rs_t1,{cycles};\n@%rs_p bra $Lrs_delay;\n}}\n"
    )
}

/// The child: loads an image of a kernel and a PTX object defining `GOMP_target_ext`
/// with GCC's wait (with the whole request around it when `RS_FULL=1`), asking for the
/// reverse-offload table when `RS_REVERSE=1`.
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
    let full = std::env::var("RS_FULL").is_ok_and(|v| v == "1");
    let (lock, unlock) = if full { (LOCK, UNLOCK) } else { ("", "") };
    let runtime = CString::new(format!(
        ".version 7.3\n.target sm_52\n.address_size 64\n\
         // BEGIN GLOBAL FUNCTION DEF: GOMP_target_ext\n\
         .visible .func GOMP_target_ext (.param .u32 %in_ar0)\n{{\n{lock}{WAIT}{unlock}ret;\n}}\n\
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
    let scratch6 = support::Scratch::new("rev-spin-cc6");
    let lib6 = support::stub_libcuda_2dev(&scratch6, &["-DSTUB_CC_MAJOR=6"]);
    #[derive(PartialEq, Debug)]
    enum Want {
        Gcc,
        Wait,
        Scoped,
    }
    // The stand-in's clock is 1980000 kHz: the default 300 ns are 594 cycles.
    for (case, reverse, full, tune, cc6, want, cycles) in [
        ("reverse", "1", "1", "", false, Want::Scoped, 594),
        (
            "reverse-nodelay",
            "1",
            "1",
            "revdelay=0",
            false,
            Want::Scoped,
            0,
        ),
        (
            "reverse-delay1000",
            "1",
            "1",
            "revdelay=1000",
            false,
            Want::Scoped,
            1980,
        ),
        (
            "reverse-wait",
            "1",
            "1",
            "revspin=wait",
            false,
            Want::Wait,
            0,
        ),
        ("reverse-cc6", "1", "1", "", true, Want::Wait, 0),
        ("reverse-short", "1", "0", "", false, Want::Wait, 0),
        (
            "reverse-revspin0",
            "1",
            "1",
            "revspin=0",
            false,
            Want::Gcc,
            0,
        ),
        ("no-reverse", "0", "1", "", false, Want::Gcc, 0),
    ] {
        let cache = scratch.join(case);
        let c = support::run_child(
            T,
            &[
                (
                    "GOMP_PLUGIN_RS_LIBCUDA",
                    if cc6 {
                        lib6.as_os_str()
                    } else {
                        lib.as_os_str()
                    },
                ),
                ("CUDA_CACHE_PATH", cache.as_os_str()),
                ("HOME", scratch.path().as_os_str()),
                ("XDG_CACHE_HOME", scratch.path().as_os_str()),
                ("GOMP_NVPTX_TUNE", OsStr::new(tune)),
                ("RS_REVERSE", OsStr::new(reverse)),
                ("RS_FULL", OsStr::new(full)),
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
        let has = |s: &str| text.contains(s);
        let scoped = if cycles > 0 {
            format!("{SCOPED_HEAD}{}{SCOPED_TAIL}", delay(cycles))
        } else {
            format!("{SCOPED_HEAD}{SCOPED_TAIL}")
        };
        let got = match (has(WAIT), has(REWRITTEN), has(&scoped)) {
            (true, false, false) => Want::Gcc,
            (false, true, false) => Want::Wait,
            (false, false, true) => Want::Scoped,
            _ => panic!("{case}: not one of the three forms in\n{text}"),
        };
        assert_eq!(got, want, "{case}:\n{text}");
        // Only the scoped form delays its first poll.
        assert_eq!(has("%rs_t0"), cycles > 0, "{case}: the first poll's delay");
        let (lock, unlock) = if full == "1" {
            (LOCK, UNLOCK)
        } else {
            ("", "")
        };
        if want != Want::Scoped {
            assert!(has(lock) && has(unlock), "{case}: the lock as GCC wrote it");
        }
        // The object's target changes with the scoped forms alone; the kernel's never.
        let sm70 = text.matches(".target sm_70\n").count();
        assert_eq!(sm70, usize::from(want == Want::Scoped), "{case}:\n{text}");
        assert!(
            text.contains(".visible .func GOMP_target_data_ext\n{\n\ttrap;\n}"),
            "{case}: the rest of the object as it was"
        );
    }
}
