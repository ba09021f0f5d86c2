//! `GOMP_OFFLOAD_can_run` (optional in the contract; GCC's gcn plugin has it, its nvptx
//! plugin does not). Compiled into a product as a module whose parent defines `Backend`.
#![allow(non_snake_case)]
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use super::Backend;
use gomp_plugin::edge::guard;
use gomp_plugin::Plugin;
use std::ffi::c_void;

/// Whether the kernel handle `tgt_fn` can run on its device; false makes libgomp run
/// the region on the host (also after an error message for a handle that is not a
/// live kernel).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_can_run(tgt_fn: *mut c_void) -> bool {
    guard::result("can_run", false, || {
        Backend::registry()
            .kernels()
            .with_known("can_run", tgt_fn as usize, |k| {
                Ok(Backend::can_run(k.kernel))
            })
    })
}
