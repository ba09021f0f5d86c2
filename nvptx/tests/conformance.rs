//! The conformance suite (conformance/src/suite.rs) for the nvptx plugin, against the
//! stand-in libcuda of tests/fallback/stub_libcuda_2dev.c (two devices whose memory is
//! host memory; its kernel `gomp_stub_double` doubles the eight 64-bit words at its
//! first argument when its stream runs). Skipped, with the reason in `SKIP`:
//! `reverse_offload`.
//!
//! One scenario: `cargo test --profile test-fast -p gomp-plugin-nvptx --test conformance run_kernel`.

use gomp_plugin_conformance::suite::{Backend, Image, BUF};
use gomp_plugin_conformance::support::{self, image};
use gomp_plugin_nvptx as _; // links the rlib holding the exported shells
use std::ffi::{c_int, c_void, CString, OsString};

/// The nvptx plugin on its stand-in libcuda.
struct Nvptx;

/// A PTX object declaring the stand-in's doubling kernel as `name`... or not.
fn ptx(entry: &str) -> CString {
    CString::new(format!(
        ".version 6.0\n.target sm_52\n.address_size 64\n\
         .visible .entry {entry}(.param .u64 vars, .param .u64 stacks, .param .u64 size)\n{{\n\tret;\n}}\n"
    ))
    .unwrap()
}

struct Ptx(image::Image);

impl Image for Ptx {
    fn data(&self) -> *const c_void {
        self.0.data()
    }
}

fn lib() -> OsString {
    std::env::var_os("GOMP_PLUGIN_RS_LIBCUDA").expect("set by the parent")
}

/// The device whose memory holds `p` according to the stand-in (-1: page-locked host
/// memory, -2: unknown).
fn owner(p: usize) -> c_int {
    let f = support::symbol_of_loaded(&lib(), "stub_libcuda_owner");
    // SAFETY: the stand-in's `int stub_libcuda_owner (unsigned long long)`.
    let f: unsafe extern "C" fn(u64) -> c_int = unsafe { std::mem::transmute(f) };
    // SAFETY: a plain lookup.
    unsafe { f(p as u64) }
}

impl Backend for Nvptx {
    const PRODUCT: &'static str = "nvptx";
    /// GOMP_OFFLOAD_CAP_OPENMP_400 | GOMP_OFFLOAD_CAP_OPENACC_200.
    const CAPS: u32 = 4 | 8;
    /// OFFLOAD_TARGET_TYPE_NVIDIA_PTX.
    const TYPE: c_int = 5;
    const DEVICES: c_int = 2;
    const IMAGE_VERSION: u32 = image::VERSION;
    /// The kernel and the ICV block.
    const TABLE_ENTRIES: usize = 2;
    const COMPLAINT: &'static str = "stub libcuda:";
    const TOOLS: &'static [&'static str] = &[];
    const SKIP: &'static [(&'static str, &'static str)] = &[(
        "reverse_offload",
        "the stand-in libcuda runs no device code, so no kernel can post a request to the \
         plugin's mailbox; reverse offload is checked on a GPU by tests/device/run.sh \
         (revoff_device_heap, revoff_nested) and bench/revoff_bench.c",
    )];
    const BAD_IMAGES: &'static [(&'static str, &'static str)] =
        &[("a table naming a kernel the PTX lacks", "gomp_stub_missing")];

    fn stand_in(dir: &support::Scratch, _reverse: bool) -> Vec<(&'static str, OsString)> {
        let lib = support::stub_libcuda_2dev(dir, &[]);
        // The linked-image cache off: the suite leaves nothing in the user's cache.
        vec![
            ("GOMP_PLUGIN_RS_LIBCUDA", lib.into_os_string()),
            ("GOMP_NVPTX_LINK_CACHE", "0".into()),
        ]
    }

    fn image() -> Box<dyn Image> {
        Box::new(Ptx(image::Image::new(
            vec![ptx("gomp_stub_double")],
            &["gomp_stub_double"],
        )))
    }

    fn bad_image(i: usize) -> Box<dyn Image> {
        match i {
            0 => Box::new(Ptx(image::Image::new(
                vec![ptx("gomp_stub_double")],
                &["gomp_stub_missing"],
            ))),
            _ => unreachable!("BAD_IMAGES has {} entries", Self::BAD_IMAGES.len()),
        }
    }

    /// The kernel's first argument is `tgt_vars` itself.
    fn vars(buf: *mut c_void) -> *mut c_void {
        buf
    }

    fn free_vars(_vars: *mut c_void, _buf: *mut c_void) {}

    fn kernel(before: &[u8; BUF]) -> [u8; BUF] {
        let mut out = [0u8; BUF];
        for (o, w) in out.chunks_exact_mut(8).zip(before.chunks_exact(8)) {
            let w = u64::from_le_bytes(w.try_into().unwrap());
            o.copy_from_slice(&w.wrapping_mul(2).to_le_bytes());
        }
        out
    }

    fn driver_holds(p: *const c_void, n: usize) -> bool {
        owner(p as usize) == 0 && owner(p as usize + n - 1) == 0
    }

    fn assert_released() {
        let s = support::stub_stats(0);
        assert_eq!(s.ctx_refs, 0, "context references left: {s:?}");
        assert_eq!(s.live_allocs, 0, "device memory left: {s:?}");
        assert_eq!(s.live_streams, 0, "streams left: {s:?}");
        assert_eq!(s.live_events, 0, "events left: {s:?}");
        assert_eq!(s.live_pools, 0, "memory pools left: {s:?}");
        assert_eq!(s.live_host_allocs, 0, "page-locked memory left: {s:?}");
        assert_eq!(s.misuse, 0, "calls the stand-in refused: {s:?}");
    }

    fn run(ord: c_int, tgt_fn: *mut c_void, vars: *mut c_void, args: *mut *mut c_void) {
        gomp_plugin_nvptx::entry_points::run(ord, tgt_fn, vars, args);
    }

    fn async_run(
        ord: c_int,
        tgt_fn: *mut c_void,
        vars: *mut c_void,
        args: *mut *mut c_void,
        data: *mut c_void,
    ) {
        gomp_plugin_nvptx::async_run(ord, tgt_fn, vars, args, data);
    }
}

gomp_plugin_conformance::conformance_suite!(Nvptx);
