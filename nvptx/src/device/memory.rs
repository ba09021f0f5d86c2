//! Device memory and copies for one device. A copy runs on the calling thread's
//! stream, or on CUDA's legacy default stream once OpenACC is in use (see
//! `Device::copy_stream`). Device-to-host and device-to-device copies are complete when
//! the call returns; a small host-to-device copy may return once its source bytes are
//! safe to reuse, before its DMA has ended (a *deferred* copy), with everything that can
//! observe device memory ordered after it (`device::copy_order`).

use crate::cuda::safe::{memory as cu_mem, query, Stream};
use crate::cuda::sys::CUdeviceptr;
use crate::device::Device;
use crate::host::bounce;
use crate::host::ranges as host_ranges;
use crate::host::staging;
use crate::memory::large_blocks;
use crate::memory::small_blocks::{self, Given};
use gomp_plugin::blocks::check_copy;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::acc_prof;
use gomp_plugin::observe::profile::{CopyDir, CopyMem};
use std::ffi::c_void;

/// Largest copy from page-locked host memory that is deferred through a bounce buffer
/// (larger ones DMA directly from the program's memory and complete before returning:
/// copying them on the CPU would cost more than the DMA).
const PINNED_BOUNCE: usize = 64 << 10;

/// Empty small-block chunks a device may always keep (within `GOMP_NVPTX_DEVICE_CACHE`
/// when that is larger): the target-variable block every region allocates and frees
/// then never costs a chunk allocation.
const SMALL_FLOOR: usize = 4 << 20;

impl Device {
    /// Allocates `size` device bytes: small blocks from the small-block cache, large
    /// ones from the large-block cache or else the pool (cuMemAlloc without one). On
    /// out-of-memory the cached large blocks, the pool's unused memory and the cached
    /// soft stacks are released and the allocation retried once.
    pub fn alloc(&self, size: usize) -> Result<CUdeviceptr> {
        let p = match self.small.take(size, |bytes| self.alloc_retry(bytes)) {
            Some(r) => r?,
            None => {
                let r = large_blocks::rounded(size);
                match self.large.take(r) {
                    Some(p) => p,
                    None => self.alloc_retry(r)?,
                }
            }
        };
        self.blocks.insert(p, size);
        if let Some(o) = self.observe() {
            o.alloc(size);
        }
        Ok(p)
    }

    fn alloc_retry(&self, size: usize) -> Result<CUdeviceptr> {
        match self.alloc_once(size.max(1)) {
            Err(Error::Driver(e))
                if e.code == i64::from(crate::cuda::sys::CUDA_ERROR_OUT_OF_MEMORY) =>
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
            .large
            .drain()
            .into_iter()
            .chain(self.small.drain_empty())
        {
            let _ = self.free_chunk(p);
        }
        if let Some(p) = &self.pool {
            p.trim();
        }
        self.stacks.trim();
    }

    /// Device memory the plugin holds without the program using it: what the pool
    /// reserved beyond what it handed out, cached large blocks, free small blocks and
    /// idle soft stacks. All of it is given back before an allocation fails, so the
    /// free-memory property counts it as free. Waits for the pool's warm-up if it is
    /// still running (its block would otherwise count as used for a moment), then
    /// reads counters and two pool attributes; changes nothing.
    pub fn held_unused(&self) -> usize {
        let pool = self.pool.as_ref().map_or(0, |p| {
            p.finish_warm_up();
            p.unused()
        }) as usize;
        pool + self.large.bytes() + self.small.free_bytes() + self.stacks.idle_bytes()
    }

    fn alloc_once(&self, size: usize) -> Result<CUdeviceptr> {
        if let Some(o) = self.observe() {
            o.driver_alloc();
        }
        if let Some(pool) = &self.pool {
            return pool.alloc(size);
        }
        // Context current (caller).
        Ok(cu_mem::alloc(size)?)
    }

    /// Frees a block from [`Device::alloc`]. NULL is accepted and ignored; an address
    /// that does not start a block is "invalid device address".
    pub fn free(&self, p: CUdeviceptr) -> Result<()> {
        self.free_block(p).map(|_| ())
    }

    /// Frees block `p`, keeping what the device's cache bound allows (`bound` =
    /// `GOMP_NVPTX_DEVICE_CACHE`): empty small-block chunks and cached large blocks
    /// together stay within it, the small blocks always allowed [`SMALL_FLOOR`] of it.
    /// Memory beyond goes back to the driver before this returns (through the pool,
    /// which keeps none of it), so another process can have it at once.
    fn free_block(&self, p: CUdeviceptr) -> Result<usize> {
        if p == 0 {
            return Ok(0);
        }
        let size = self.blocks.remove(p)?;
        if let Some(o) = self.observe() {
            o.free(size);
        }
        let bound = self.config.device_cache;
        let floor = SMALL_FLOOR.min(bound);
        if size <= small_blocks::MAX_SMALL {
            let small_room = bound.saturating_sub(self.large.bytes()).max(floor);
            match self.small.give(p, size, small_room) {
                Given::Kept => return Ok(size),
                Given::Release(chunk) => {
                    self.give_back(&[chunk])?;
                    return Ok(size);
                }
                Given::NotSmall => {}
            }
        }
        let large_room = bound.saturating_sub(self.small.empty_bytes().max(floor));
        if let Some(out) = self.large.put(p, large_blocks::rounded(size), large_room) {
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
        if let Some(pool) = &self.pool {
            pool.trim_unused_to(0);
        }
        first
    }

    /// Returns memory from `alloc_retry` (a large block or a small-block chunk) to the
    /// pool or the driver, after the deferred copies that may still write it: the pool's
    /// stream waits for them, a plain free waits on the host.
    pub fn free_chunk(&self, p: CUdeviceptr) -> Result<()> {
        if let Some(pool) = &self.pool {
            self.order(pool.stream())?;
            pool.free(p)?;
        } else {
            self.settle()?;
            // SAFETY: `p` came from cuMemAlloc in this context.
            unsafe { cu_mem::free(p) }?;
        }
        Ok(())
    }

    /// `GOMP_OFFLOAD_alloc`: [`Device::alloc`], reported to an OpenACC profiler
    /// (`acc_ev_alloc`) when one is set up for the calling thread.
    pub fn alloc_for_libgomp(&self, size: usize) -> Result<CUdeviceptr> {
        let p = self.alloc(size)?;
        if let Some(prof) = acc_prof::current() {
            prof.data(acc_prof::EV_ALLOC, size, p as *const c_void);
        }
        Ok(p)
    }

    /// `GOMP_OFFLOAD_free`: [`Device::free`], reported as `acc_ev_free`.
    pub fn free_for_libgomp(&self, p: CUdeviceptr) -> Result<()> {
        self.free_block(p)?;
        if p != 0 {
            if let Some(prof) = acc_prof::current() {
                prof.data(acc_prof::EV_FREE, usize::MAX, p as *const c_void);
            }
        }
        Ok(())
    }

    /// Frees memory that did not come from [`Device::alloc`] (managed memory).
    pub fn free_direct(&self, p: CUdeviceptr) -> Result<()> {
        if p != 0 {
            self.settle()?;
            // SAFETY: `p` came from a cuMemAlloc-family call (caller).
            unsafe { cu_mem::free(p) }?;
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
        if let Some(o) = self.observe() {
            let (t0, mem) = (crate::observe::now(), self.copy_mem(src, n));
            // SAFETY: forwarded caller guarantee.
            let r = unsafe { self.host2dev_plain(dst, src, n) };
            let mem = match r {
                Ok(true) => CopyMem::Deferred,
                _ => mem,
            };
            o.copy(CopyDir::H2D, mem, n, t0);
            return r.map(|_| ());
        }
        // SAFETY: forwarded caller guarantee.
        unsafe { self.host2dev_plain(dst, src, n) }.map(|_| ())
    }

    /// [`Device::host2dev`] of a nonempty copy, unobserved; true when the copy was
    /// deferred (it may still run on the device).
    ///
    /// # Safety
    /// As [`Device::host2dev`].
    unsafe fn host2dev_plain(
        &self,
        dst: CUdeviceptr,
        src: *const c_void,
        n: usize,
    ) -> Result<bool> {
        self.check_host_copy(dst, src, n)?;
        if self.stage(src, n) {
            // The staging lanes' streams are not ordered after deferred copies.
            self.settle()?;
            // SAFETY: readable source (caller); device range checked above.
            if let Some(r) = unsafe { self.staging.host2dev(self.context(), dst, src, n) } {
                return r.map(|()| false);
            }
        }
        let may_defer = self.may_defer(n);
        if may_defer && n < self.config.tune.ring {
            // SAFETY: forwarded caller guarantee; device range checked above.
            if let Some(r) = unsafe { self.host2dev_ring(dst, src, n) } {
                return r.map(|()| true);
            }
        }
        let pageable = (may_defer || self.bounce.takes(n)) && self.pageable(src, n);
        if may_defer {
            // SAFETY: forwarded caller guarantee; device range checked above.
            if let Some(r) = unsafe { self.host2dev_deferred(dst, src, n, pageable) } {
                return r.map(|()| true);
            }
        }
        let r = if self.bounce.takes(n) && pageable {
            let b = self.bounce.take()?;
            // SAFETY: `src` is readable for `n` bytes (caller), the buffer holds at least
            // `n` (`takes`) and no copy reads it (`take`); they do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>(), b.ptr(), n) };
            // SAFETY: the buffer is page-locked and alive until the copy, waited for
            // before returning, has completed.
            let r = self.on_copy_stream(|s| {
                unsafe { s.copy_htod(dst, b.ptr().cast(), n) }.map_err(Error::from)
            });
            self.bounce.give(b);
            r
        } else {
            // SAFETY: readable source (caller); the stream is waited for before returning.
            self.on_copy_stream(|s| unsafe { s.copy_htod(dst, src, n) }.map_err(Error::from))
        };
        if self.device_heap_copy(&r, dst) {
            self.settle()?;
            // SAFETY: readable source (caller); `dst` comes from the device runtime
            // serving a reverse-offload request (see `device_heap_copy`).
            return unsafe { self.kernel_copy.host2dev(&self.streams, dst, src, n) }
                .map(|()| false);
        }
        r.map(|()| false)
    }

    /// A deferred host-to-device copy of a few bytes through the calling thread's ring
    /// (`host::ring`): the bytes are copied into the ring and the copy queued, so the
    /// program's buffer, pageable or page-locked, is free when this returns. `None`
    /// when the ring cannot be had (the caller takes another path).
    ///
    /// # Safety
    /// `src` readable for `n` bytes; `dst` checked by `check_host_copy`.
    unsafe fn host2dev_ring(
        &self,
        dst: CUdeviceptr,
        src: *const c_void,
        n: usize,
    ) -> Option<Result<()>> {
        let (lane, s) = match self
            .thread_streams
            .get()
            .and_then(|l| Ok((l, self.deferred_stream()?)))
        {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        // SAFETY: this thread owns its lane; the space is written only below.
        let slot = match unsafe { lane.data.slot(n, s) } {
            Ok(p) => p,
            Err(e) => {
                log::debug!("copy ring: {e}; copying without it");
                return None;
            }
        };
        Some((|| {
            self.order(s)?;
            // SAFETY: `src` is readable for `n` bytes (caller); the slot holds `n` and
            // no queued copy uses it (`Ring::slot`).
            unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>(), slot, n) };
            // SAFETY: the ring is page-locked and its space is not rewritten before the
            // copy has run (the half's fence).
            unsafe { s.copy_htod(dst, slot.cast(), n) }?;
            self.deferred_done(s)
        })())
    }

    /// A device-to-host copy of a few bytes through the calling thread's ring, waited
    /// for; `None` when the ring cannot be had.
    ///
    /// # Safety
    /// `dst` writable for `n` bytes; `src` checked by `check_host_copy`.
    unsafe fn dev2host_ring(
        &self,
        dst: *mut c_void,
        src: CUdeviceptr,
        n: usize,
    ) -> Option<Result<()>> {
        let (lane, s) = match self
            .thread_streams
            .get()
            .and_then(|l| Ok((l, self.copy_stream()?)))
        {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        // SAFETY: this thread owns its lane; the space is used only below.
        let slot = match unsafe { lane.data.slot(n, s) } {
            Ok(p) => p,
            Err(e) => {
                log::debug!("copy ring: {e}; copying without it");
                return None;
            }
        };
        Some((|| {
            // SAFETY: the slot is page-locked, holds `n` bytes and stays untouched
            // until the copy, waited for here, has run.
            self.on(s, |s| {
                unsafe { s.copy_dtoh(slot.cast(), src, n) }.map_err(Error::from)
            })?;
            // SAFETY: `dst` is writable for `n` bytes (caller); distinct buffers.
            unsafe { std::ptr::copy_nonoverlapping(slot, dst.cast::<u8>(), n) };
            Ok(())
        })())
    }

    /// A host-to-device copy that returns before its DMA has ended, or `None` when this
    /// copy cannot be deferred (the caller then copies and waits). The source is safe to
    /// reuse when this returns: pageable bytes below the bounce size are staged by the
    /// driver during `cuMemcpyHtoDAsync` (CUDA's documented behaviour for pageable
    /// sources), the others are first copied into a bounce buffer, which is reused only
    /// after the copy's event. Memory the program page-locked is never left in flight.
    ///
    /// # Safety
    /// `src` readable for `n` bytes; `dst` checked by `check_host_copy`.
    unsafe fn host2dev_deferred(
        &self,
        dst: CUdeviceptr,
        src: *const c_void,
        n: usize,
        pageable: bool,
    ) -> Option<Result<()>> {
        let direct = pageable && n < bounce::MIN_BYTES;
        if !direct && !((pageable || n <= PINNED_BOUNCE) && self.bounce.fits(n)) {
            return None;
        }
        Some((|| {
            let s = self.deferred_stream()?;
            self.order(s)?;
            if direct {
                // SAFETY: `src` is pageable and readable (caller): the driver has copied
                // it when the call returns.
                unsafe { s.copy_htod(dst, src, n) }?;
            } else {
                let b = self.bounce.take()?;
                // SAFETY: `src` is readable for `n` bytes (caller), the buffer holds at
                // least `n` (`fits`) and no copy reads it (`take`).
                unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>(), b.ptr(), n) };
                // SAFETY: the buffer stays allocated and unwritten until the event
                // recorded after the copy has completed (`Bounce`).
                let r = unsafe { s.copy_htod(dst, b.ptr().cast(), n) }
                    .map_err(Error::from)
                    .and_then(|()| b.read_by(s));
                self.bounce.give(b);
                r?;
            }
            self.deferred_done(s)
        })())
    }

    /// Records a deferred copy just queued on `s` (`copy_order`). If that fails, or a
    /// `targetsync` interop stream has come into being meanwhile (the program may use it
    /// at once), the copy is waited for instead.
    fn deferred_done(&self, s: Stream) -> Result<()> {
        let r = self.copy_order.deferred(s, &self.events);
        if r.is_err() || self.interop_stream_alive() {
            self.on(s, |_| Ok(()))?;
        }
        r
    }

    /// Copies `n` bytes from device `src` to host `dst`.
    ///
    /// # Safety
    /// `dst` must be writable for `n` bytes.
    pub unsafe fn dev2host(&self, dst: *mut c_void, src: CUdeviceptr, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        if let Some(o) = self.observe() {
            let (t0, mem) = (crate::observe::now(), self.copy_mem(dst, n));
            // SAFETY: forwarded caller guarantee.
            let r = unsafe { self.dev2host_plain(dst, src, n) };
            o.copy(CopyDir::D2H, mem, n, t0);
            return r;
        }
        // SAFETY: forwarded caller guarantee.
        unsafe { self.dev2host_plain(dst, src, n) }
    }

    /// [`Device::dev2host`] of a nonempty copy, unobserved.
    ///
    /// # Safety
    /// As [`Device::dev2host`].
    unsafe fn dev2host_plain(&self, dst: *mut c_void, src: CUdeviceptr, n: usize) -> Result<()> {
        self.check_host_copy(src, dst, n)?;
        if self.stage(dst, n) {
            // The staging lanes' streams are not ordered after deferred copies.
            self.settle()?;
            // SAFETY: writable destination (caller); device range checked above.
            if let Some(r) = unsafe { self.staging.dev2host(self.context(), dst, src, n) } {
                return r;
            }
        }
        // Not while serving a reverse-offload request: making the ring allocates
        // page-locked memory, which may wait for the device to be idle, and the
        // requesting kernel waits for this copy.
        // Nor into memory the plugin page-locked: the driver copies there directly, and
        // the ring would add a copy (pageable memory the registry does not know costs a
        // driver query to tell apart, more than the ring saves; it takes the ring).
        let ring = (n < self.config.tune.ring
            && !crate::device::serving::serving_request()
            && !host_ranges::global().contains(dst as usize, n))
        // SAFETY: forwarded caller guarantee; device range checked above.
        .then(|| unsafe { self.dev2host_ring(dst, src, n) })
        .flatten();
        let r = if let Some(r) = ring {
            r
        } else if self.bounce.takes(n) && self.pageable(dst, n) {
            let b = self.bounce.take()?;
            // SAFETY: the buffer is page-locked, holds at least `n` bytes, no copy reads
            // it (`take`), and it is alive until the copy, waited for here, has completed.
            let r = self.on_copy_stream(|s| {
                unsafe { s.copy_dtoh(b.ptr().cast(), src, n) }.map_err(Error::from)
            });
            if r.is_ok() {
                // SAFETY: `dst` is writable for `n` bytes (caller); distinct buffers.
                unsafe { std::ptr::copy_nonoverlapping(b.ptr(), dst.cast::<u8>(), n) };
            }
            self.bounce.give(b);
            r
        } else {
            // SAFETY: writable destination (caller); waited for before returning.
            self.on_copy_stream(|s| unsafe { s.copy_dtoh(dst, src, n) }.map_err(Error::from))
        };
        if self.device_heap_copy(&r, src) {
            self.settle()?;
            // SAFETY: writable destination (caller); `src` comes from the device
            // runtime serving a reverse-offload request (see `device_heap_copy`).
            return unsafe { self.kernel_copy.dev2host(&self.streams, dst, src, n) };
        }
        r
    }

    /// Whether a copy the driver refused as "invalid argument" should be retried by a
    /// kernel: only while this thread serves a reverse-offload request, and only for
    /// an address outside the plugin's own allocations — memory the kernel allocated
    /// itself (device `malloc`), which the driver's copy functions do not know.
    fn device_heap_copy(&self, r: &Result<()>, dev_addr: CUdeviceptr) -> bool {
        let Err(e) = r else { return false };
        let retry = matches!(e, Error::Driver(c) if c.code == i64::from(crate::cuda::sys::CUDA_ERROR_INVALID_VALUE))
            && crate::device::serving::serving_request()
            && !self.blocks.contains(dev_addr);
        log::debug!(
            "copy at device address {dev_addr:#x} failed ({e}){}",
            if retry { "; copying with a kernel" } else { "" }
        );
        retry
    }

    /// Copies `n` bytes between two device buffers.
    pub fn dev2dev(&self, dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.check_dev2dev(dst, src, n)?;
        let t0 = self.observe().map(|_| crate::observe::now());
        // Device addresses are checked by the driver; waited for before returning.
        let r = self.on_copy_stream(|s| s.copy_dtod(dst, src, n).map_err(Error::from));
        if let (Some(o), Some(t0)) = (self.observe(), t0) {
            o.copy(CopyDir::D2D, CopyMem::Device, n, t0);
        }
        r
    }

    /// Sets `n` device bytes at `p` to the low byte of `val`.
    pub fn memset(&self, p: CUdeviceptr, val: i32, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        // Device address checked by the driver; waited for before returning.
        self.on_copy_stream(|s| s.memset_d8(p, val as u8, n).map_err(Error::from))
    }
}

impl Device {
    /// Whether a copy of `n` bytes from or to host `p` should go through the staging
    /// buffers: large, OpenMP ordering (not OpenACC's legacy stream), and `p` pageable.
    /// Memory the plugin page-locked (its pinned pool, `gomp_nvptx_host_lock`) is known
    /// from the host-range registry; otherwise `p` is pageable when the driver knows
    /// nothing of it (page-locked and managed memory DMA directly).
    fn stage(&self, p: *const c_void, n: usize) -> bool {
        n >= staging::MIN_STAGED && !self.openacc_in_use() && self.pageable(p, n)
    }

    /// Whether host `p` (of a copy of `n` bytes) is pageable: not memory the plugin
    /// page-locked (the host-range registry) and unknown to the driver (page-locked and
    /// managed memory DMA directly).
    fn pageable(&self, p: *const c_void, n: usize) -> bool {
        if host_ranges::global().contains(p as usize, n) {
            return false;
        }
        // An unknown (pageable) address is an error return, not a fault.
        query::memory_type(p as CUdeviceptr).is_err()
    }

    /// How a copy of `n` bytes from or to host `p` reaches the host memory (for the
    /// profile only: costs a driver query).
    fn copy_mem(&self, p: *const c_void, n: usize) -> CopyMem {
        if self.stage(p, n) {
            CopyMem::Staged
        } else if host_ranges::global().contains(p as usize, n)
            || query::memory_type(p as CUdeviceptr).is_ok()
        {
            CopyMem::Pinned
        } else {
            CopyMem::Pageable
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
