//! The device-memory pool behind `GOMP_OFFLOAD_alloc`/`free`: a stream-ordered CUDA
//! memory pool of the plugin's own (memory retained between uses, so an alloc+free
//! costs a few microseconds instead of a cuMemAlloc/cuMemFree pair, and a free never
//! waits for unrelated kernels), served on a dedicated non-blocking stream.
//!
//! How much freed memory the pool keeps is decided by the device when it frees to the
//! pool ([`Pool::trim_unused_to`]), not by the driver's release threshold: that threshold
//! counts the memory in use too and acts only at a later synchronisation, so a process
//! that frees a large block and then waits (an MPI rank in a barrier) would keep it.
//!
//! Drivers without memory pools (or devices that do not support them) get plain
//! `cuMemAlloc`/`cuMemFree`. libgomp frees a block only after every kernel and copy
//! using it has completed, so a free needs no ordering against other streams.

use crate::cuda::safe::memory::free_async;
use crate::cuda::safe::{MemPool, MemPoolRef, OwnedStream, Stream};
use crate::cuda::{driver, sys::*};
use gomp_plugin::error::Result;
use std::sync::Mutex;

/// What the pool owns, dropped at [`Pool::destroy`] in field order after its `Drop`
/// waited for pending frees: the stream, then the pool.
struct Owned {
    stream: OwnedStream,
    /// Used through `Pool::pool`; destroyed when dropped.
    _pool: MemPool,
}

impl Drop for Owned {
    fn drop(&mut self) {
        if let Err(e) = self.stream.handle().synchronize() {
            log::debug!("memory pool stream: {e}");
        }
    }
}

/// A device's allocation source. Created at device open; `Send + Sync`: the hot paths
/// use the borrowed handles (no lock), the owners sit behind a mutex touched only at
/// creation and [`Pool::destroy`].
pub struct Pool {
    pool: MemPoolRef,
    stream: Stream,
    owned: Mutex<Option<Owned>>,
}

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
        let pool = MemPool::create_on_device(dev)?;
        // No release at synchronisations (see the module's comment). On an error the
        // pool is dropped (destroyed) before returning.
        pool.handle()
            .set_u64(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, u64::MAX)?;
        let stream = OwnedStream::non_blocking()?;
        Ok(Some(Pool {
            pool: pool.handle(),
            stream: stream.handle(),
            owned: Mutex::new(Some(Owned {
                stream,
                _pool: pool,
            })),
        }))
    }

    /// The stream the pool allocates and frees on.
    #[inline]
    pub fn stream(&self) -> Stream {
        self.stream
    }

    /// `size` bytes from the pool, usable by any stream once this returns.
    #[inline]
    pub fn alloc(&self, size: usize) -> Result<CUdeviceptr> {
        let p = self.pool.alloc_async(size, self.stream)?;
        self.stream.synchronize()?;
        Ok(p)
    }

    /// Returns a block to the pool (no wait).
    #[inline]
    pub fn free(&self, p: CUdeviceptr) -> Result<()> {
        // SAFETY: `p` came from `alloc` and is no longer used (libgomp's contract).
        unsafe { free_async(p, self.stream) }?;
        Ok(())
    }

    /// Gives the pool's unused memory back to the device (on out-of-memory).
    pub fn trim(&self) {
        let _ = self.stream.synchronize();
        let _ = self.pool.trim_to(0);
    }

    /// Bytes currently handed out by the pool.
    pub fn used(&self) -> u64 {
        self.pool
            .get_u64(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
            .unwrap_or(0)
    }

    /// Bytes the pool holds from the device without handing them out (0 if the driver
    /// cannot say). Frees not yet executed on the pool's stream are not counted.
    pub fn unused(&self) -> u64 {
        let reserved = self.pool.get_u64(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
        reserved.map_or(0, |r| r.saturating_sub(self.used()))
    }

    /// After frees: waits for them, then gives the device back what the pool holds
    /// unused beyond `keep` bytes. A driver error leaves the memory in the pool (it is
    /// still given back when an allocation runs out of memory).
    pub fn trim_unused_to(&self, keep: u64) {
        if let Err(e) = self.stream.synchronize() {
            log::debug!("memory pool stream: {e}");
            return;
        }
        let (Ok(reserved), Ok(used)) = (
            self.pool.get_u64(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT),
            self.pool.get_u64(CU_MEMPOOL_ATTR_USED_MEM_CURRENT),
        ) else {
            return;
        };
        if reserved.saturating_sub(used) > keep {
            let to = used.saturating_add(keep).min(usize::MAX as u64) as usize;
            if let Err(e) = self.pool.trim_to(to) {
                log::debug!("memory pool trim: {e}");
            }
        }
    }

    /// Waits for pending frees, then destroys the stream and the pool (at device
    /// close; nothing uses the pool afterwards).
    pub fn destroy(&self) {
        drop(self.owned.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}
