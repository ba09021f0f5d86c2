//! libgomp's target-task callbacks, called the same way by every backend:
//! `GOMP_PLUGIN_target_task_completion` (a `nowait` region has completed) and
//! `GOMP_PLUGIN_target_rev` (run one reverse-offload request on the host), whose
//! argument list depends on the libgomp release. Thread-safe: libgomp allows both from
//! any thread.

use super::host::{detected, host};
use super::report;
use super::version::{Detected, Libgomp};
use std::ffi::{c_int, c_void};

/// Tells libgomp that the region it handed to `async_run` with `async_data` (libgomp's
/// opaque handle, as an address) has completed. False (and nothing done) when libgomp
/// has no such callback.
pub fn task_completion(async_data: usize) -> bool {
    match host().and_then(|h| h.task_completion) {
        Some(done) => {
            // SAFETY: libgomp's callback with the handle it gave async_run; it may be
            // called from any thread and makes no plugin calls.
            unsafe { done(async_data as *mut c_void) };
            true
        }
        None => false,
    }
}

/// One reverse-offload request as GCC's device runtimes write it: the device address
/// of the host function's entry and of the mapping arrays, and the requesting device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RevCall {
    /// Device address of the host function's table entry.
    pub fn_addr: u64,
    /// Number of mapped items.
    pub mapnum: u64,
    /// Device address of the address array.
    pub addrs: u64,
    /// Device address of the size array.
    pub sizes: u64,
    /// Device address of the kind array.
    pub kinds: u64,
    /// The requesting device's OpenMP number.
    pub dev_num: c_int,
}

/// The copy callbacks libgomp 13 takes: (dst, src, size, token).
pub type CopyFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize, *mut c_void);
/// `GOMP_PLUGIN_target_rev` of libgomp 14+.
type TargetRev7 = unsafe extern "C" fn(u64, u64, u64, u64, u64, c_int, *mut c_void);
/// `GOMP_PLUGIN_target_rev` of libgomp 13.
type TargetRev9 = unsafe extern "C" fn(u64, u64, u64, u64, u64, c_int, CopyFn, CopyFn, *mut c_void);

/// True when the loaded libgomp takes libgomp 13's 9-argument reverse-offload call.
pub fn rev_takes_copy_callbacks() -> bool {
    matches!(detected(), Detected::Known(Libgomp::V13))
}

/// Runs request `r` through `GOMP_PLUGIN_target_rev`, synchronously, in the form the
/// loaded libgomp expects: libgomp 13 with the copy callbacks `dev_to_host` and
/// `host_to_dev` and their `token`; 14+ with a NULL queue, so libgomp copies through
/// the plugin's synchronous entry points. Fatal when libgomp lacks the function.
///
/// # Safety
/// `r` holds what the device runtime wrote; the callbacks must accept `token` for the
/// duration of the call.
pub unsafe fn target_rev(
    r: &RevCall,
    dev_to_host: CopyFn,
    host_to_dev: CopyFn,
    token: *mut c_void,
) {
    let Some(rev) = host().and_then(|h| h.target_rev) else {
        report::fatal("reverse offload requested, but libgomp lacks GOMP_PLUGIN_target_rev");
    };
    if rev_takes_copy_callbacks() {
        // SAFETY: libgomp 13's signature.
        let rev: TargetRev9 = unsafe { std::mem::transmute::<usize, TargetRev9>(rev) };
        // SAFETY: the request as the device wrote it; the callbacks match CopyFn and
        // take `token` (caller).
        unsafe {
            rev(
                r.fn_addr,
                r.mapnum,
                r.addrs,
                r.sizes,
                r.kinds,
                r.dev_num,
                dev_to_host,
                host_to_dev,
                token,
            )
        };
    } else {
        // SAFETY: libgomp 14+'s signature.
        let rev: TargetRev7 = unsafe { std::mem::transmute::<usize, TargetRev7>(rev) };
        // SAFETY: the request as the device wrote it; a NULL queue makes libgomp use
        // the synchronous copy entry points.
        unsafe {
            rev(
                r.fn_addr,
                r.mapnum,
                r.addrs,
                r.sizes,
                r.kinds,
                r.dev_num,
                std::ptr::null_mut(),
            )
        };
    }
}
