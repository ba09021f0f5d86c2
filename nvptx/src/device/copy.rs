//! The copy engine of one device: every copy between the host and the device, and
//! between device buffers, goes through here, whoever asks for it.
//!
//! Two kinds of callers ([`Via`]):
//! - *Synchronous* copies (`GOMP_OFFLOAD_host2dev` and kin, OpenMP and OpenACC alike) run
//!   on the calling thread's stream, or on CUDA's legacy default stream once OpenACC is
//!   in use (see `Device::copy_stream`). Device-to-host and device-to-device copies are
//!   complete when the call returns; a small host-to-device copy may return once its
//!   source bytes are safe to reuse, before its DMA has ended (a *deferred* copy), with
//!   everything that can observe device memory ordered after it (`device::copy_order`).
//! - *Queued* copies of an OpenACC async queue run on the queue's stream, in stream
//!   order with the queue's launches, callbacks and waits; the program waits for the
//!   queue before it relies on them (OpenACC's rule).
//!
//! Both take the same paths for the same memory: pageable copies of at least
//! `staging::MIN_STAGED` bytes through the staging engine (complete before returning),
//! pageable copies within the bounce size through a page-locked bounce buffer, small
//! device-to-host copies to pageable memory through the calling thread's ring, the
//! rest by the driver; the profile and the trace count every copy by the path it took
//! (`queued` for a queue's copy that returned before it ran).

use crate::cuda::safe::{query, Stream};
use crate::cuda::sys::CUdeviceptr;
use crate::device::Device;
use crate::host::bounce;
use crate::host::ranges as host_ranges;
use crate::host::ring::Ring;
use crate::host::staging;
use crate::observe::profile::{CopyDir, CopyMem};
use gomp_plugin::blocks::check_copy;
use gomp_plugin::error::{Error, Result};
use std::ffi::c_void;

/// Largest copy from page-locked host memory that is deferred through a bounce buffer
/// (larger ones DMA directly from the program's memory and complete before returning:
/// copying them on the CPU would cost more than the DMA).
const PINNED_BOUNCE: usize = 64 << 10;

/// Where a copy goes and what its caller is promised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// A synchronous copy of the calling thread: complete when the call returns, or,
    /// host to device, deferred under `copy_order`'s rule.
    Sync,
    /// A copy of an OpenACC async queue, queued on the queue's stream, which the caller
    /// has ordered after the deferred copies (`AccQueue::ordered_stream`).
    Queue(Stream),
}

/// How a copy stood when its call returned.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// Complete.
    Done,
    /// A synchronous host-to-device copy that may still run (`copy_order`).
    Deferred,
    /// Queued on an OpenACC queue's stream.
    Queued,
}

impl Ended {
    /// The profile's row of a copy that ended so, `mem` being how it reached the host.
    fn row(self, mem: CopyMem) -> CopyMem {
        match self {
            Ended::Done => mem,
            Ended::Deferred => CopyMem::Deferred,
            Ended::Queued => CopyMem::Queued,
        }
    }
}

impl Device {
    /// Copies `n` bytes from host `src` to device `dst` (see [`Via`]).
    ///
    /// # Safety
    /// `src` must be readable for `n` bytes; for [`Via::Queue`], until the queue's work
    /// queued so far has run (libgomp keeps or stages it).
    pub unsafe fn host2dev_via(
        &self,
        dst: CUdeviceptr,
        src: *const c_void,
        n: usize,
        via: Via,
    ) -> Result<()> {
        // SAFETY: `src` is only read (the caller's guarantee); `dst` is checked first.
        unsafe {
            self.host_copy(CopyDir::H2D, dst, src.cast_mut(), n, via, || {
                self.host2dev_unstaged(dst, src, n, via)
            })
        }
    }

    /// [`Device::host2dev_via`] of a nonempty, checked copy that the staging engine did
    /// not take.
    ///
    /// # Safety
    /// As [`Device::host2dev_via`]; `dst` checked by `check_host_copy`.
    unsafe fn host2dev_unstaged(
        &self,
        dst: CUdeviceptr,
        src: *const c_void,
        n: usize,
        via: Via,
    ) -> Result<Ended> {
        match via {
            // SAFETY: forwarded caller guarantee; device range checked above.
            Via::Sync => unsafe { self.host2dev_sync(dst, src, n) },
            Via::Queue(s) => {
                // A bounce buffer only if one is free without waiting for earlier work.
                let bounce = (self.bounce.takes(n) && self.pageable(src, n))
                    .then(|| self.bounce.try_take())
                    .flatten();
                if let Some(b) = bounce {
                    // SAFETY: forwarded caller guarantee; device range checked above.
                    unsafe { self.host2dev_bounced(s, b?, dst, src, n) }?;
                } else {
                    // SAFETY: the source stays readable until the queue's work has run
                    // (caller); the driver checks `dst` again.
                    unsafe { s.copy_htod(dst, src, n) }?;
                }
                Ok(Ended::Queued)
            }
        }
    }

    /// A synchronous host-to-device copy (not staged): through the thread's ring or a
    /// bounce buffer and deferred where it may be, else waited for.
    ///
    /// # Safety
    /// `src` readable for `n` bytes; `dst` checked by `check_host_copy`.
    unsafe fn host2dev_sync(
        &self,
        dst: CUdeviceptr,
        src: *const c_void,
        n: usize,
    ) -> Result<Ended> {
        let may_defer = self.may_defer(n);
        if may_defer && n < self.config.tune.ring {
            // SAFETY: forwarded caller guarantee.
            if let Some(r) = unsafe { self.host2dev_ring(dst, src, n) } {
                return r.map(|()| Ended::Deferred);
            }
        }
        let pageable = (may_defer || self.bounce.takes(n)) && self.pageable(src, n);
        if may_defer {
            // SAFETY: forwarded caller guarantee.
            if let Some(r) = unsafe { self.host2dev_deferred(dst, src, n, pageable) } {
                return r.map(|()| Ended::Deferred);
            }
        }
        let r = if self.bounce.takes(n) && pageable {
            let b = self.bounce.take()?;
            // SAFETY: forwarded caller guarantee; the stream is waited for.
            self.on_copy_stream(|s| unsafe { self.host2dev_bounced(s, b, dst, src, n) })
        } else {
            // SAFETY: readable source (caller); the stream is waited for before returning.
            self.on_copy_stream(|s| unsafe { s.copy_htod(dst, src, n) }.map_err(Error::from))
        };
        if self.device_heap_copy(&r, dst) {
            self.settle()?;
            // SAFETY: readable source (caller); `dst` comes from the device runtime
            // serving a reverse-offload request (see `device_heap_copy`).
            return unsafe { self.kernel_copy.host2dev(&self.streams, dst, src, n) }
                .map(|()| Ended::Done);
        }
        r.map(|()| Ended::Done)
    }

    /// Queues on `s` a copy of `n` bytes from `src` through bounce buffer `b` (taken by
    /// the caller, given back here): the bytes are copied into the buffer first, so
    /// `src` is free when this returns; the buffer is handed out again only after the
    /// event recorded after the copy (`Bounce`).
    ///
    /// # Safety
    /// `src` readable for `n` bytes (`n` within the bounce size); `dst` checked by
    /// `check_host_copy`; `s` a stream of the device.
    unsafe fn host2dev_bounced(
        &self,
        s: Stream,
        b: bounce::Buffer,
        dst: CUdeviceptr,
        src: *const c_void,
        n: usize,
    ) -> Result<()> {
        // SAFETY: `src` is readable for `n` bytes (caller), the buffer holds at least
        // `n` (caller: `fits`) and no copy reads it (`take`); they do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>(), b.ptr(), n) };
        // SAFETY: the buffer stays allocated and unwritten until the event recorded
        // after the copy has completed (`Bounce`).
        let r = unsafe { s.copy_htod(dst, b.ptr().cast(), n) }
            .map_err(Error::from)
            .and_then(|()| b.read_by(s));
        self.bounce.give(b);
        r
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
        let s = match self.deferred_stream() {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        // SAFETY: the space is written only below.
        let (_, slot) = match unsafe { self.ring_slot(n, s) }? {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
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

    /// The calling thread's ring and space in it for `n` bytes of the copy queued next
    /// on `s`; `None` for the thread's first few small copies (`Ring::wanted`) and when the
    /// ring cannot be had (logged): the caller copies another way; an error when the
    /// thread's lane cannot be had.
    ///
    /// # Safety
    /// The space of an earlier call must not be written after this call returns.
    unsafe fn ring_slot(&self, n: usize, s: Stream) -> Option<Result<(&Ring, *mut u8)>> {
        let ring = match self.thread_streams.get() {
            Ok(lane) => &lane.data.ring,
            Err(e) => return Some(Err(e)),
        };
        // SAFETY: the lane is this thread's (`get`).
        if !unsafe { ring.wanted() } {
            return None;
        }
        // SAFETY: the lane is this thread's (`get`); the caller's guarantee.
        match unsafe { ring.slot(n, s) } {
            Ok(p) => Some(Ok((ring, p))),
            Err(e) => {
                log::debug!("copy ring: {e}; copying without it");
                None
            }
        }
    }

    /// A device-to-host copy of a few bytes on `s` through the calling thread's ring,
    /// waited for; `None` when the ring cannot be had.
    ///
    /// # Safety
    /// `dst` writable for `n` bytes; `src` checked by `check_host_copy`; `s` a stream
    /// of the device.
    unsafe fn dev2host_ring(
        &self,
        s: Stream,
        dst: *mut c_void,
        src: CUdeviceptr,
        n: usize,
    ) -> Option<Result<()>> {
        // SAFETY: the space is used only below.
        let (ring, slot) = match unsafe { self.ring_slot(n, s) }? {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        Some((|| {
            // SAFETY: the slot is page-locked, holds `n` bytes and stays untouched
            // until the copy, waited for here, has run.
            self.on(s, |s| {
                unsafe { s.copy_dtoh(slot.cast(), src, n) }.map_err(Error::from)
            })?;
            // SAFETY: this thread owns its lane; `s` has just been synchronised after
            // the ring's latest copy.
            unsafe { ring.synced(s) };
            // SAFETY: `dst` is writable for `n` bytes (caller); distinct buffers.
            unsafe { std::ptr::copy_nonoverlapping(slot, dst.cast::<u8>(), n) };
            Ok(())
        })())
    }

    /// A host-to-device copy that returns before its DMA has ended, or `None` when this
    /// copy cannot be deferred (the caller then copies and waits). The source is safe to
    /// reuse when this returns: pageable bytes below the bounce size are staged by the
    /// driver during `cuMemcpyHtoDAsync` (CUDA's documented behaviour for pageable
    /// sources), the others are first copied into a bounce buffer. Memory the program
    /// page-locked is never left in flight.
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
                // SAFETY: forwarded caller guarantee; the buffer fits `n` (above).
                unsafe { self.host2dev_bounced(s, b, dst, src, n) }?;
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

    /// Copies `n` bytes from device `src` to host `dst` (see [`Via`]).
    ///
    /// # Safety
    /// `dst` must be writable for `n` bytes; for [`Via::Queue`], until the queue's work
    /// queued so far has run.
    pub unsafe fn dev2host_via(
        &self,
        dst: *mut c_void,
        src: CUdeviceptr,
        n: usize,
        via: Via,
    ) -> Result<()> {
        // SAFETY: forwarded caller guarantee; `src` is checked first.
        unsafe {
            self.host_copy(CopyDir::D2H, src, dst, n, via, || {
                self.dev2host_unstaged(dst, src, n, via)
            })
        }
    }

    /// The part every copy between the host and the device shares, either direction
    /// (`dir`: `H2D` or `D2H`): nothing for 0 bytes; the address checks; the staging engine where it
    /// takes the copy, else `unstaged`; the copy recorded in the profile and the trace
    /// when either is on (the row: how it reached the host, or how it ended).
    ///
    /// # Safety
    /// `host` readable (to the device) or writable (to the host) for `n` bytes; for
    /// [`Via::Queue`], until the queue's work queued so far has run.
    unsafe fn host_copy(
        &self,
        dir: CopyDir,
        dev: CUdeviceptr,
        host: *mut c_void,
        n: usize,
        via: Via,
        unstaged: impl FnOnce() -> Result<Ended>,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let copy = || {
            self.check_host_copy(dev, host, n)?;
            // SAFETY: `host` writable for `n` bytes (caller).
            if dir == CopyDir::D2H
                && via == Via::Sync
                && unsafe { self.read_ahead_serves(host, dev, n) }
            {
                return Ok(Ended::Done);
            }
            // SAFETY: `host` as the caller guarantees; `dev` checked above.
            let staged = self.staged(host, n, via, || unsafe {
                match dir {
                    CopyDir::H2D => self.staging.host2dev(self.context(), dev, host, n),
                    _ => self.staging.dev2host(self.context(), host, dev, n),
                }
            });
            staged.unwrap_or_else(unstaged)
        };
        let Some(o) = self.observe() else {
            return copy().map(|_| ());
        };
        let (t0, mem) = (crate::observe::now(), self.copy_mem(host, n, via));
        let r = copy();
        o.copy(dir, r.as_ref().map_or(mem, |e| e.row(mem)), n, t0);
        r.map(|_| ())
    }

    /// [`Device::dev2host_via`] of a nonempty, checked copy that the staging engine did
    /// not take. A queue's copy to page-locked memory is queued; every other copy is
    /// waited for (to pageable memory the driver would wait too).
    ///
    /// # Safety
    /// As [`Device::dev2host_via`]; `src` checked by `check_host_copy`.
    unsafe fn dev2host_unstaged(
        &self,
        dst: *mut c_void,
        src: CUdeviceptr,
        n: usize,
        via: Via,
    ) -> Result<Ended> {
        let (s, pageable) = match via {
            Via::Sync => (self.copy_stream()?, None),
            Via::Queue(s) => {
                if !self.pageable(dst, n) {
                    // SAFETY: the destination stays writable until the queue's work has
                    // run (caller); the driver checks `src` again.
                    unsafe { s.copy_dtoh(dst, src, n) }?;
                    return Ok(Ended::Queued);
                }
                (s, Some(true))
            }
        };
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
        .then(|| unsafe { self.dev2host_ring(s, dst, src, n) })
        .flatten();
        let r = if let Some(r) = ring {
            r
        } else if self.bounce.takes(n) && pageable.unwrap_or_else(|| self.pageable(dst, n)) {
            let b = self.bounce.take()?;
            // SAFETY: the buffer is page-locked, holds at least `n` bytes, no copy reads
            // it (`take`), and it is alive until the copy, waited for here, has completed.
            let r = self.on(s, |s| {
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
            self.on(s, |s| {
                unsafe { s.copy_dtoh(dst, src, n) }.map_err(Error::from)
            })
        };
        if via == Via::Sync && self.device_heap_copy(&r, src) {
            self.settle()?;
            // SAFETY: writable destination (caller); `src` comes from the device
            // runtime serving a reverse-offload request (see `device_heap_copy`).
            return unsafe { self.kernel_copy.dev2host(&self.streams, dst, src, n) }
                .map(|()| Ended::Done);
        }
        r.map(|()| Ended::Done)
    }

    /// Whether a synchronous device-to-host copy of `n` bytes from `src` to `dst` was
    /// served from what the calling thread's latest run read ahead (`host::read_ahead`,
    /// which learns the copy otherwise). Not once OpenACC is in use (synchronous copies
    /// are then ordered after the OpenACC queues' work).
    ///
    /// # Safety
    /// `dst` writable for `n` bytes; the first step of the copy's entry point.
    unsafe fn read_ahead_serves(&self, dst: *mut c_void, src: CUdeviceptr, n: usize) -> bool {
        if self.openacc_in_use() {
            return false;
        }
        let Ok(lane) = self.thread_streams.get() else {
            return false;
        };
        // SAFETY: this thread's lane (`get`); forwarded caller guarantees.
        unsafe {
            lane.data
                .read_ahead
                .serve(dst.cast(), src, n, self.config.tune.readahead)
        }
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

    /// Copies `n` bytes between two device buffers (see [`Via`]: a synchronous copy is
    /// waited for).
    pub fn dev2dev_via(
        &self,
        dst: CUdeviceptr,
        src: CUdeviceptr,
        n: usize,
        via: Via,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.check_dev2dev(dst, src, n)?;
        let t0 = self.observe().map(|_| crate::observe::now());
        // Device addresses are checked by the driver.
        let (r, ended) = match via {
            // Waited for before returning.
            Via::Sync => (
                self.on_copy_stream(|s| s.copy_dtod(dst, src, n).map_err(Error::from)),
                Ended::Done,
            ),
            Via::Queue(s) => (s.copy_dtod(dst, src, n).map_err(Error::from), Ended::Queued),
        };
        if let (Some(o), Some(t0)) = (self.observe(), t0) {
            o.copy(CopyDir::D2D, ended.row(CopyMem::Device), n, t0);
        }
        r
    }

    /// Whether a copy of `n` bytes from or to host `p` goes through the staging engine:
    /// large, `p` pageable, and, for a synchronous copy, OpenMP ordering (not OpenACC's
    /// legacy stream: the engine's streams are not ordered after the queues' work). Memory
    /// the plugin page-locked (its pinned pool, `gomp_nvptx_host_lock`) is known from
    /// the host-range registry; otherwise `p` is pageable when the driver knows nothing
    /// of it (page-locked and managed memory DMA directly).
    fn stage(&self, p: *const c_void, n: usize, via: Via) -> bool {
        n >= staging::MIN_STAGED
            && (via != Via::Sync || !self.openacc_in_use())
            && self.pageable(p, n)
    }

    /// A copy of `n` bytes from or to host `p` through the staging engine (`run`) when
    /// it goes that way ([`Device::stage`]), complete when it returns, after what it
    /// waits for first on the host: a queue's work queued so far (the engine's streams
    /// are not ordered after it, and the queue's later work comes after the copy) and
    /// every deferred copy (rule 3 of `copy_order`). `None` when the copy does not go
    /// that way or the engine is busy (the caller copies another way).
    fn staged(
        &self,
        p: *const c_void,
        n: usize,
        via: Via,
        run: impl FnOnce() -> Option<Result<()>>,
    ) -> Option<Result<Ended>> {
        if !self.stage(p, n, via) {
            return None;
        }
        if let Err(e) = self.before_staging(via) {
            return Some(Err(e));
        }
        run().map(|r| r.map(|()| Ended::Done))
    }

    /// What [`Device::staged`] waits for.
    fn before_staging(&self, via: Via) -> Result<()> {
        if let Via::Queue(s) = via {
            // An event recorded on the queue's stream covers what CUDA orders that
            // stream after (work queued before on the legacy stream).
            let ev = self.events.acquire()?;
            // The event and stream belong to the device's context.
            let h = ev.handle();
            let r = h.record(s).and_then(|()| h.synchronize());
            self.events.release(ev);
            r?;
        }
        self.settle()
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
    fn copy_mem(&self, p: *const c_void, n: usize, via: Via) -> CopyMem {
        if self.stage(p, n, via) {
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
