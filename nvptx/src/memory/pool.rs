//! The device-memory pool behind `GOMP_OFFLOAD_alloc`/`free`: a stream-ordered CUDA
//! memory pool of the plugin's own (memory retained between uses, so an alloc+free
//! costs a few microseconds instead of a cuMemAlloc/cuMemFree pair, and a free never
//! waits for unrelated kernels), served on a dedicated non-blocking stream.
//!
//! Drivers without memory pools (or devices that do not support them) get plain
//! `cuMemAlloc`/`cuMemFree`. libgomp frees a block only after every kernel and copy
//! using it has completed, so a free needs no ordering against other streams.

use crate::cu;
use crate::cuda::{driver, sys::*};
use crate::device::streams::Stream;
use gomp_plugin::error::Result;
use std::ffi::c_void;

/// A device's allocation source. Created at device open; `Send + Sync` (handles only).
pub struct Pool {
    pool: CUmemoryPool,
    stream: Stream,
}

// SAFETY: pool and stream handles may be used from any host thread.
unsafe impl Send for Pool {}
// SAFETY: as above; the driver serialises operations on the pool.
unsafe impl Sync for Pool {}

impl Pool {
    /// A retained pool on `dev`, or `None` if the driver or device has no memory pools
    /// (the caller then uses cuMemAlloc/cuMemFree). Context current (caller).
    pub fn create(dev: CUdevice, supported: bool) -> Result<Option<Pool>> {
        let d = driver::get();
        if !supported
            || !d.has("cuMemAllocFromPoolAsync")
            || !d.has("cuMemPoolCreate")
            || !d.has("cuMemFreeAsync")
        {
            return Ok(None);
        }
        // SAFETY: plain data; zero is the documented default for unused fields.
        let mut props: CUmemPoolProps = unsafe { std::mem::zeroed() };
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
        props.locationId = dev;
        let mut pool: CUmemoryPool = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; `props` is a valid descriptor.
        unsafe { cu!(cuMemPoolCreate(&mut pool, &props)) }?;
        let mut keep: u64 = u64::MAX;
        let mut stream: CUstream = std::ptr::null_mut();
        // SAFETY: the attribute takes a pointer to a u64; out-pointer to a local.
        let r = unsafe {
            cu!(cuMemPoolSetAttribute(
                pool,
                CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut keep as *mut u64).cast()
            ))
            .and_then(|()| cu!(cuStreamCreate(&mut stream, CU_STREAM_NON_BLOCKING as u32)))
        };
        if let Err(e) = r {
            // SAFETY: the pool was created above and holds no allocations.
            let _ = unsafe { cu!(cuMemPoolDestroy(pool)) };
            return Err(e.into());
        }
        Ok(Some(Pool {
            pool,
            stream: Stream(stream),
        }))
    }

    /// `size` bytes from the pool, usable by any stream once this returns.
    pub fn alloc(&self, size: usize) -> Result<CUdeviceptr> {
        let mut p: CUdeviceptr = 0;
        // SAFETY: out-pointer to a local; pool and stream are alive until `destroy`.
        unsafe {
            cu!(cuMemAllocFromPoolAsync(
                &mut p,
                size,
                self.pool,
                self.stream.0
            ))?;
            cu!(cuStreamSynchronize(self.stream.0))?;
        }
        Ok(p)
    }

    /// Returns a block to the pool (no wait).
    pub fn free(&self, p: CUdeviceptr) -> Result<()> {
        // SAFETY: `p` came from `alloc` and is no longer used (libgomp's contract).
        unsafe { cu!(cuMemFreeAsync(p, self.stream.0)) }?;
        Ok(())
    }

    /// Gives the pool's unused memory back to the device (on out-of-memory).
    pub fn trim(&self) {
        // SAFETY: pool and stream alive.
        unsafe {
            let _ = cu!(cuStreamSynchronize(self.stream.0));
            let _ = cu!(cuMemPoolTrimTo(self.pool, 0));
        }
    }

    /// Bytes currently handed out by the pool.
    pub fn used(&self) -> u64 {
        let mut v: u64 = 0;
        // SAFETY: the attribute writes a u64.
        let _ = unsafe {
            cu!(cuMemPoolGetAttribute(
                self.pool,
                CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
                (&mut v as *mut u64).cast::<c_void>()
            ))
        };
        v
    }

    /// Waits for pending frees, then destroys the stream and the pool (at device close).
    pub fn destroy(&self) {
        // SAFETY: called once at teardown; nothing uses the pool afterwards.
        unsafe {
            let _ = cu!(cuStreamSynchronize(self.stream.0));
            let _ = cu!(cuStreamDestroy(self.stream.0));
            let _ = cu!(cuMemPoolDestroy(self.pool));
        }
    }
}
