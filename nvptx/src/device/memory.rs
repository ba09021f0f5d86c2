//! Device memory of one device: allocation through the small- and large-block caches
//! and the pool, frees within the cache bound, and what is given back to the driver
//! (after the deferred copies that may still write it). Copies are `device::copy`.
//!
//! [`Memory`], the core's memory part, owns the caches, the pool, the live-block
//! registry, the soft stacks and the pinned host pool; each locks inside (`Sync`).

use crate::config::tune::{PoolWarm, LATER_DIRECT};
use crate::config::Config;
use crate::cuda::safe::memory as cu_mem;
use crate::cuda::sys::CUdeviceptr;
use crate::device::context::DeviceContext;
use crate::device::Core;
use crate::host::memory::{HostChunks, HostPool};
use crate::host::pin_keep::PinKeep;
use crate::memory::large_blocks::{self, LargeBlocks};
use crate::memory::pool::{Pool, DIRECT_MAX};
use crate::memory::small_blocks::{self, Given, SmallBlocks};
use crate::memory::stacks::StackCache;
use crate::observe::nvtx::{self, Kind};
use gomp_plugin::blocks::Blocks;
use gomp_plugin::error::{Error, Result};
use std::sync::Arc;

/// Empty small-block chunks a device may always keep (within `GOMP_NVPTX_DEVICE_CACHE`
/// when that is larger): the target-variable block every region allocates and frees
/// then never costs a chunk allocation.
const SMALL_FLOOR: usize = 4 << 20;

/// The device's memory: what the core hands out and caches. Owned by the core; `Sync`.
pub struct Memory {
    /// Idle soft-stack blocks (shared with the idle trimmer).
    pub(super) stacks: Arc<StackCache>,
    /// The device-memory pool (`None`: plain cuMemAlloc/cuMemFree).
    pub(super) pool: Option<Pool>,
    /// Live blocks from `alloc`.
    pub(super) blocks: Blocks,
    /// Free small blocks.
    small: SmallBlocks,
    /// Freed large blocks kept for reuse.
    large: LargeBlocks,
    /// Pooled page-locked host memory (`page_locked_host_alloc`).
    pub(super) pinned: HostPool,
    /// The page-locked block kept from open to close (`GOMP_NVPTX_TUNE=pinkeep`).
    pub(super) pin_keep: PinKeep,
}

impl Memory {
    /// The memory part of a device opened in `context`, over `pool`, sized by `config`.
    pub(super) fn new(context: &DeviceContext, pool: Option<Pool>, config: &Config) -> Memory {
        Memory {
            stacks: StackCache::new(context.ctx, config.device_cache),
            pool,
            blocks: Blocks::default(),
            small: SmallBlocks::default(),
            large: LargeBlocks::default(),
            pinned: HostPool::with_shape(
                HostChunks {
                    ord: context.ord,
                    node: config
                        .tune
                        .pinnednuma
                        .then(|| crate::host::numa::device_node(context.cu_dev))
                        .flatten(),
                },
                config.pinned_cache,
                crate::host::pinned_pool::Shape {
                    first_chunk: config.tune.pinnedchunk,
                    shards: config
                        .tune
                        .pinnedshards
                        .unwrap_or(crate::host::pinned_pool::Shape::default().shards),
                },
            ),
            pin_keep: PinKeep::default(),
        }
    }
}

impl Core {
    /// Gives back the device memory at close (context current, deferred copies
    /// settled): the cached stacks, the caches' chunks and the pool.
    pub(super) fn close_memory(&self) {
        let m = &self.memory;
        m.stacks.close();
        for c in m.small.drain_chunks().into_iter().chain(m.large.drain()) {
            let _ = self.free_chunk(c);
        }
        if let Some(p) = &m.pool {
            self.free_direct(p.drain_direct());
            log::debug!(
                "device {}: {} byte(s) still allocated from the pool at close",
                self.ord(),
                p.used()
            );
            p.destroy();
        }
    }

    /// Allocates `size` device bytes: small blocks from the small-block cache, large
    /// ones from the large-block cache or else the pool (cuMemAlloc without one). On
    /// out-of-memory the cached large blocks, the pool's unused memory and the cached
    /// soft stacks are released and the allocation retried once.
    pub fn alloc(&self, size: usize) -> Result<CUdeviceptr> {
        let _range = nvtx::range(Kind::Alloc, Some(size as u64), || "alloc".into());
        let p = match self
            .memory
            .small
            .take(size, |bytes| self.alloc_retry(bytes))
        {
            Some(r) => r?,
            None => {
                let r = large_blocks::rounded(size);
                match self.memory.large.take(r) {
                    Some(p) => p,
                    None => self.alloc_retry(r)?,
                }
            }
        };
        self.memory.blocks.insert(p, size);
        if let Some(o) = self.observe() {
            o.alloc(size);
        }
        Ok(p)
    }

    fn alloc_retry(&self, size: usize) -> Result<CUdeviceptr> {
        match self.alloc_once(size.max(1)) {
            Err(Error::Driver(e))
                if e.code() == i64::from(crate::cuda::sys::CUDA_ERROR_OUT_OF_MEMORY) =>
            {
                self.release_cached();
                self.alloc_once(size.max(1))
            }
            r => r,
        }
    }

    /// Gives the device memory the plugin holds only as a cache back to the driver:
    /// the cached large blocks, empty small-block chunks, the pool's unused memory and
    /// the idle soft stacks. Done before retrying an allocation that ran out of
    /// memory. Costs the next allocations a driver call each; cheap when the caches
    /// are empty. Context current (caller).
    pub fn release_cached(&self) {
        for p in self
            .memory
            .large
            .drain()
            .into_iter()
            .chain(self.memory.small.drain_empty())
        {
            let _ = self.free_chunk(p);
        }
        if let Some(p) = &self.memory.pool {
            self.free_direct(p.drain_direct());
            p.trim();
        }
        self.memory.stacks.trim();
    }

    /// Device memory the plugin holds without the program using it: what the pool
    /// reserved beyond what it handed out, direct chunks kept aside, cached large
    /// blocks, free small blocks and idle soft stacks. All of it is given back before an allocation fails, so the
    /// free-memory property counts it as free. Waits for the pool's warm-up if it is
    /// still running (its block would otherwise count as used for a moment), then
    /// reads counters and two pool attributes; changes nothing.
    pub fn held_unused(&self) -> usize {
        let pool = self.memory.pool.as_ref().map_or(0, |p| {
            p.finish_warm_up();
            p.unused() as usize + p.parked_bytes()
        });
        pool + self.memory.large.bytes()
            + self.memory.small.free_bytes()
            + self.memory.stacks.idle_bytes()
    }

    fn alloc_once(&self, size: usize) -> Result<CUdeviceptr> {
        if let Some(o) = self.observe() {
            o.driver_alloc();
        }
        if let Some(pool) = &self.memory.pool {
            let warm = self.config().tune.poolwarm;
            if pool.ready()
                || !matches!(warm, PoolWarm::First | PoolWarm::Later)
                || size > DIRECT_MAX
            {
                let _r = nvtx::range(Kind::Alloc, Some(size as u64), || "from the pool".into());
                return pool.alloc(size);
            }
            // The pool's set-up runs on a thread of its own; until it is done, plain
            // cuMemAlloc memory (what the first region of a program allocates).
            // `Later`: started only once a kernel has completed (after the first region).
            if warm == PoolWarm::First
                || self.settings.kernel_done()
                || pool.direct_chunks() >= LATER_DIRECT
            {
                pool.warm_up_once(self.context());
            }
            let _r = nvtx::range(Kind::Alloc, Some(size as u64), || "from the driver".into());
            // Context current (caller).
            let p = cu_mem::alloc(size)?;
            pool.note_direct(p, size);
            return Ok(p);
        }
        let _r = nvtx::range(Kind::Alloc, Some(size as u64), || "from the driver".into());
        // Context current (caller).
        cu_mem::alloc(size)
    }

    /// Frees a block from [`Core::alloc`]. NULL is accepted and ignored; an address
    /// that does not start a block is "invalid device address".
    pub fn free(&self, p: CUdeviceptr) -> Result<()> {
        self.free_block(p).map(|_| ())
    }

    /// Frees block `p`, keeping what the device's cache bound allows (`bound` =
    /// `GOMP_NVPTX_DEVICE_CACHE`): empty small-block chunks and cached large blocks
    /// together stay within it, the small blocks always allowed [`SMALL_FLOOR`] of it.
    /// Memory beyond goes back to the driver before this returns (through the pool,
    /// which keeps none of it), so another process can have it at once.
    pub(crate) fn free_block(&self, p: CUdeviceptr) -> Result<usize> {
        if p == 0 {
            return Ok(0);
        }
        let size = self.memory.blocks.remove(p)?;
        if let Some(o) = self.observe() {
            o.free(size);
        }
        let bound = self.config().device_cache;
        let floor = SMALL_FLOOR.min(bound);
        if size <= small_blocks::MAX_SMALL {
            let small_room = bound.saturating_sub(self.memory.large.bytes()).max(floor);
            match self.memory.small.give(p, size, small_room) {
                Given::Kept => return Ok(size),
                Given::Release(chunk) => {
                    self.give_back(&[chunk])?;
                    return Ok(size);
                }
                Given::NotSmall => {}
            }
        }
        let large_room = bound.saturating_sub(self.memory.small.empty_bytes().max(floor));
        if let Some(out) = self
            .memory
            .large
            .put(p, large_blocks::rounded(size), large_room)
        {
            self.give_back(&out)?;
        }
        Ok(size)
    }

    /// Frees `blocks` (large blocks or small-block chunks) to the pool, then has the
    /// pool give the driver everything it holds unused: the memory kept for reuse is
    /// the caches' alone, so the bound holds however the caches grow later (the large
    /// and small caches hand out memory without touching the pool).
    fn give_back(&self, blocks: &[CUdeviceptr]) -> Result<()> {
        let mut first = Ok(());
        for &b in blocks {
            if let Err(e) = self.free_chunk(b) {
                first = first.and(Err(e));
            }
        }
        if let Some(pool) = &self.memory.pool {
            pool.trim_unused_to(0);
        }
        first
    }

    /// Returns memory from `alloc_retry` (a large block or a small-block chunk) to the
    /// pool or the driver, after the deferred copies that may still write it: the pool's
    /// stream waits for them, a plain free waits on the host.
    pub fn free_chunk(&self, p: CUdeviceptr) -> Result<()> {
        match &self.memory.pool {
            // Kept aside, freed when memory runs out or the device closes.
            Some(pool) if pool.park_direct(p) => {}
            Some(pool) => {
                self.order(pool.stream())?;
                pool.free(p)?;
            }
            None => {
                self.settle()?;
                // SAFETY: `p` came from cuMemAlloc in this context.
                unsafe { cu_mem::free(p) }?;
            }
        }
        Ok(())
    }

    /// Frees direct chunks ([`crate::memory::pool::Pool::drain_direct`]) with
    /// `cuMemFree`, after the deferred copies that may still write them. Best effort:
    /// a failure is a `GOMP_DEBUG` line.
    pub(crate) fn free_direct(&self, chunks: Vec<CUdeviceptr>) {
        if chunks.is_empty() {
            return;
        }
        if let Err(e) = self.settle() {
            log::debug!("device {}: freeing direct chunks: {e}", self.ord());
        }
        for p in chunks {
            // SAFETY: `p` came from cuMemAlloc in this context and is unused.
            if let Err(e) = unsafe { cu_mem::free(p) } {
                log::debug!("device {}: cuMemFree of a direct chunk: {e}", self.ord());
            }
        }
    }
}
