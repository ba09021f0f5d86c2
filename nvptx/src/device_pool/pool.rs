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
//!
//! A pool's first allocation is slow (the driver sets the pool's memory up:
//! bench/results/jit-startup.md), and the first target region of a program
//! allocates. So, by default, the device's first allocation starts a short-lived
//! thread that makes the pool's first allocation and frees it ([`Pool::warm_up`]),
//! and allocations of at most [`DIRECT_MAX`] bytes made before that thread is done
//! take plain `cuMemAlloc` memory ([`Pool::note_direct`]; larger ones wait for the
//! pool). Such chunks are few (the first region's) and small; as `cuMemFree` may wait
//! for running kernels (one waiting for a reverse-offload host function, say), a
//! direct chunk the caches give back is kept aside ([`Pool::park_direct`]) and only
//! freed when the device runs out of memory or closes ([`Pool::drain_direct`]). The
//! thread starts after the program's images are loaded (libgomp loads them before any
//! allocation). `GOMP_NVPTX_TUNE=poolwarm=1` starts it at device open instead, `0`
//! makes the first allocation that needs the pool pay for it.

use crate::cuda::safe::context;
use crate::cuda::safe::cu_mem::free_async;
use crate::cuda::safe::{MemPool, MemPoolRef, OwnedStream, Stream};
use crate::cuda::{sys::*, table};
use crate::observe::nvtx;
use gomp_plugin::error::Result;
use gomp_plugin::sync::Lock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The largest allocation that takes plain `cuMemAlloc` memory while the pool is not
/// ready (a small-block chunk: `memory::small_blocks`).
pub const DIRECT_MAX: usize = 1 << 20;

/// Bytes the warm-up allocates (one allocation granule of the pool's memory).
const WARM_UP_BYTES: usize = 2 << 20;

/// A chunk from `cuMemAlloc`: address and bytes.
type Direct = (CUdeviceptr, usize);

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
/// creation and [`Pool::destroy`], as is the warm-up thread.
pub struct Pool {
    pool: MemPoolRef,
    stream: Stream,
    owned: Mutex<Option<Owned>>,
    /// The warm-up thread while it may run; joined by [`Pool::destroy`].
    warm_up: Mutex<Option<JoinHandle<()>>>,
    /// Whether a warm-up thread was started.
    warm_up_started: AtomicBool,
    /// Set once the pool has made an allocation or its warm-up has ended (shared with
    /// the warm-up thread).
    ready: Arc<AtomicBool>,
    /// Chunks (address, bytes) taken with `cuMemAlloc` before the pool was ready: in
    /// use or cached (`.0`), given back by the caches and kept until
    /// [`Pool::drain_direct`] (`.1`).
    direct: Mutex<(Vec<Direct>, Vec<Direct>)>,
    /// How many are in use or cached (a free of any other chunk takes no lock).
    direct_count: AtomicUsize,
}

impl Pool {
    /// A retained pool on `dev`, or `None` if the driver or device has no memory pools
    /// (the caller then uses cuMemAlloc/cuMemFree). Context current (caller).
    pub fn create(dev: CUdevice, supported: bool) -> Result<Option<Pool>> {
        let d = table::get();
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
            warm_up: Mutex::new(None),
            warm_up_started: AtomicBool::new(false),
            ready: Arc::new(AtomicBool::new(false)),
            direct: Mutex::new((Vec::new(), Vec::new())),
            direct_count: AtomicUsize::new(0),
        }))
    }

    /// The stream the pool allocates and frees on.
    #[inline]
    pub fn stream(&self) -> Stream {
        self.stream
    }

    /// Starts a thread that makes the pool's first allocation (frees it and gives the
    /// reserve back) with `ctx` current, so that the program's first allocation does not wait for the
    /// driver to set the pool up. Best effort: a failure is a `GOMP_DEBUG` line. `ctx`
    /// must stay alive until [`Pool::destroy`], which joins the thread.
    pub fn warm_up(&self, ctx: CUcontext) {
        self.warm_up_started.store(true, Ordering::Relaxed);
        let (pool, stream) = (self.pool, self.stream);
        let ready = Arc::clone(&self.ready);
        // The context handle crosses to the thread as an address.
        let ctx = ctx as usize;
        let spawned = nvtx::spawn("gomp-nvptx-pool".into(), move || {
            let warm = || -> Result<()> {
                // SAFETY: the context lives until `destroy` joined this thread.
                unsafe { context::set_current(ctx as CUcontext) }?;
                let p = pool.alloc_async(WARM_UP_BYTES, stream)?;
                // SAFETY: just allocated, used by nothing.
                unsafe { free_async(p, stream) }?;
                stream.synchronize()?;
                // The pool keeps nothing unused (the caches above it hold what is
                // kept, within their bound): the warm-up's reserve goes back too.
                pool.trim_to(0)?;
                Ok(())
            };
            if let Err(e) = warm() {
                log::debug!("memory pool warm-up: {e}");
            }
            // Allocations use the pool from now on (one that fails says why).
            ready.store(true, Ordering::Release);
        });
        match spawned {
            Ok(h) => *self.warm_up.locked() = Some(h),
            Err(e) => {
                log::debug!("memory pool warm-up: no thread: {e}");
                self.ready.store(true, Ordering::Release);
            }
        }
    }

    /// [`Pool::warm_up`] unless a warm-up was started already (any thread; of several
    /// callers at once, one starts it).
    pub fn warm_up_once(&self, ctx: CUcontext) {
        if !self.warm_up_started.swap(true, Ordering::AcqRel) {
            self.warm_up(ctx);
        }
    }

    /// How many chunks [`Pool::note_direct`] recorded are still recorded.
    #[inline]
    pub fn direct_chunks(&self) -> usize {
        self.direct_count.load(Ordering::Acquire)
    }

    /// Whether the pool has made an allocation or its warm-up has ended: allocations
    /// then come from the pool.
    #[inline]
    pub fn ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Records `p`, a chunk from `cuMemAlloc` taken while the pool was not ready, so
    /// that [`Pool::park_direct`] recognises it when it is given back.
    pub fn note_direct(&self, p: CUdeviceptr, bytes: usize) {
        let mut d = self.direct.locked();
        d.0.push((p, bytes));
        self.direct_count.store(d.0.len(), Ordering::Release);
    }

    /// Whether `p` is a chunk recorded by [`Pool::note_direct`]; if so it is kept
    /// aside, not freed, until [`Pool::drain_direct`].
    #[inline]
    pub fn park_direct(&self, p: CUdeviceptr) -> bool {
        if self.direct_count.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut d = self.direct.locked();
        let Some(i) = d.0.iter().position(|&(q, _)| q == p) else {
            return false;
        };
        let chunk = d.0.swap_remove(i);
        d.1.push(chunk);
        self.direct_count.store(d.0.len(), Ordering::Release);
        true
    }

    /// The direct chunks kept aside by [`Pool::park_direct`], forgotten here: the
    /// caller frees them with `cuMemFree` (out of memory, or the device closing).
    pub fn drain_direct(&self) -> Vec<CUdeviceptr> {
        let parked = std::mem::take(&mut self.direct.locked().1);
        parked.into_iter().map(|(p, _)| p).collect()
    }

    /// Bytes of the direct chunks kept aside (memory given back before an allocation
    /// fails, as the pool's unused memory is).
    pub fn parked_bytes(&self) -> usize {
        self.direct.locked().1.iter().map(|&(_, n)| n).sum()
    }

    /// `size` bytes from the pool, usable by any stream once this returns.
    #[inline]
    pub fn alloc(&self, size: usize) -> Result<CUdeviceptr> {
        let p = self.pool.alloc_async(size, self.stream)?;
        self.stream.synchronize()?;
        if !self.ready() {
            self.ready.store(true, Ordering::Release);
        }
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

    /// Waits for the warm-up thread, if one is still running (it holds a block of the
    /// pool until it ends). Any thread; the first caller joins it.
    pub fn finish_warm_up(&self) {
        let h = self.warm_up.locked().take();
        if let Some(h) = h {
            let _ = h.join();
        }
    }

    /// Waits for the warm-up thread and pending frees, then destroys the stream and the
    /// pool (at device close; nothing uses the pool afterwards).
    pub fn destroy(&self) {
        self.finish_warm_up();
        drop(self.owned.locked().take());
    }
}
