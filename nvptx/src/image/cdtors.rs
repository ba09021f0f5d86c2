//! The image's global constructor and destructor kernels, run at load and unload on a
//! pooled stream of the device (waited for).

use crate::cuda::sys::CUfunction;
use crate::device::Core;
use gomp_plugin::error::Result;
use std::ffi::{c_void, CStr, CString};

/// Runs the image's global constructor or destructor kernel `base` (or its `__mgomp`
/// variant, which takes a one-warp soft stack), if the image has one.
/// `function` looks a kernel up in the image (`Image::function`).
pub fn run_cdtors(
    dev: &Core,
    function: impl Fn(&CStr) -> Result<Option<CUfunction>>,
    base: &CStr,
) -> Result<()> {
    let (func, mgomp) = match function(base)? {
        Some(f) => (f, false),
        None => match function(&with_suffix(base, "__mgomp"))? {
            Some(f) => (f, true),
            None => return Ok(()),
        },
    };
    let size = dev.config().soft_stack;
    let stack = if mgomp {
        Some(dev.memory().stacks().acquire(size)?)
    } else {
        None
    };
    // Stacks grow down: the kernel takes the top of its block.
    let mut top: u64 = stack.as_ref().map_or(0, |b| b.ptr + size as u64);
    let mut params: [*mut c_void; 1] = [(&mut top as *mut u64).cast()];
    let kparams = if mgomp {
        params.as_mut_ptr()
    } else {
        std::ptr::null_mut()
    };
    log::debug!(
        "running {}{}",
        base.to_string_lossy(),
        if mgomp { "__mgomp" } else { "" }
    );
    let r = dev.launch().on_stream(|s| {
        // SAFETY: 1×1×1 launch; the parameter (if any) points to a live local.
        unsafe { s.launch(func, (1, 1, 1), (1, 1, 1), 0, kparams) }
    });
    if let (Ok(()), Some(b)) = (&r, stack) {
        dev.memory().stacks().release(b);
    }
    r
}

/// Name helper for kernels looked up with a suffix.
pub fn with_suffix(name: &CStr, suffix: &str) -> CString {
    let mut v = name.to_bytes().to_vec();
    v.extend_from_slice(suffix.as_bytes());
    CString::new(v).unwrap_or_default()
}
