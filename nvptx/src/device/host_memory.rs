//! Page-locked host memory the device can reach: libgomp 16's pinned allocator, served
//! by the device's pinned pool ([`crate::host::memory`]). (Managed memory and the
//! accessibility query are libgomp's memory entry points, `entry_points.rs`.) Any
//! thread.

use crate::device::Core;
use gomp_plugin::error::Result;
use gomp_plugin::DeviceCore;
use std::ffi::c_void;

impl Core {
    /// Page-locked host memory of `size` bytes from the device's pinned pool, usable
    /// from every context, 64-byte aligned (page-aligned above the pool's small sizes).
    /// `Ok(None)` for size 0 and on out-of-memory (the contract's "NULL and true").
    /// Any thread: the device's context is made current first.
    pub fn pinned_alloc(&self, size: usize) -> Result<Option<*mut c_void>> {
        if size == 0 {
            return Ok(None);
        }
        self.activate()?;
        Ok(self.memory.pinned.alloc(size)?.map(|p| p as *mut c_void))
    }

    /// Frees memory from [`Core::pinned_alloc`] (NULL is accepted); an address the
    /// pool does not hold is an error. Any thread.
    pub fn pinned_free(&self, p: usize) -> Result<()> {
        if p == 0 {
            return Ok(());
        }
        self.activate()?;
        self.memory.pinned.free(p)
    }

    /// [`Core::pinned_free`] answering `Ok(false)` (nothing freed) for an address the
    /// pool does not hold. Any thread.
    pub fn pinned_try_free(&self, p: usize) -> Result<bool> {
        if p == 0 {
            return Ok(true);
        }
        self.activate()?;
        self.memory.pinned.try_free(p)
    }
}
