//! Device memory and copies for one device. Every copy runs on a pooled stream and is
//! complete when the call returns (the contract's synchronous semantics).

use super::device::Device;
use crate::cu;
use crate::cuda::sys::CUdeviceptr;
use crate::error::{Error, Result};
use std::ffi::c_void;

impl Device {
    /// Allocates `size` device bytes, from the pool when there is one. On
    /// out-of-memory the pool's unused memory and the cached soft stacks are released
    /// and the allocation retried once.
    pub fn alloc(&self, size: usize) -> Result<CUdeviceptr> {
        match self.alloc_once(size.max(1)) {
            Err(Error::Cuda(e)) if e.code == crate::cuda::sys::CUDA_ERROR_OUT_OF_MEMORY => {
                if let Some(p) = &self.pool {
                    p.trim();
                }
                self.stacks.trim();
                self.alloc_once(size.max(1))
            }
            r => r,
        }
    }

    fn alloc_once(&self, size: usize) -> Result<CUdeviceptr> {
        if let Some(pool) = &self.pool {
            return pool.alloc(size);
        }
        let mut p: CUdeviceptr = 0;
        // SAFETY: out-pointer to a local; context current (caller).
        unsafe { cu!(cuMemAlloc(&mut p, size)) }?;
        Ok(p)
    }

    /// Frees a block from [`Device::alloc`]. NULL is accepted and ignored.
    pub fn free(&self, p: CUdeviceptr) -> Result<()> {
        if p == 0 {
            return Ok(());
        }
        if let Some(pool) = &self.pool {
            return pool.free(p);
        }
        // SAFETY: `p` came from cuMemAlloc in this context (libgomp's bookkeeping).
        unsafe { cu!(cuMemFree(p)) }?;
        Ok(())
    }

    /// Frees memory that did not come from [`Device::alloc`] (managed memory).
    pub fn free_direct(&self, p: CUdeviceptr) -> Result<()> {
        if p != 0 {
            // SAFETY: `p` came from a cuMemAlloc-family call (caller).
            unsafe { cu!(cuMemFree(p)) }?;
        }
        Ok(())
    }

    /// Copies `n` bytes from host `src` to device `dst`.
    ///
    /// # Safety
    /// `src` must be readable for `n` bytes.
    pub unsafe fn host2dev(&self, dst: CUdeviceptr, src: *const c_void, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        check_ptrs(dst as *const c_void, src)?;
        // SAFETY: readable source (caller); the stream is waited for before returning.
        self.on_stream(|s| unsafe { cu!(cuMemcpyHtoDAsync(dst, src, n, s.0)) }.map_err(Error::from))
    }

    /// Copies `n` bytes from device `src` to host `dst`.
    ///
    /// # Safety
    /// `dst` must be writable for `n` bytes.
    pub unsafe fn dev2host(&self, dst: *mut c_void, src: CUdeviceptr, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        check_ptrs(dst, src as *const c_void)?;
        // SAFETY: writable destination (caller); waited for before returning.
        self.on_stream(|s| unsafe { cu!(cuMemcpyDtoHAsync(dst, src, n, s.0)) }.map_err(Error::from))
    }

    /// Copies `n` bytes between two device buffers.
    pub fn dev2dev(&self, dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        check_ptrs(dst as *const c_void, src as *const c_void)?;
        // SAFETY: device addresses are checked by the driver; waited for before returning.
        self.on_stream(|s| unsafe { cu!(cuMemcpyDtoDAsync(dst, src, n, s.0)) }.map_err(Error::from))
    }

    /// Sets `n` device bytes at `p` to the low byte of `val`.
    pub fn memset(&self, p: CUdeviceptr, val: i32, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        // SAFETY: device address checked by the driver; waited for before returning.
        self.on_stream(|s| {
            unsafe { cu!(cuMemsetD8Async(p, val as u8, n, s.0)) }.map_err(Error::from)
        })
    }
}

fn check_ptrs(dst: *const c_void, src: *const c_void) -> Result<()> {
    if dst.is_null() || src.is_null() {
        return Err(Error::invalid(format!(
            "invalid copy: NULL address (dst {dst:p}, src {src:p})"
        )));
    }
    Ok(())
}
