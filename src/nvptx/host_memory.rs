//! Host-visible memory the device can reach: page-locked host allocations (libgomp 16's
//! pinned allocator) and managed memory (`ompx_gnu_managed_mem_space`), plus the
//! accessibility query behind `omp_target_is_accessible`.

use super::device::Device;
use crate::cu;
use crate::cuda::sys::*;
use crate::error::Result;
use std::ffi::c_void;

const PAGE: usize = 4096;

impl Device {
    /// Page-locked host memory of `size` bytes, usable from every context (PORTABLE).
    /// `Ok(None)` for size 0 and on out-of-memory (the contract's "NULL and true").
    pub fn pinned_alloc(&self, size: usize) -> Result<Option<*mut c_void>> {
        if size == 0 {
            return Ok(None);
        }
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; context current (caller).
        match unsafe {
            cu!(cuMemHostAlloc(
                &mut p,
                size,
                CU_MEMHOSTALLOC_PORTABLE as u32
            ))
        } {
            Ok(()) => Ok(Some(p)),
            Err(e) if e.code == CUDA_ERROR_OUT_OF_MEMORY => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Frees memory from [`Device::pinned_alloc`].
    pub fn pinned_free(&self, p: usize) -> Result<()> {
        if p == 0 {
            return Ok(());
        }
        // SAFETY: `p` came from cuMemHostAlloc (libgomp's bookkeeping).
        unsafe { cu!(cuMemFreeHost(p as *mut c_void)) }?;
        Ok(())
    }

    /// Managed memory (`cuMemAllocManaged`, attached globally).
    pub fn managed_alloc(&self, size: usize) -> Result<CUdeviceptr> {
        let mut p: CUdeviceptr = 0;
        // SAFETY: out-pointer to a local; the stand-in reports NOT_SUPPORTED.
        unsafe {
            cu!(cuMemAllocManaged(
                &mut p,
                size.max(1),
                CU_MEM_ATTACH_GLOBAL as u32
            ))
        }?;
        Ok(p)
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
        let mut at = p;
        while at < end {
            let mut kind: CUmemorytype = 0;
            // SAFETY: out-pointer to a local of the attribute's type (an int).
            let r = unsafe {
                cu!(cuPointerGetAttribute(
                    (&mut kind as *mut CUmemorytype).cast(),
                    CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                    at as CUdeviceptr
                ))
            };
            if r.is_err()
                || !matches!(
                    kind,
                    CU_MEMORYTYPE_HOST | CU_MEMORYTYPE_DEVICE | CU_MEMORYTYPE_UNIFIED
                )
            {
                return false;
            }
            at = (at / PAGE + 1) * PAGE;
        }
        true
    }
}
