//! `GOMP_OFFLOAD_*` entry points of the nvptx plugin (signatures: ABI spec §2).
#![allow(non_snake_case)]
// The signatures are the C contract; raw pointers are checked in the core.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use super::guard;
use crate::libgomp::abi::*;
use crate::libgomp::report;
use crate::nvptx;
use crate::nvptx::interop::{self, InteropObj};
use crate::nvptx::rect::{desc2d, desc3d, Side};
use std::ffi::{c_char, c_int, c_void};

/// The plugin's `GOMP_VERSION` for the libgomp that loaded us; 0 (which libgomp
/// rejects as a version mismatch) for a libgomp we do not support, after saying why.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_version() -> u32 {
    guard::value("version", 0, || {
        super::handshake::version("", "NVIDIA GPUs")
    })
}

/// "nvptx".
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_name() -> *const c_char {
    c"nvptx".as_ptr()
}

/// Capabilities: OpenMP and OpenACC offloading.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_caps() -> u32 {
    CAP_OPENMP_400 | CAP_OPENACC_200
}

/// `OFFLOAD_TARGET_TYPE_NVIDIA_PTX`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_type() -> c_int {
    TARGET_TYPE_NVIDIA_PTX
}

/// Number of devices usable under the program's `requires` mask (spec §1.5).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_num_devices(omp_requires_mask: u32) -> c_int {
    guard::value("get_num_devices", 0, || {
        nvptx::num_devices(omp_requires_mask)
    })
}

/// The device's UUID string, malloc'd for libgomp to keep; NULL if unknown.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_uid(ord: c_int) -> *const c_char {
    guard::value("get_uid", std::ptr::null(), || {
        let Some(s) = nvptx::uid(ord) else {
            return std::ptr::null();
        };
        let p = report::malloc(s.len() + 1).cast::<u8>();
        // SAFETY: `p` has room for the string and its NUL.
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), p, s.len());
            *p.add(s.len()) = 0;
        }
        p as *const c_char
    })
}

/// Opens device `ord`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_init_device(ord: c_int) -> bool {
    guard::ok("init_device", || nvptx::init_device(ord))
}

/// Closes device `ord`, unloading its images.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_fini_device(ord: c_int) -> bool {
    guard::ok("fini_device", || nvptx::fini_device(ord))
}

/// Loads an image; returns the number of table entries or -1. libgomp 13 passes only
/// five arguments: the sixth is read only for libgomp 14+ and version-3 images.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_load_image(
    ord: c_int,
    version: u32,
    target_data: *const c_void,
    target_table: *mut *mut AddrPair,
    rev_fn_table: *mut *mut u64,
    host_ind_fn_table: *mut u64,
) -> c_int {
    guard::result("load_image", -1, || {
        let v14 = nvptx::libgomp().is_some_and(|v| v >= crate::libgomp::version::Libgomp::V14);
        let ind = if v14 && version_lib(version) >= 3 {
            host_ind_fn_table
        } else {
            std::ptr::null()
        };
        // SAFETY: libgomp passes a descriptor and writable out-pointers (contract).
        unsafe { nvptx::load_image(ord, version, target_data, target_table, rev_fn_table, ind) }
    })
}

/// Unloads an image.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_unload_image(
    ord: c_int,
    version: u32,
    target_data: *const c_void,
) -> bool {
    guard::ok("unload_image", || {
        nvptx::unload_image(ord, version, target_data)
    })
}

/// Allocates device memory; NULL after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_alloc(ord: c_int, size: usize) -> *mut c_void {
    guard::result("alloc", std::ptr::null_mut(), || {
        Ok(nvptx::device(ord)?.alloc_for_libgomp(size)? as *mut c_void)
    })
}

/// Frees device memory.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_free(ord: c_int, ptr: *mut c_void) -> bool {
    guard::ok("free", || nvptx::device(ord)?.free_for_libgomp(ptr as u64))
}

/// Copies device to host.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_dev2host(
    ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> bool {
    // SAFETY: libgomp passes a host buffer of `n` bytes.
    guard::ok("dev2host", || unsafe {
        nvptx::device(ord)?.dev2host(dst, src as u64, n)
    })
}

/// Copies host to device.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_host2dev(
    ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> bool {
    // SAFETY: libgomp passes a host buffer of `n` bytes.
    guard::ok("host2dev", || unsafe {
        nvptx::device(ord)?.host2dev(dst as u64, src, n)
    })
}

/// Copies device to device.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_dev2dev(
    ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> bool {
    guard::ok("dev2dev", || {
        nvptx::device(ord)?.dev2dev(dst as u64, src as u64, n)
    })
}

/// Fills device memory with a byte value.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_memset(ord: c_int, ptr: *mut c_void, val: c_int, n: usize) -> bool {
    guard::ok("memset", || nvptx::device(ord)?.memset(ptr as u64, val, n))
}

/// Runs an OpenMP target region and waits for it; errors are fatal (contract).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_run(
    ord: c_int,
    tgt_fn: *mut c_void,
    tgt_vars: *mut c_void,
    args: *mut *mut c_void,
) {
    guard::or_fatal("run", || {
        if args.is_null() {
            return Err(crate::error::Error::invalid("No target arguments provided"));
        }
        if tgt_fn.is_null() {
            return Err(crate::error::Error::invalid("run: no kernel"));
        }
        let dev = nvptx::device(ord)?;
        // SAFETY: `tgt_fn` is a handle this plugin returned from load_image (libgomp
        // maps host functions to it); its image stays loaded while libgomp runs it.
        let f = unsafe { &*(tgt_fn as *const nvptx::image::TargetFn) };
        // SAFETY: `args` is libgomp's NULL-terminated target-argument array.
        unsafe { nvptx::run::run(&dev, f, tgt_vars, args) }
    })
}

/// Launches an OpenMP target region without waiting (`nowait`); completion is
/// reported through `GOMP_PLUGIN_target_task_completion(async_data)`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_async_run(
    ord: c_int,
    tgt_fn: *mut c_void,
    tgt_vars: *mut c_void,
    args: *mut *mut c_void,
    async_data: *mut c_void,
) {
    guard::or_fatal("async_run", || {
        if args.is_null() || tgt_fn.is_null() {
            return Err(crate::error::Error::invalid(
                "async_run: no kernel or no target arguments",
            ));
        }
        let dev = nvptx::device(ord)?;
        // SAFETY: as in GOMP_OFFLOAD_run.
        let f = unsafe { &*(tgt_fn as *const nvptx::image::TargetFn) };
        // SAFETY: `args` is libgomp's NULL-terminated target-argument array.
        unsafe { nvptx::run::run_async(&dev, f, tgt_vars, args, async_data) }
    })
}

/// Page-locked host memory (libgomp 16's pinned allocator) from the first open device's
/// pinned pool; `*ptr` NULL for size 0 or out-of-memory, false only on other errors.
/// Any thread (the device's context is made current).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_page_locked_host_alloc(ptr: *mut *mut c_void, size: usize) -> bool {
    guard::ok("page_locked_host_alloc", || {
        if ptr.is_null() {
            return Err(crate::error::Error::invalid(
                "page_locked_host_alloc: no result pointer",
            ));
        }
        let p = nvptx::any_device()?.pinned_alloc(size)?;
        // SAFETY: checked non-NULL; libgomp passes a writable pointer.
        unsafe { *ptr = p.unwrap_or(std::ptr::null_mut()) };
        Ok(())
    })
}

/// Frees page-locked host memory from `page_locked_host_alloc`; NULL is accepted.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_page_locked_host_free(ptr: *mut c_void) -> bool {
    guard::ok("page_locked_host_free", || nvptx::pinned_free(ptr as usize))
}

/// Managed memory on device `ord`; NULL after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_managed_alloc(ord: c_int, size: usize) -> *mut c_void {
    guard::result("managed_alloc", std::ptr::null_mut(), || {
        Ok(nvptx::device(ord)?.managed_alloc(size)? as *mut c_void)
    })
}

/// Frees managed memory.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_managed_free(ord: c_int, ptr: *mut c_void) -> bool {
    guard::ok("managed_free", || {
        nvptx::device(ord)?.free_direct(ptr as u64)
    })
}

/// 1 if device `ord` can access all of `[ptr, ptr+size)`, else 0.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_is_accessible_ptr(
    ord: c_int,
    ptr: *const c_void,
    size: usize,
) -> c_int {
    guard::result("is_accessible_ptr", 0, || {
        Ok(nvptx::device(ord)?.is_accessible(ptr as usize, size) as c_int)
    })
}

fn rect_device(
    dst_ord: c_int,
    src_ord: c_int,
) -> crate::error::Result<std::sync::Arc<nvptx::device::Device>> {
    nvptx::device(if dst_ord >= 0 { dst_ord } else { src_ord })
}

fn side(
    ord: c_int,
    base: *const c_void,
    pitch: usize,
    rows: usize,
    off: (usize, usize, usize),
) -> crate::error::Result<Side> {
    Side::at(ord, base as usize, pitch, rows, off)
        .ok_or_else(|| crate::error::Error::invalid("omp_target_memcpy_rect: offsets overflow"))
}

/// 2-D rectangular copy; ord -1 is the host. Returns 1 on success, 0 after an error.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn GOMP_OFFLOAD_memcpy2d(
    dst_ord: c_int,
    src_ord: c_int,
    dim1_size: usize,
    dim0_len: usize,
    dst: *mut c_void,
    dst_off1_size: usize,
    dst_off0_len: usize,
    dst_dim1_size: usize,
    src: *const c_void,
    src_off1_size: usize,
    src_off0_len: usize,
    src_dim1_size: usize,
) -> c_int {
    guard::ok("memcpy2d", || {
        let d = side(
            dst_ord,
            dst,
            dst_dim1_size,
            0,
            (dst_off1_size, dst_off0_len, 0),
        )?;
        let s = side(
            src_ord,
            src,
            src_dim1_size,
            0,
            (src_off1_size, src_off0_len, 0),
        )?;
        // SAFETY: libgomp passes host blocks valid for the described rectangle.
        unsafe { rect_device(dst_ord, src_ord)?.copy2d(&desc2d(d, s, dim1_size, dim0_len)) }
    }) as c_int
}

/// 3-D rectangular copy; ord -1 is the host. Returns 1 on success, 0 after an error.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn GOMP_OFFLOAD_memcpy3d(
    dst_ord: c_int,
    src_ord: c_int,
    dim2_size: usize,
    dim1_len: usize,
    dim0_len: usize,
    dst: *mut c_void,
    dst_off2_size: usize,
    dst_off1_len: usize,
    dst_off0_len: usize,
    dst_dim2_size: usize,
    dst_dim1_len: usize,
    src: *const c_void,
    src_off2_size: usize,
    src_off1_len: usize,
    src_off0_len: usize,
    src_dim2_size: usize,
    src_dim1_len: usize,
) -> c_int {
    guard::ok("memcpy3d", || {
        let d = side(
            dst_ord,
            dst,
            dst_dim2_size,
            dst_dim1_len,
            (dst_off2_size, dst_off1_len, dst_off0_len),
        )?;
        let s = side(
            src_ord,
            src,
            src_dim2_size,
            src_dim1_len,
            (src_off2_size, src_off1_len, src_off0_len),
        )?;
        // SAFETY: libgomp passes host blocks valid for the described box.
        unsafe {
            rect_device(dst_ord, src_ord)?.copy3d(&desc3d(d, s, dim2_size, dim1_len, dim0_len))
        }
    }) as c_int
}

/// Initialises (0), uses (1) or destroys (2) an OpenMP interop object.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_interop(
    obj: *mut InteropObj,
    ord: c_int,
    flag: u32,
    targetsync: bool,
    prefer_type: *const c_char,
) {
    guard::or_fatal("interop", || {
        // SAFETY: libgomp passes its live, calloc'd object.
        let obj = unsafe { obj.as_mut() }
            .ok_or_else(|| crate::error::Error::invalid("interop: no object"))?;
        // SAFETY: `prefer_type` is NULL or the compiler's encoding.
        unsafe { nvptx::device(ord)?.interop(obj, flag, targetsync, prefer_type) }
    })
}

fn interop_query(obj: *mut InteropObj, prop: c_int, kind: u8, rc: *mut c_int) -> interop::Value {
    let (v, code) = guard::result(
        "get_interop",
        (interop::Value::None, interop::IRC_NO_VALUE),
        || {
            // SAFETY: libgomp passes an object it initialised through us.
            let o = unsafe { obj.as_ref() }
                .ok_or_else(|| crate::error::Error::invalid("interop: no object"))?;
            let (dev, ctx) = nvptx::device(o.device_num)?.interop_handles();
            Ok(interop::as_kind(interop::property(o, prop, dev, ctx), kind))
        },
    );
    if !rc.is_null() {
        // SAFETY: checked non-NULL; libgomp passes the caller's return-code slot.
        unsafe { *rc = code };
    }
    v
}

/// Integer interop property; `*rc` says whether it exists and its type.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_interop_int(
    obj: *mut InteropObj,
    prop: c_int,
    rc: *mut c_int,
) -> isize {
    match interop_query(obj, prop, b'i', rc) {
        interop::Value::Int(v) => v,
        _ => 0,
    }
}

/// Pointer interop property.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_interop_ptr(
    obj: *mut InteropObj,
    prop: c_int,
    rc: *mut c_int,
) -> *mut c_void {
    match interop_query(obj, prop, b'p', rc) {
        interop::Value::Ptr(p) => p,
        _ => std::ptr::null_mut(),
    }
}

/// String interop property (static text).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_interop_str(
    obj: *mut InteropObj,
    prop: c_int,
    rc: *mut c_int,
) -> *const c_char {
    match interop_query(obj, prop, b's', rc) {
        interop::Value::Str(s) => s.as_ptr(),
        _ => std::ptr::null(),
    }
}

/// The C type of an interop property, or NULL.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_interop_type_desc(
    obj: *mut InteropObj,
    prop: c_int,
) -> *const c_char {
    guard::value("get_interop_type_desc", std::ptr::null(), || {
        // SAFETY: libgomp passes an object it initialised through us.
        let fr = unsafe { obj.as_ref() }.map_or(interop::FR_CUDA, |o| o.fr);
        interop::type_desc(fr, prop).map_or(std::ptr::null(), |s| s.as_ptr())
    })
}
