//! The plugin's own C API, beyond libgomp's `GOMP_OFFLOAD_*` contract (declared in
//! `include/gomp_plugin_nvptx.h`, exported through `libgomp.map`). Programs reach it by
//! linking the plugin (`-l:libgomp-plugin-nvptx.so.1`) or with `dlopen` + `dlsym`;
//! libgomp never calls it. Errors are printed as `libgomp: ...` messages and returned as
//! a nonzero value.

use crate::host::lock as host_lock;
use gomp_plugin::edge::guard;
use std::ffi::{c_int, c_void};

/// Page-locks the host range `[p, p+size)` for direct DMA (`cuMemHostRegister`,
/// portable to every device; whole pages are locked), registered through CUDA device
/// `device` (the nvptx plugin's device number), which libgomp need not have
/// initialized yet. A range lying inside one already locked (by this call or by the
/// pinned allocator) shares it; one that overlaps a locked range without lying inside
/// it is refused. The memory stays the caller's; it must stay mapped until unlocked.
/// Thread-safe. Returns 0, or nonzero after a `libgomp:` error message.
#[no_mangle]
pub extern "C" fn gomp_nvptx_host_lock(p: *mut c_void, size: usize, device: c_int) -> c_int {
    guard::result("gomp_nvptx_host_lock", 1, || {
        host_lock::lock(p as usize, size, device).map(|()| 0)
    })
}

/// Releases one `gomp_nvptx_host_lock` made at address `p` (the same `p`); the range is
/// really unlocked (`cuMemHostUnregister`) when its last lock is released. `device` must
/// be a valid device number. Thread-safe. Returns 0, or nonzero after a `libgomp:`
/// error message (for instance when no lock was made at `p`).
#[no_mangle]
pub extern "C" fn gomp_nvptx_host_unlock(p: *mut c_void, device: c_int) -> c_int {
    guard::result("gomp_nvptx_host_unlock", 1, || {
        host_lock::unlock(p as usize, device).map(|()| 0)
    })
}
