//! Page-locked host memory the device can reach: libgomp 16's pinned allocator, served
//! by the device's pinned pool ([`crate::host::pinned_chunks`]), a part of the device's
//! [`Memory`]. (Managed memory and the accessibility query are libgomp's memory entry
//! points, `entry_points.rs`.) Any thread.

use crate::device::memory::Memory;
use gomp_plugin::error::Result;
use std::ffi::c_void;

impl Memory {
    /// Page-locked host memory of `size` bytes from the device's pinned pool, usable
    /// from every context, 64-byte aligned (page-aligned above the pool's small sizes).
    /// `Ok(None)` for size 0 and on out-of-memory (the contract's "NULL and true").
    /// Any thread: `activate` makes the device's context current first.
    pub fn pinned_alloc(
        &self,
        size: usize,
        activate: impl FnOnce() -> Result<()>,
    ) -> Result<Option<*mut c_void>> {
        if size == 0 {
            return Ok(None);
        }
        activate()?;
        Ok(self.pinned().alloc(size)?.map(|p| p as *mut c_void))
    }

    /// Frees memory from [`Memory::pinned_alloc`] (NULL is accepted); an address the
    /// pool does not hold is an error. Any thread (`activate` as there).
    pub fn pinned_free(&self, p: usize, activate: impl FnOnce() -> Result<()>) -> Result<()> {
        if p == 0 {
            return Ok(());
        }
        activate()?;
        self.pinned().free(p)
    }

    /// [`Memory::pinned_free`] answering `Ok(false)` (nothing freed) for an address the
    /// pool does not hold. Any thread.
    pub fn pinned_try_free(&self, p: usize, activate: impl FnOnce() -> Result<()>) -> Result<bool> {
        if p == 0 {
            return Ok(true);
        }
        activate()?;
        self.pinned().try_free(p)
    }
}
