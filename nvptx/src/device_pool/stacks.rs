//! OpenMP soft stacks: one block of `warps × size` bytes per launch, taken from a
//! per-device cache so that concurrent kernels each get their own block (GCC's plugin
//! shares one block under a device-wide lock).
//!
//! A launch's block is often larger than the device's cache bound
//! (`GOMP_NVPTX_DEVICE_CACHE`): a grid that fills an H100 takes about 1 GiB at the
//! default 128 KiB per warp. Giving it back after every kernel would cost each launch a
//! cuMemFree and a cuMemAlloc, so idle blocks are kept while the device launches
//! kernels (at most [`ACTIVE_LIMIT`] or the bound, whichever is larger, beside the
//! largest block), and cut down to the bound once no kernel has been launched for
//! [`IDLE_PERIOD`], by the process's idle trimmer ([`super::idle`]) without any
//! call from the program.

use crate::cuda::safe::{context, cu_mem};
use crate::cuda::sys::{CUcontext, CUdeviceptr};
use crate::device_pool::idle_trim::{self, IdleTrim};
use gomp_plugin::error::Result;
use gomp_plugin::sync::Lock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// A device allocation holding soft stacks.
#[derive(Debug, PartialEq, Eq)]
pub struct StackBlock {
    /// Device address of the block.
    pub ptr: CUdeviceptr,
    /// Bytes in the block.
    pub size: usize,
}

/// Idle blocks kept while kernels are launched (beside the largest one), when the
/// bound is smaller.
pub const ACTIVE_LIMIT: usize = 1 << 30;
/// How long the device must launch no kernel before idle blocks beyond the bound are
/// given back.
pub const IDLE_PERIOD: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Idle {
    blocks: Vec<StackBlock>,
    /// Handed to the idle trimmer (and not trimmed since).
    watched: bool,
    /// The device is closed: nothing more is allocated or kept.
    closed: bool,
}

impl Idle {
    fn total(&self) -> usize {
        self.blocks.iter().map(|b| b.size).sum()
    }

    /// Frees the largest blocks until at most `limit` bytes stay (all of them if
    /// `keep_one` is false; else the largest block stays).
    fn cut(&mut self, limit: usize, keep_one: bool) {
        let mut total = self.total();
        self.blocks.sort_by_key(|b| b.size);
        let smallest_first = keep_one;
        while total > limit && self.blocks.len() > usize::from(keep_one) {
            // While kernels run, the largest block serves the most launches: drop the
            // smallest; when idle, drop the largest first.
            let b = if smallest_first {
                self.blocks.remove(0)
            } else {
                self.blocks.pop().expect("nonempty")
            };
            total -= b.size;
            // SAFETY: the block is idle and owned by the cache.
            let _ = unsafe { cu_mem::free(b.ptr) };
        }
    }
}

/// Idle stack blocks of one device. Thread-safe; owns the blocks. Shared (`Arc`) with
/// the idle trimmer, which frees blocks in the device's context from its own thread.
pub struct StackCache {
    idle: Mutex<Idle>,
    /// Acquires and releases so far: the idle trimmer's measure of activity.
    uses: AtomicU64,
    /// The device's context, made current by the trimmer's thread.
    ctx: CUcontext,
    /// Bytes of idle blocks kept once the device is idle.
    bound: usize,
    me: Weak<StackCache>,
}

// SAFETY: the context handle may be made current on any thread; the blocks are behind
// the mutex.
unsafe impl Send for StackCache {}
// SAFETY: as above.
unsafe impl Sync for StackCache {}

impl StackCache {
    /// An empty cache for the device whose context is `ctx` (alive until
    /// [`StackCache::close`]), keeping `bound` bytes of idle blocks once idle.
    pub fn new(ctx: CUcontext, bound: usize) -> Arc<StackCache> {
        Arc::new_cyclic(|me| StackCache {
            idle: Mutex::new(Idle::default()),
            uses: AtomicU64::new(0),
            ctx,
            bound,
            me: me.clone(),
        })
    }

    /// A block of at least `size` bytes: the smallest idle one that fits, else a new one.
    pub fn acquire(&self, size: usize) -> Result<StackBlock> {
        self.uses.fetch_add(1, Ordering::Relaxed);
        {
            let mut idle = self.idle.locked();
            let best = idle
                .blocks
                .iter()
                .enumerate()
                .filter(|(_, b)| b.size >= size)
                .min_by_key(|(_, b)| b.size)
                .map(|(i, _)| i);
            if let Some(i) = best {
                return Ok(idle.blocks.swap_remove(i));
            }
        }
        // The device's context is current (caller).
        match cu_mem::alloc(size) {
            Ok(ptr) => Ok(StackBlock { ptr, size }),
            Err(e) if e.has_code(crate::cuda::sys::CUDA_ERROR_OUT_OF_MEMORY) => {
                // Idle stacks are only a cache: give them back and try once more.
                self.trim();
                let ptr = cu_mem::alloc(size)?;
                Ok(StackBlock { ptr, size })
            }
            Err(e) => Err(e),
        }
    }

    /// Returns a block whose kernel has finished. Context current (caller).
    pub fn release(&self, b: StackBlock) {
        self.uses.fetch_add(1, Ordering::Relaxed);
        let watch = {
            let mut idle = self.idle.locked();
            if idle.closed {
                // SAFETY: the kernel has finished; nothing else knows the block.
                let _ = unsafe { cu_mem::free(b.ptr) };
                return;
            }
            idle.blocks.push(b);
            if idle.blocks.len() > 1 {
                idle.cut(ACTIVE_LIMIT.max(self.bound), true);
            }
            let over = idle.total() > self.bound && !idle.watched;
            idle.watched |= over;
            over
        };
        if watch {
            idle_trim::watch(self.me.clone(), IDLE_PERIOD);
        }
    }

    /// Bytes of idle blocks.
    pub fn idle_bytes(&self) -> usize {
        self.idle.locked().total()
    }

    /// Frees every idle block (on device OOM). Context current (caller).
    pub fn trim(&self) {
        self.idle.locked().cut(0, false);
    }

    /// Frees every idle block and frees blocks released later at once (device close:
    /// the idle trimmer then leaves the cache alone). Context current (caller).
    pub fn close(&self) {
        let mut idle = self.idle.locked();
        idle.closed = true;
        idle.cut(0, false);
    }
}

impl IdleTrim for StackCache {
    fn activity(&self) -> u64 {
        self.uses.load(Ordering::Relaxed)
    }

    fn trim_idle(&self) {
        let mut idle = self.idle.locked();
        idle.watched = false;
        if idle.closed || idle.total() <= self.bound {
            return;
        }
        // SAFETY: the device is open (not `closed`, checked under the lock `close`
        // takes), so its context is alive; the trimmer's thread owns no other state.
        if unsafe { context::set_current(self.ctx) }.is_ok() {
            idle.cut(self.bound, false);
            // SAFETY: NULL: this thread keeps no context current between trims.
            let _ = unsafe { context::set_current(std::ptr::null_mut()) };
        }
    }
}
