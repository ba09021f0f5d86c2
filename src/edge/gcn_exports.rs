//! `GOMP_OFFLOAD_*` entry points of the gcn plugin (gcn build; signatures: ABI spec §2,
//! §11). **Experimental, unverified on AMD hardware**: the handshake, device
//! discovery, device open/close, memory (alloc, free, copies, memset,
//! is_accessible_ptr) and image load/unload are implemented from the contract and the
//! HSA 1.x API; `run`/`async_run` return a precise not-implemented error (the gcn
//! launch protocol is unspecified here), and `can_run` says false so libgomp runs
//! target regions on the host. Errors become libgomp's failure value after a
//! `libgomp:` message. OpenACC is not offered (`get_caps`), so no `openacc_*` entry
//! point is exported; nor are interop and page_locked_host_* (which GCC 16's gcn
//! plugin lacks too). All are thread-safe.
#![allow(non_snake_case)]
// The signatures are the C contract; raw pointers are checked in the core.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use super::guard;
use crate::blocks::DevPtr;
use crate::error::Error;
use crate::gcn::{self, device};
use crate::libgomp::abi::*;
use crate::libgomp::report;
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

/// Opens device `ord`: finds its memory regions (unverified on hardware).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_init_device(ord: c_int) -> bool {
    guard::ok("init_device", || gcn::init_device(ord))
}

/// Closes device `ord`: unloads its images and frees what libgomp left allocated.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_fini_device(ord: c_int) -> bool {
    guard::ok("fini_device", || gcn::fini_device(ord))
}

/// Checks the image (descriptor, code object, kernel descriptors, target), loads it
/// into an HSA executable and returns the entry count of the table it stores in
/// `*target_table` (kernels, variables, ICV block); -1 after an error message.
/// Reverse offload is never offered (`get_num_devices` refuses the requirement), so
/// `*rev_fn_table` is set to NULL.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_load_image(
    ord: c_int,
    version: u32,
    target_data: *const c_void,
    target_table: *mut *mut AddrPair,
    rev_fn_table: *mut *mut u64,
    _host_ind_fn_table: *mut u64,
) -> c_int {
    guard::result("load_image", -1, || {
        if target_table.is_null() {
            return Err(Error::invalid("load_image: no table pointer"));
        }
        let dev = device::get(ord)?;
        // SAFETY: libgomp passes mkoffload's descriptor (contract).
        let pairs = unsafe { dev.load_image(version, target_data)? };
        let out = report::malloc(std::mem::size_of_val(pairs.as_slice())).cast::<AddrPair>();
        // SAFETY: `out` has room for the entries; the out-pointers are writable
        // (contract) or NULL.
        unsafe {
            std::ptr::copy_nonoverlapping(pairs.as_ptr(), out, pairs.len());
            *target_table = out;
            if !rev_fn_table.is_null() {
                *rev_fn_table = std::ptr::null_mut();
            }
        }
        Ok(pairs.len() as c_int)
    })
}

/// Destroys the executable of an image `load_image` loaded; false after an error
/// message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_unload_image(ord: c_int, version: u32, data: *const c_void) -> bool {
    guard::ok("unload_image", || {
        device::get(ord)?.unload_image(version, data)
    })
}

/// Allocates device memory; NULL after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_alloc(ord: c_int, size: usize) -> *mut c_void {
    guard::result("alloc", std::ptr::null_mut(), || {
        Ok(device::get(ord)?.memory.alloc(size)? as *mut c_void)
    })
}

/// Frees device memory (NULL is accepted); false after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_free(ord: c_int, ptr: *mut c_void) -> bool {
    guard::ok("free", || device::get(ord)?.memory.free(ptr as DevPtr))
}

/// Synchronous copy (dev2host); false after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_dev2host(
    ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> bool {
    // SAFETY: libgomp passes a host buffer valid for `n` bytes (contract).
    guard::ok("dev2host", || unsafe {
        device::get(ord)?.memory.dev2host(dst, src as DevPtr, n)
    })
}

/// Synchronous copy (host2dev); false after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_host2dev(
    ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> bool {
    // SAFETY: libgomp passes a host buffer valid for `n` bytes (contract).
    guard::ok("host2dev", || unsafe {
        device::get(ord)?.memory.host2dev(dst as DevPtr, src, n)
    })
}

/// Synchronous device-to-device copy; false after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_dev2dev(
    ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> bool {
    guard::ok("dev2dev", || {
        device::get(ord)?
            .memory
            .dev2dev(dst as DevPtr, src as DevPtr, n)
    })
}

/// Sets `n` device bytes to the low byte of `val`; false after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_memset(ord: c_int, ptr: *mut c_void, val: c_int, n: usize) -> bool {
    guard::ok("memset", || {
        device::get(ord)?.memory.memset(ptr as DevPtr, val, n)
    })
}

/// Whether `fn` can run on the device: never (kernel dispatch is not implemented, see
/// `gcn::dispatch`), so libgomp runs every target region on the host.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_can_run(_tgt_fn: *mut c_void) -> bool {
    false
}

/// Not implemented (the gcn launch protocol is not specified; see `gcn::dispatch`);
/// errors of `run` are fatal by contract. Unreachable from libgomp while `can_run`
/// says false.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_run(
    _ord: c_int,
    _tgt_fn: *mut c_void,
    _vars: *mut c_void,
    _args: *mut *mut c_void,
) {
    guard::or_fatal("run", || Err(gcn::dispatch::launch_protocol_missing("run")))
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
        Err(gcn::dispatch::launch_protocol_missing("async_run"))
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

/// 1 if device `ord` can access `[ptr, ptr+size)` (memory allocated on it, or any
/// memory on a full-profile agent), else 0; 0 after an error message for a device
/// that is not open.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_is_accessible_ptr(
    ord: c_int,
    ptr: *const c_void,
    size: usize,
) -> c_int {
    guard::result("is_accessible_ptr", 0, || {
        Ok(device::get(ord)?.memory.is_accessible(ptr as usize, size) as c_int)
    })
}
