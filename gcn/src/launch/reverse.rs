//! Reverse offload on a gcn device (docs/gcn-launch.md §5): a request the kernel
//! wrote into the output ring ([`super::console`], which reads it into the framework's
//! `RevCall`, as nvptx's `launch/reverse.rs` reads its mailbox) is handed to libgomp's
//! `GOMP_PLUGIN_target_rev` by [`handle`], synchronously, on the thread waiting for the
//! kernel, with HSA copies either way (libgomp 13's copy callback). Functions;
//! thread-safe.

use crate::hsa::safe::memory;
use gomp_plugin::libgomp::report;
use gomp_plugin::libgomp::target::{self, RevCall};
use std::ffi::c_void;

/// libgomp 13's copy callback: HSA copies either way.
unsafe extern "C" fn copy13(dst: *mut c_void, src: *const c_void, n: usize, _token: *mut c_void) {
    let Some(rt) = crate::hsa::table::loaded() else {
        report::fatal("reverse offload: the HSA runtime is not loaded");
    };
    // SAFETY: libgomp passes a host buffer and a device address of `n` bytes.
    if let Err(e) = unsafe { memory::copy(rt, dst, src, n, "hsa_memory_copy (reverse offload)") } {
        report::fatal(&e.to_string());
    }
}

/// Hands one reverse-offload request of device `ord` to libgomp, synchronously (§5).
pub fn handle(ord: i32, call: RevCall) {
    log::debug!(
        "device {}: reverse offload of fn {:#x} ({} mapping(s))",
        ord,
        call.fn_addr,
        call.mapnum
    );
    // SAFETY: the request's words as the device wrote them; copy13 needs no token.
    unsafe { target::target_rev(&call, copy13, copy13, std::ptr::null_mut()) };
}
