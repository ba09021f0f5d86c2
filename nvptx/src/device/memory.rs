//! Device memory of one device: allocation through the small- and large-block caches
//! and the pool, frees within the cache bound, and what is given back to the driver
//! (after the deferred copies that may still write it). Copies are `device::copy`.
//!
//! [`Memory`], the core's memory part, owns the caches, the pool, the live-block
//! registry, the soft stacks and the pinned host pool; each locks inside (`Sync`). Its
//! methods take the other parts they need as arguments: the settings (cache bound,
//! pool warm-up), the launch resources (the order of deferred copies a free waits
//! for), the device's context and the profile's recorder.

use crate::config::tune::{PoolWarm, LATER_DIRECT};
use crate::config::Config;
use crate::cuda::pools::thread_streams::LaneData;
use crate::cuda::safe::cu_mem;
use crate::cuda::sys::CUdeviceptr;
use crate::device::device_context::DeviceContext;
use crate::device::launch_resources::LaunchResources;
use crate::device::settings::Settings;
use crate::device_pool::large_blocks::{self, LargeBlocks};
use crate::device_pool::pool::{Pool, DIRECT_MAX};
use crate::device_pool::small_blocks::{self, Given, SmallBlocks};
use crate::device_pool::stacks::StackCache;
use crate::host::pin_keep::PinKeep;
use crate::host::pinned_chunks::{HostChunks, HostPool};
use crate::observe::nvtx::{self, Kind};
use crate::observe::DeviceObserve;
use gomp_plugin::blocks::{check_copy, Blocks};
use gomp_plugin::error::{Error, Result};
use std::ffi::c_void;
use std::sync::Arc;

/// Empty small-block chunks a device may always keep (within `GOMP_NVPTX_DEVICE_CACHE`
/// when that is larger): the target-variable block every region allocates and frees
/// then never costs a chunk allocation.
const SMALL_FLOOR: usize = 4 << 20;

/// The device's memory: what the core hands out and caches. Owned by the core; `Sync`.
pub struct Memory {
    /// Idle soft-stack blocks (shared with the idle trimmer).
    stacks: Arc<StackCache>,
    /// The device-memory pool (`None`: plain cuMemAlloc/cuMemFree).
    pool: Option<Pool>,
    /// Live blocks from `alloc`.
    blocks: Blocks,
    /// Free small blocks.
    small: SmallBlocks,
    /// Freed large blocks kept for reuse.
    large: LargeBlocks,
    /// Pooled page-locked host memory (`page_locked_host_alloc`, `pinned_alloc.rs`).
    pinned: HostPool,
    /// The page-locked block kept from open to close (`GOMP_NVPTX_TUNE=pinkeep`).
    pin_keep: PinKeep,
}

impl Memory {
    /// The memory part of a device opened in `context`, over `pool`, sized by `config`.
    pub(super) fn new(context: &DeviceContext, pool: Option<Pool>, config: &Config) -> Memory {
        Memory {
            stacks: StackCache::new(context.ctx(), config.device_cache),
            pool,
            blocks: Blocks::default(),
            small: SmallBlocks::default(),
            large: LargeBlocks::default(),
            pinned: HostPool::with_shape(
                HostChunks {
                    ord: context.ord(),
                    node: config
                        .tune
                        .pinnednuma
                        .then(|| crate::host::numa::device_node(context.cu_dev()))
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

    /// Idle soft-stack blocks (shared with the idle trimmer).
    #[inline]
    pub fn stacks(&self) -> &Arc<StackCache> {
        &self.stacks
    }

    /// Live blocks from `alloc`.
    #[inline]
    pub fn blocks(&self) -> &Blocks {
        &self.blocks
    }

    /// Pooled page-locked host memory.
    #[inline]
    pub(super) fn pinned(&self) -> &HostPool {
        &self.pinned
    }

    /// Whether the device allocates from a stream-ordered memory pool.
    pub fn has_pool(&self) -> bool {
        self.pool.is_some()
    }

    /// What an opened device does first when `GOMP_NVPTX_TUNE=poolwarm=open`: starts
    /// the pool's warm-up in `context` (nothing without a pool).
    pub(super) fn warm_up(&self, context: &DeviceContext) {
        if let Some(p) = &self.pool {
            p.warm_up(context.ctx());
        }
    }

    /// Starts the kept page-locked block's thread (`GOMP_NVPTX_TUNE=pinkeep`) for the
    /// device of `context` unless it was started before; joined at close.
    pub fn keep_page_locked(&self, context: &DeviceContext) {
        self.pin_keep.start(context.ord(), context.ctx());
    }

    /// Gives back the device memory at close (context current, deferred copies
    /// settled): the cached stacks, the caches' chunks and the pool; then releases the
    /// kept page-locked block.
    pub(super) fn close<T: LaneData>(&self, ord: i32, launch: &LaunchResources<T>) {
        self.stacks.close();
        for c in self
            .small
            .drain_chunks()
            .into_iter()
            .chain(self.large.drain())
        {
            let _ = self.free_chunk(c, launch);
        }
        if let Some(p) = &self.pool {
            self.free_direct(p.drain_direct(), ord, launch);
            log::debug!(
                "device {}: {} byte(s) still allocated from the pool at close",
                ord,
                p.used()
            );
            p.destroy();
        }
        self.pin_keep.release();
    }

    /// Frees the pooled page-locked host memory (device close, after the copies'
    /// buffers).
    pub(super) fn destroy_pinned(&self) -> Result<()> {
        self.pinned.destroy()
    }

    /// Allocates `size` device bytes: small blocks from the small-block cache, large
    /// ones from the large-block cache or else from `from_driver` (a chunk of the
    /// given bytes: the caller's [`Memory::alloc_retry`] with the device's parts),
    /// then registers the block and records it in `observe`.
    pub fn alloc(
        &self,
        size: usize,
        observe: Option<&DeviceObserve>,
        from_driver: impl Fn(usize) -> Result<CUdeviceptr>,
    ) -> Result<CUdeviceptr> {
        let _range = nvtx::range(Kind::Alloc, Some(size as u64), || "alloc".into());
        let p = match self.small.take(size, &from_driver) {
            Some(r) => r?,
            None => {
                let r = large_blocks::rounded(size);
                match self.large.take(r) {
                    Some(p) => p,
                    None => from_driver(r)?,
                }
            }
        };
        self.blocks.insert(p, size);
        if let Some(o) = observe {
            o.alloc(size);
        }
        Ok(p)
    }

    /// A chunk of `size` device bytes from the pool or the driver (see
    /// `alloc_once`). On out-of-memory the cached large blocks, the pool's unused
    /// memory and the cached soft stacks are released and the allocation retried once.
    /// `context`, `settings` and `launch` are the device's; `observe` its recorder.
    pub fn alloc_retry<T: LaneData>(
        &self,
        size: usize,
        context: &DeviceContext,
        settings: &Settings,
        launch: &LaunchResources<T>,
        observe: Option<&DeviceObserve>,
    ) -> Result<CUdeviceptr> {
        match self.alloc_once(size.max(1), context, settings, observe) {
            Err(Error::Driver(e))
                if e.code() == i64::from(crate::cuda::sys::CUDA_ERROR_OUT_OF_MEMORY) =>
            {
                self.release_cached(context.ord(), launch);
                self.alloc_once(size.max(1), context, settings, observe)
            }
            r => r,
        }
    }

    /// Gives the device memory the plugin holds only as a cache back to the driver:
    /// the cached large blocks, empty small-block chunks, the pool's unused memory and
    /// the idle soft stacks. Done before retrying an allocation that ran out of
    /// memory. Costs the next allocations a driver call each; cheap when the caches
    /// are empty. Context current (caller); `ord` names the device in log lines,
    /// `launch` orders the frees after the deferred copies.
    pub fn release_cached<T: LaneData>(&self, ord: i32, launch: &LaunchResources<T>) {
        for p in self
            .large
            .drain()
            .into_iter()
            .chain(self.small.drain_empty())
        {
            let _ = self.free_chunk(p, launch);
        }
        if let Some(p) = &self.pool {
            self.free_direct(p.drain_direct(), ord, launch);
            p.trim();
        }
        self.stacks.trim();
    }

    /// Device memory the plugin holds without the program using it: what the pool
    /// reserved beyond what it handed out, direct chunks kept aside, cached large
    /// blocks, free small blocks and idle soft stacks. All of it is given back before an allocation fails, so the
    /// free-memory property counts it as free. Waits for the pool's warm-up if it is
    /// still running (its block would otherwise count as used for a moment), then
    /// reads counters and two pool attributes; changes nothing.
    pub fn held_unused(&self) -> usize {
        let pool = self.pool.as_ref().map_or(0, |p| {
            p.finish_warm_up();
            p.unused() as usize + p.parked_bytes()
        });
        pool + self.large.bytes() + self.small.free_bytes() + self.stacks.idle_bytes()
    }

    fn alloc_once(
        &self,
        size: usize,
        context: &DeviceContext,
        settings: &Settings,
        observe: Option<&DeviceObserve>,
    ) -> Result<CUdeviceptr> {
        if let Some(o) = observe {
            o.driver_alloc();
        }
        if let Some(pool) = &self.pool {
            let warm = settings.config().tune.poolwarm;
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
                || settings.kernel_done()
                || pool.direct_chunks() >= LATER_DIRECT
            {
                pool.warm_up_once(context.ctx());
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

    /// Frees block `p` from [`Memory::alloc`], keeping what the device's cache bound
    /// allows (`bound` = `GOMP_NVPTX_DEVICE_CACHE`, from `settings`): empty small-block
    /// chunks and cached large blocks together stay within it, the small blocks always
    /// allowed [`SMALL_FLOOR`] of it. Memory beyond goes back to the driver before this
    /// returns (through the pool, which keeps none of it), so another process can have
    /// it at once. NULL is accepted and ignored; an address that does not start a
    /// block is "invalid device address". The block's size.
    pub fn free_block<T: LaneData>(
        &self,
        p: CUdeviceptr,
        settings: &Settings,
        launch: &LaunchResources<T>,
        observe: Option<&DeviceObserve>,
    ) -> Result<usize> {
        if p == 0 {
            return Ok(0);
        }
        let size = self.blocks.remove(p)?;
        if let Some(o) = observe {
            o.free(size);
        }
        let bound = settings.config().device_cache;
        let floor = SMALL_FLOOR.min(bound);
        if size <= small_blocks::MAX_SMALL {
            let small_room = bound.saturating_sub(self.large.bytes()).max(floor);
            match self.small.give(p, size, small_room) {
                Given::Kept => return Ok(size),
                Given::Release(chunk) => {
                    self.give_back(&[chunk], launch)?;
                    return Ok(size);
                }
                Given::NotSmall => {}
            }
        }
        let large_room = bound.saturating_sub(self.small.empty_bytes().max(floor));
        if let Some(out) = self.large.put(p, large_blocks::rounded(size), large_room) {
            self.give_back(&out, launch)?;
        }
        Ok(size)
    }

    /// Frees `blocks` (large blocks or small-block chunks) to the pool, then has the
    /// pool give the driver everything it holds unused: the memory kept for reuse is
    /// the caches' alone, so the bound holds however the caches grow later (the large
    /// and small caches hand out memory without touching the pool).
    fn give_back<T: LaneData>(
        &self,
        blocks: &[CUdeviceptr],
        launch: &LaunchResources<T>,
    ) -> Result<()> {
        let mut first = Ok(());
        for &b in blocks {
            if let Err(e) = self.free_chunk(b, launch) {
                first = first.and(Err(e));
            }
        }
        if let Some(pool) = &self.pool {
            pool.trim_unused_to(0);
        }
        first
    }

    /// Returns memory from `alloc_retry` (a large block or a small-block chunk) to the
    /// pool or the driver, after the deferred copies that may still write it
    /// (`launch`'s order): the pool's stream waits for them, a plain free waits on the
    /// host.
    pub fn free_chunk<T: LaneData>(
        &self,
        p: CUdeviceptr,
        launch: &LaunchResources<T>,
    ) -> Result<()> {
        match &self.pool {
            // Kept aside, freed when memory runs out or the device closes.
            Some(pool) if pool.park_direct(p) => {}
            Some(pool) => {
                launch.order(pool.stream())?;
                pool.free(p)?;
            }
            None => {
                launch.settle()?;
                // SAFETY: `p` came from cuMemAlloc in this context.
                unsafe { cu_mem::free(p) }?;
            }
        }
        Ok(())
    }

    /// Frees direct chunks ([`crate::device_pool::pool::Pool::drain_direct`]) with
    /// `cuMemFree`, after the deferred copies that may still write them (`launch`'s
    /// order). Best effort: a failure is a `GOMP_DEBUG` line naming device `ord`.
    pub(crate) fn free_direct<T: LaneData>(
        &self,
        chunks: Vec<CUdeviceptr>,
        ord: i32,
        launch: &LaunchResources<T>,
    ) {
        if chunks.is_empty() {
            return;
        }
        if let Err(e) = launch.settle() {
            log::debug!("device {}: freeing direct chunks: {e}", ord);
        }
        for p in chunks {
            // SAFETY: `p` came from cuMemAlloc in this context and is unused.
            if let Err(e) = unsafe { cu_mem::free(p) } {
                log::debug!("device {}: cuMemFree of a direct chunk: {e}", ord);
            }
        }
    }

    /// The address checks of a copy of `n` bytes between host `host_ptr` and device
    /// `dev_ptr` (either direction), with libgomp's messages.
    pub fn check_host_copy(
        &self,
        dev_ptr: CUdeviceptr,
        host_ptr: *const c_void,
        n: usize,
    ) -> Result<()> {
        check_copy(dev_ptr, host_ptr)?;
        self.blocks.check(dev_ptr, n)
    }

    /// The address checks of a device-to-device copy, with libgomp's messages.
    pub fn check_dev2dev(&self, dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> Result<()> {
        if dst == 0 || src == 0 {
            return Err(Error::invalid("invalid device address"));
        }
        self.blocks.check(dst, n)?;
        self.blocks.check(src, n)
    }
}
