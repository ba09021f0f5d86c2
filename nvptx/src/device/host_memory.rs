//! Host-visible memory the device can reach: page-locked host allocations (libgomp 16's
//! pinned allocator, served by the device's pinned pool, [`crate::host::memory`]) and
//! managed memory (`ompx_gnu_managed_mem_space`), plus the accessibility query behind
//! `omp_target_is_accessible`. Any thread.

use crate::cuda::safe::{memory as cu_mem, query};
use crate::cuda::sys::*;
use crate::device::Device;
use crate::host::ranges as host_ranges;
use gomp_plugin::error::Result;
use std::ffi::c_void;

const PAGE: usize = 4096;

impl Device {
    /// Page-locked host memory of `size` bytes from the device's pinned pool, usable
    /// from every context, 64-byte aligned (page-aligned above the pool's small sizes).
    /// `Ok(None)` for size 0 and on out-of-memory (the contract's "NULL and true").
    /// Any thread: the device's context is made current first.
    pub fn pinned_alloc(&self, size: usize) -> Result<Option<*mut c_void>> {
        if size == 0 {
            return Ok(None);
        }
        self.activate()?;
        Ok(self.pinned.alloc(size)?.map(|p| p as *mut c_void))
    }

    /// Frees memory from [`Device::pinned_alloc`] (NULL is accepted). Any thread.
    pub fn pinned_free(&self, p: usize) -> Result<()> {
        if p == 0 {
            return Ok(());
        }
        self.activate()?;
        self.pinned.free(p)
    }

    /// Managed memory (`cuMemAllocManaged`, attached globally).
    pub fn managed_alloc(&self, size: usize) -> Result<CUdeviceptr> {
        // The stand-in reports NOT_SUPPORTED.
        Ok(cu_mem::alloc_managed(size.max(1))?)
    }

    /// Whether the device can access every page of `[p, p+size)`: device, managed or
    /// page-locked host memory known to the driver. Empty or NULL ranges are not.
    pub fn is_accessible(&self, p: usize, size: usize) -> bool {
        if p == 0 || size == 0 {
            return false;
        }
        let Some(end) = p.checked_add(size) else {
            return false;
        };
        if host_ranges::global().contains(p, size) {
            return true;
        }
        let mut at = p;
        while at < end {
            let kind = query::memory_type(at as CUdeviceptr);
            if !matches!(
                kind,
                Ok(CU_MEMORYTYPE_HOST | CU_MEMORYTYPE_DEVICE | CU_MEMORYTYPE_UNIFIED)
            ) {
                return false;
            }
            at = (at / PAGE + 1) * PAGE;
        }
        true
    }
}
