//! The conformance suite (conformance/src/suite.rs) for the gcn plugin, against the
//! stand-in HSA runtime of tests/fallback/stub_libhsa.c (one gfx90a agent; memory is
//! host memory; each launch plays `STUB_HSA_SCRIPT` on the device side) with GCC 16's
//! vadd image (tests/fixtures/gcn). The kernel's script is `step:0` (the int at the
//! address in slot 0 of its argument block becomes int*10+1), or `revfn:0` (one
//! reverse-offload request for function 0 of the image's `.offload_func_table`) for
//! the `reverse_offload` scenario.
//!
//! One scenario: `cargo test --profile test-fast -p gomp-plugin-gcn --test conformance run_kernel`.

mod gcn_image;
use gcn_image::{GcnImage, GcnImageDesc, Kernel};

use gomp_plugin_conformance::suite::{Backend, Image, BUF};
use gomp_plugin_conformance::support::{self, api::*};
use gomp_plugin_gcn as _; // links the rlib holding the exported shells
use std::ffi::{c_int, c_uint, c_void, CString, OsString};

/// The gcn plugin on its stand-in HSA runtime.
struct Gcn;

/// The directory of the decompressed fixture images, in the child.
const IMAGES_ENV: &str = "GOMP_PLUGIN_RS_TEST_IMAGES";

/// A descriptor as mkoffload emits it, over a code object and kernel entries it owns.
struct Hsaco {
    _code: Vec<u8>,
    _names: Vec<CString>,
    _kernels: Vec<Kernel>,
    _image: Box<GcnImage>,
    desc: Box<GcnImageDesc>,
}

impl Hsaco {
    /// `code` with vadd.c's kernels (`_init_array`, `_fini_array`, `main._omp_fn.0`)
    /// and `ind` indirect functions.
    fn new(code: Vec<u8>, ind: c_uint) -> Hsaco {
        let names: Vec<CString> = ["_init_array", "_fini_array", "main._omp_fn.0"]
            .iter()
            .map(|n| CString::new(*n).unwrap())
            .collect();
        let kernels: Vec<Kernel> = names
            .iter()
            .map(|n| Kernel {
                name: n.as_ptr(),
                oacc_dims: [0; 3],
                sgpr_count: 0,
                vgpr_count: 48,
            })
            .collect();
        let image = Box::new(GcnImage {
            size: code.len(),
            image: code.as_ptr(),
        });
        let desc = Box::new(GcnImageDesc {
            gcn_image: &*image,
            kernel_count: kernels.len() as c_uint,
            kernel_infos: kernels.as_ptr(),
            ind_func_count: ind,
            global_variable_count: 0,
        });
        Hsaco {
            _code: code,
            _names: names,
            _kernels: kernels,
            _image: image,
            desc,
        }
    }

    /// The fixture image `file` (decompressed by the parent).
    fn fixture(file: &str, ind: c_uint) -> Hsaco {
        let dir = std::env::var_os(IMAGES_ENV).expect("set by the parent");
        let code = std::fs::read(std::path::Path::new(&dir).join(file)).expect("read an image");
        Hsaco::new(code, ind)
    }
}

impl Image for Hsaco {
    fn data(&self) -> *const c_void {
        (&*self.desc as *const GcnImageDesc).cast()
    }
}

fn stub_sym<T>(name: &str) -> *mut T {
    let lib = std::env::var_os("HSA_RUNTIME_LIB").expect("set by the parent");
    support::symbol_of_loaded(&lib, name).cast()
}

impl Backend for Gcn {
    const PRODUCT: &'static str = "gcn";
    /// GOMP_OFFLOAD_CAP_OPENMP_400 | GOMP_OFFLOAD_CAP_OPENACC_200.
    const CAPS: u32 = 4 | 8;
    /// OFFLOAD_TARGET_TYPE_GCN.
    const TYPE: c_int = 8;
    const DEVICES: c_int = 1;
    /// GOMP_VERSION_PACK (GOMP_VERSION 3, GOMP_VERSION_GCN 3).
    const IMAGE_VERSION: u32 = 0x30003;
    /// The offload kernel and the ICV block (init/fini kernels are not in the table).
    const TABLE_ENTRIES: usize = 2;
    const COMPLAINT: &'static str = "stub-hsa: BAD";
    const TOOLS: &'static [&'static str] = &["xz"];
    const SKIP: &'static [(&'static str, &'static str)] = &[];
    const BAD_IMAGES: &'static [(&'static str, &'static str)] = &[
        (
            "a gfx908 code object on gfx90a",
            "gcn image is for gfx908, the device is gfx90a",
        ),
        ("bytes that are no code object", "invalid gcn code object"),
        ("indirect functions", "an image with 1 indirect function"),
    ];

    fn stand_in(dir: &support::Scratch, reverse: bool) -> Vec<(&'static str, OsString)> {
        let lib = dir.join("libhsa.so");
        support::cc_shared(
            "tests/fallback/stub_libhsa.c",
            &lib,
            &["-DINIT_RESULT=0", "-DONE_GPU=\"gfx90a\"", "-pthread"],
        );
        for f in ["vadd-gfx90a", "vadd-gfx908"] {
            support::unxz_fixture(&format!("{f}.hsaco.xz"), &dir.join(&format!("{f}.hsaco")));
        }
        let script = if reverse { "revfn:0" } else { "step:0" };
        vec![
            ("HSA_RUNTIME_LIB", lib.into_os_string()),
            (IMAGES_ENV, dir.path().as_os_str().to_owned()),
            ("STUB_HSA_SCRIPT", script.into()),
        ]
    }

    fn image() -> Box<dyn Image> {
        Box::new(Hsaco::fixture("vadd-gfx90a.hsaco", 0))
    }

    fn bad_image(i: usize) -> Box<dyn Image> {
        Box::new(match i {
            0 => Hsaco::fixture("vadd-gfx908.hsaco", 0),
            1 => Hsaco::new(b"\x7fELF but no code object".to_vec(), 0),
            2 => Hsaco::fixture("vadd-gfx90a.hsaco", 1),
            _ => unreachable!("BAD_IMAGES has {} entries", Self::BAD_IMAGES.len()),
        })
    }

    /// An argument block whose slot 0 holds `buf`.
    fn vars(buf: *mut c_void) -> *mut c_void {
        // SAFETY: the entry points; 8 bytes from a local into a block of 8.
        unsafe {
            let v = GOMP_OFFLOAD_alloc(0, 8);
            assert!(!v.is_null(), "alloc of the argument block");
            let p = buf as u64;
            assert!(GOMP_OFFLOAD_host2dev(0, v, (&p as *const u64).cast(), 8));
            v
        }
    }

    fn free_vars(vars: *mut c_void, _buf: *mut c_void) {
        // SAFETY: the entry point, on the block `vars` made.
        assert!(unsafe { GOMP_OFFLOAD_free(0, vars) });
    }

    fn kernel(before: &[u8; BUF]) -> [u8; BUF] {
        let mut out = *before;
        let x = i32::from_le_bytes(before[..4].try_into().unwrap());
        out[..4].copy_from_slice(&x.wrapping_mul(10).wrapping_add(1).to_le_bytes());
        out
    }

    fn driver_holds(p: *const c_void, n: usize) -> bool {
        let f = stub_sym::<c_void>("stub_hsa_holds");
        // SAFETY: the stand-in's `int stub_hsa_holds(const void *, size_t)`.
        let f: unsafe extern "C" fn(*const c_void, usize) -> c_int =
            unsafe { std::mem::transmute(f) };
        // SAFETY: a lookup.
        unsafe { f(p, n) == 1 }
    }

    fn assert_released() {
        // SAFETY: the stand-in's `int stub_hsa_live[5]` and `int stub_hsa_bad`, read
        // after the plugin's threads for the device have ended.
        let (live, bad) = unsafe {
            (
                stub_sym::<[c_int; 5]>("stub_hsa_live").read_volatile(),
                stub_sym::<c_int>("stub_hsa_bad").read_volatile(),
            )
        };
        assert_eq!(
            live, [0; 5],
            "blocks, readers, executables, signals, queues left"
        );
        assert_eq!(bad, 0, "failed checks of the stand-in");
    }

    fn run(ord: c_int, tgt_fn: *mut c_void, vars: *mut c_void, args: *mut *mut c_void) {
        gomp_plugin_gcn::entry_points::run(ord, tgt_fn, vars, args);
    }

    fn async_run(
        ord: c_int,
        tgt_fn: *mut c_void,
        vars: *mut c_void,
        args: *mut *mut c_void,
        data: *mut c_void,
    ) {
        gomp_plugin_gcn::async_run(ord, tgt_fn, vars, args, data);
    }
}

gomp_plugin_conformance::conformance_suite!(Gcn);
