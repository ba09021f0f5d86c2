//! The `GOMP_OFFLOAD_openacc_cuda_*` entry points (signatures: docs/plugin-abi.md §2):
//! the CUDA interop of OpenACC, over the backend's [`gomp_plugin::OpenAcc`] and its
//! queue type. libgomp looks them up all four or none; only a CUDA product includes
//! this file (next to `openacc.rs`), as a module whose parent defines `Backend`.
#![allow(non_snake_case)]
// The signatures are the C contract; raw pointers are checked here or in the backend.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use super::Backend;
use gomp_plugin::edge::guard;
use gomp_plugin::libgomp::abi::GoaccAsyncqueue;
use gomp_plugin::{AccQueue, Error, OpenAcc, Result};
use std::ffi::{c_int, c_void};

type Queue = <Backend as OpenAcc>::Queue;

fn queue<'a>(aq: *mut GoaccAsyncqueue) -> Result<&'a Queue> {
    // SAFETY: `aq` is NULL or a queue from openacc_async_construct not yet destroyed
    // (libgomp's contract).
    unsafe { aq.cast::<Queue>().as_ref() }.ok_or_else(|| Error::invalid("OpenACC: no async queue"))
}

/// Pointer to the calling thread's native device handle (`CUdevice`); NULL without
/// OpenACC thread data.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_cuda_get_current_device() -> *mut c_void {
    guard::value(
        "openacc_cuda_get_current_device",
        std::ptr::null_mut(),
        Backend::native_device,
    )
}

/// The calling thread's native context; NULL without OpenACC thread data.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_cuda_get_current_context() -> *mut c_void {
    guard::value(
        "openacc_cuda_get_current_context",
        std::ptr::null_mut(),
        Backend::native_context,
    )
}

/// The native stream of `aq`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_cuda_get_stream(aq: *mut GoaccAsyncqueue) -> *mut c_void {
    guard::result("openacc_cuda_get_stream", std::ptr::null_mut(), || {
        Ok(AccQueue::native_stream(queue(aq)?))
    })
}

/// Makes `aq` use the program's `stream`; 1 on success, 0 after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_cuda_set_stream(
    aq: *mut GoaccAsyncqueue,
    stream: *mut c_void,
) -> c_int {
    guard::result("openacc_cuda_set_stream", 0, || {
        AccQueue::set_native_stream(queue(aq)?, stream)?;
        Ok(1)
    })
}
