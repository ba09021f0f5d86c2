//! `GOMP_OFFLOAD_page_locked_host_alloc/free` (libgomp 16's pinned allocator).
//! Compiled into a product as a module whose parent defines `Backend`.
#![allow(non_snake_case)]
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use super::Backend;
use gomp_plugin::edge::guard;
use gomp_plugin::{Error, Plugin};
use std::ffi::c_void;

/// Page-locked host memory; `*ptr` NULL for size 0 or out-of-memory, false only on
/// other errors. Any thread.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_page_locked_host_alloc(ptr: *mut *mut c_void, size: usize) -> bool {
    guard::ok("page_locked_host_alloc", || {
        if ptr.is_null() {
            return Err(Error::invalid("page_locked_host_alloc: no result pointer"));
        }
        let p = Backend::page_locked_host_alloc(size)?;
        // SAFETY: checked non-NULL; libgomp passes a writable pointer.
        unsafe { *ptr = p.unwrap_or(std::ptr::null_mut()) };
        Ok(())
    })
}

/// Frees page-locked host memory from `page_locked_host_alloc`; NULL is accepted.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_page_locked_host_free(ptr: *mut c_void) -> bool {
    guard::ok("page_locked_host_free", || {
        Backend::page_locked_host_free(ptr as usize)
    })
}
