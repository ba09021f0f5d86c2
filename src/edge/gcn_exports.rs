//! `GOMP_OFFLOAD_*` entry points of the gcn plugin (gcn build; signatures: ABI spec §2,
//! §11). **Experimental**: the handshake, device discovery and image checks are
//! implemented; entry points that need HSA-side work (executables, memory, dispatch)
//! return libgomp's failure value after a `libgomp:` message saying they are not
//! implemented. With 0 devices (the only case verified: no AMD GPU was available)
//! libgomp never reaches them. OpenACC is not offered (`get_caps`), so no
//! `openacc_*` entry point is exported; nor are interop and page_locked_host_* (which
//! GCC 16's gcn plugin lacks too). All are thread-safe.
#![allow(non_snake_case)]
// The signatures are the C contract; raw pointers are checked in the core.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use super::guard;
use crate::gcn;
use crate::libgomp::abi::*;
use std::ffi::{c_char, c_int, c_void};

/// The plugin's `GOMP_VERSION` for the libgomp that loaded us; 0 (which libgomp
/// rejects as a version mismatch) for a libgomp we do not support, after saying why.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_version() -> u32 {
    guard::value("version", 0, || {
        super::handshake::version(" (gcn, experimental)", "AMD GPUs")
    })
}

/// "gcn".
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_name() -> *const c_char {
    c"gcn".as_ptr()
}

/// Capabilities: OpenMP offloading only. OpenACC is not offered by this plugin (GCC's
/// own gcn plugin offers it).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_caps() -> u32 {
    CAP_OPENMP_400
}

/// `OFFLOAD_TARGET_TYPE_GCN` (8).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_type() -> c_int {
    TARGET_TYPE_GCN
}

/// Number of usable devices: 0 without a working HSA runtime or GPU agent, and 0 by
/// default even with one (see `gcn::EXPERIMENTAL_ENV`); a `GOMP_DEBUG` line says why.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_num_devices(omp_requires_mask: u32) -> c_int {
    guard::value("get_num_devices", 0, || gcn::num_devices(omp_requires_mask))
}

/// No UID is known: NULL (libgomp then has none for the device).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_uid(_ord: c_int) -> *const c_char {
    std::ptr::null()
}

/// Opens device `ord` (records it only; unverified on hardware).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_init_device(ord: c_int) -> bool {
    guard::ok("init_device", || gcn::init_device(ord))
}

/// Closes device `ord`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_fini_device(ord: c_int) -> bool {
    guard::ok("fini_device", || gcn::fini_device(ord))
}

/// Checks the image (descriptor, code object, kernel descriptors, target), then fails
/// with -1: loading it into an HSA executable is not implemented.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_load_image(
    ord: c_int,
    version: u32,
    target_data: *const c_void,
    _target_table: *mut *mut AddrPair,
    _rev_fn_table: *mut *mut u64,
    _host_ind_fn_table: *mut u64,
) -> c_int {
    // SAFETY: libgomp passes mkoffload's descriptor (contract).
    guard::result("load_image", -1, || unsafe {
        gcn::load_image(ord, version, target_data)
    })
}

/// Not implemented (no image can be loaded): false after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_unload_image(
    _ord: c_int,
    _version: u32,
    _data: *const c_void,
) -> bool {
    guard::ok("unload_image", || {
        Err(gcn::not_implemented(
            "unload_image",
            "unloading an HSA executable",
        ))
    })
}

/// Not implemented: NULL after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_alloc(_ord: c_int, _size: usize) -> *mut c_void {
    guard::result("alloc", std::ptr::null_mut(), || {
        Err(gcn::not_implemented("alloc", "device memory allocation"))
    })
}

/// Not implemented: false after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_free(_ord: c_int, _ptr: *mut c_void) -> bool {
    guard::ok("free", || {
        Err(gcn::not_implemented("free", "freeing device memory"))
    })
}

/// Not implemented: false after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_dev2host(
    _ord: c_int,
    _dst: *mut c_void,
    _src: *const c_void,
    _n: usize,
) -> bool {
    guard::ok("dev2host", || {
        Err(gcn::not_implemented("dev2host", "device-to-host copy"))
    })
}

/// Not implemented: false after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_host2dev(
    _ord: c_int,
    _dst: *mut c_void,
    _src: *const c_void,
    _n: usize,
) -> bool {
    guard::ok("host2dev", || {
        Err(gcn::not_implemented("host2dev", "host-to-device copy"))
    })
}

/// Not implemented: false after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_dev2dev(
    _ord: c_int,
    _dst: *mut c_void,
    _src: *const c_void,
    _n: usize,
) -> bool {
    guard::ok("dev2dev", || {
        Err(gcn::not_implemented("dev2dev", "device-to-device copy"))
    })
}

/// Not implemented: false after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_memset(
    _ord: c_int,
    _ptr: *mut c_void,
    _val: c_int,
    _n: usize,
) -> bool {
    guard::ok("memset", || {
        Err(gcn::not_implemented("memset", "device memset"))
    })
}

/// Whether `fn` can run on the device: never (no image can be loaded), so libgomp runs
/// the region on the host.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_can_run(_tgt_fn: *mut c_void) -> bool {
    false
}

/// Not implemented; errors of `run` are fatal by contract.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_run(
    _ord: c_int,
    _tgt_fn: *mut c_void,
    _vars: *mut c_void,
    _args: *mut *mut c_void,
) {
    guard::or_fatal("run", || {
        Err(gcn::not_implemented("run", "kernel dispatch"))
    })
}

/// Not implemented; fatal like `run` (the task would otherwise never complete).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_async_run(
    _ord: c_int,
    _tgt_fn: *mut c_void,
    _vars: *mut c_void,
    _args: *mut *mut c_void,
    _async_data: *mut c_void,
) {
    guard::or_fatal("async_run", || {
        Err(gcn::not_implemented(
            "async_run",
            "asynchronous kernel dispatch",
        ))
    })
}

/// Not implemented: 0 (false) after an error message.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn GOMP_OFFLOAD_memcpy2d(
    _dst_ord: c_int,
    _src_ord: c_int,
    _dim1_size: usize,
    _dim0_len: usize,
    _dst: *mut c_void,
    _dst_off1_size: usize,
    _dst_off0_len: usize,
    _dst_dim1_size: usize,
    _src: *const c_void,
    _src_off1_size: usize,
    _src_off0_len: usize,
    _src_dim1_size: usize,
) -> c_int {
    guard::result("memcpy2d", 0, || {
        Err(gcn::not_implemented("memcpy2d", "2-D copy"))
    })
}

/// Not implemented: 0 (false) after an error message.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn GOMP_OFFLOAD_memcpy3d(
    _dst_ord: c_int,
    _src_ord: c_int,
    _dim2_size: usize,
    _dim1_len: usize,
    _dim0_len: usize,
    _dst: *mut c_void,
    _dst_off2_size: usize,
    _dst_off1_len: usize,
    _dst_off0_len: usize,
    _dst_dim2_size: usize,
    _dst_dim1_len: usize,
    _src: *const c_void,
    _src_off2_size: usize,
    _src_off1_len: usize,
    _src_off0_len: usize,
    _src_dim2_size: usize,
    _src_dim1_len: usize,
) -> c_int {
    guard::result("memcpy3d", 0, || {
        Err(gcn::not_implemented("memcpy3d", "3-D copy"))
    })
}

/// Not implemented: NULL after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_managed_alloc(_ord: c_int, _size: usize) -> *mut c_void {
    guard::result("managed_alloc", std::ptr::null_mut(), || {
        Err(gcn::not_implemented("managed_alloc", "managed memory"))
    })
}

/// Not implemented: false after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_managed_free(_ord: c_int, _ptr: *mut c_void) -> bool {
    guard::ok("managed_free", || {
        Err(gcn::not_implemented("managed_free", "managed memory"))
    })
}

/// Unknown accessibility: 0 (not accessible), the safe answer.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_is_accessible_ptr(
    _ord: c_int,
    _ptr: *const c_void,
    _size: usize,
) -> c_int {
    0
}
