//! Copy path: copies of a few bytes through the calling thread's page-locked ring:
//! the route ([`ByRing`]) and the ring itself ([`Ring`], also the thread's way of
//! waiting for its synchronous launches: [`LaunchResources::on_waited`]). To the
//! device: a synchronous copy that may be deferred, below the ring size; the bytes are
//! copied into the ring and the copy queued, so the program's buffer, pageable or
//! page-locked, is free when this returns (ends deferred). To the host: below the ring
//! size, waited for, then copied out of the ring. Sized by `ring`.
//!
//! The ring: a host thread's page-locked ring for small copies. A copy of a few bytes between the
//! host and the device goes through page-locked memory either way (the driver stages
//! pageable memory itself); through the plugin's own ring it needs no question to the
//! driver about the host memory (pageable or page-locked alike: the bytes are copied
//! on the CPU), a host-to-device copy may return as soon as it is queued (the ring
//! holds the bytes, the program's buffer is free), and the driver's own pageable
//! staging is not used for them.
//!
//! The ring is two halves of [`HALF`] bytes, filled one after the other. Leaving a half,
//! an event (the half's *fence*) is recorded on the stream its copies went to; a half is
//! written again only after its fence has completed, so no byte is rewritten while a
//! queued copy may still read it. A half holds the copies of one stream: a copy on
//! another stream starts the other half.
//!
//! A copy to the host through the ring, and the thread's synchronous kernel launches, are
//! waited for by [`Ring::wait`]: with `GOMP_NVPTX_TUNE=syncwait=flag` (for kernel
//! launches only with `syncwait=run`; under `syncwait=auto`, the default, for each kind
//! as the device measured faster, `device::wait_choice`, measured here: [`measure`]) the
//! stream writes a sequence number into a word after the ring's halves
//! (`cuStreamWriteValue32`, fenced) and the thread polls it, which sees the work done
//! sooner than `cuStreamSynchronize` (H100: the bare driver's 8-byte copy 6.4 µs waited
//! so, 7.2 by synchronizing, bench/cuda_floor.c's `d2h8_flag`, `d2h8_pinned_sync`; a
//! 4 KiB `target update from` 7.3 vs 7.9 µs through the plugin; but on an H200 host the
//! plugin's copies to the host were slower so: a 4 KiB `target update from` 8.3 vs 7.8 µs,
//! back-to-back 4 KiB copies 0.25 vs 0.51 GB/s; on another H200 host of 2026-12-01 the
//! flag was faster for copies: 8-byte copies to the host 6.97 vs 7.79 µs, hence the
//! measured choice).
//! Before the thread has its ring (its first few small copies) it synchronizes.
//!
//! Ownership and threading: one [`Ring`] per host thread and device, held by the
//! thread's lane (`cuda::pools::thread_streams`, its data the copy paths'
//! `ThreadBuffers`) and used only by the thread owning that lane; created on first use
//! (context current), freed when the lane is dropped at device close, after its
//! copies. [`ByRing`] is zero-sized and stateless.

use super::host_copy::HostCopy;
use super::path::{CopyPath, Ended, Failed, Knob, Route, Taken, Takes};
pub(super) use crate::config::tune::RING as KNOB;
use crate::config::Config;
use crate::cuda::pools::thread_streams::LaneData;
use crate::cuda::safe::{DeviceAlloc, HostAlloc, OwnedEvent, Stream};
use crate::cuda::sys::{CUdeviceptr, CUDA_ERROR_NOT_READY, CU_MEMHOSTALLOC_DEVICEMAP};
use crate::device::launch_resources::LaunchResources;
use crate::device::parts::Parts;
use crate::device::serving;
use crate::device::wait_choice::{MeasuredWaits, ROUNDS};
use crate::host::ranges as host_ranges;
use crate::observe::info;
use crate::observe::profile::CopyDir;
use gomp_plugin::error::Result;
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The ring path (zero-sized, stateless, `Sync`; the ring, [`Ring`], is the calling
/// thread's lane's).
pub struct ByRing;

impl Route for ByRing {
    fn label(&self) -> &'static str {
        "ring"
    }

    fn knob(&self) -> Option<Knob> {
        Some(Knob::Own(&KNOB))
    }

    /// Below the `ring` size: a synchronous copy either way, a queue's copy to the host.
    fn takes(&self, config: &Config) -> Takes {
        Takes::of(CopyDir::H2D, false)
            .or(Takes::of(CopyDir::D2H, false))
            .or(Takes::of(CopyDir::D2H, true))
            .sized(0, config.tune.size(&KNOB))
    }
}

impl<B, T: LaneData + AsRef<Ring>> CopyPath<B, T> for ByRing {
    unsafe fn try_copy(&self, d: &Parts<B, T>, c: &HostCopy) -> Option<Taken> {
        if c.dir == CopyDir::H2D {
            // A synchronous copy (`takes`).
            if !c.may_defer(d) {
                return None;
            }
            // SAFETY: `c.host` readable for `c.n` bytes (caller).
            let r = unsafe { host2dev(d, c) }?;
            return Some(r.map(|()| Ended::Deferred).map_err(Failed::from));
        }
        // Not while serving a reverse-offload request: making the ring allocates
        // page-locked memory, which may wait for the device to be idle, and the
        // requesting kernel waits for this copy.
        // Nor into memory the plugin page-locked: the driver copies there directly, and
        // the ring would add a copy (pageable memory the registry does not know costs a
        // driver query to tell apart, more than the ring saves; it takes the ring).
        if serving::serving_request() || host_ranges::global().contains(c.host as usize, c.n) {
            return None;
        }
        // The thread's lane, asked once for the stream and the ring.
        let lane = match d.launch.thread_streams().get() {
            Ok(l) => l,
            Err(e) => return Some(Err(e.into())),
        };
        let s = match c.stream_or(d, || Ok(lane.stream())) {
            Ok(s) => s,
            Err(e) => return Some(Err(e.into())),
        };
        // SAFETY: `c.host` writable for `c.n` bytes (caller); `c.dev` checked.
        let r = unsafe { dev2host(d, lane.data.as_ref(), s, c) }?;
        Some(r.map(|()| Ended::Done).map_err(Failed::copy))
    }
}

/// Copy `c` to the device, deferred, through the calling thread's ring. `None` when
/// the ring cannot be had (the caller takes another path).
///
/// # Safety
/// `c.host` readable for `c.n` bytes; `c.dev` checked by `check_host_copy`.
unsafe fn host2dev<B, T: LaneData + AsRef<Ring>>(
    d: &Parts<B, T>,
    c: &HostCopy,
) -> Option<Result<()>> {
    let (dst, src, n) = (c.dev, c.host.cast_const(), c.n);
    // The thread's lane, asked once for the stream and the ring.
    let lane = match d.launch.thread_streams().get() {
        Ok(l) => l,
        Err(e) => return Some(Err(e)),
    };
    let s = match d.settings.deferred_stream_or(|| Ok(lane.stream())) {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    // SAFETY: the space is written only below.
    let slot = unsafe { slot(lane.data.as_ref(), n, s) }?;
    c.taken(ByRing.label());
    Some((|| {
        d.launch.order(s)?;
        // SAFETY: `src` is readable for `n` bytes (caller); the slot holds `n` and
        // no queued copy uses it (`Ring::slot`).
        unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>(), slot, n) };
        // SAFETY: the ring is page-locked and its space is not rewritten before the
        // copy has run (the half's fence).
        unsafe { s.copy_htod(dst, slot.cast(), n) }?;
        d.deferred_done(s)
    })())
}

/// Space for `n` bytes in the calling thread's `ring` for the copy queued next on
/// `s`; `None` for the thread's first few small copies (`Ring::wanted`) and when the
/// ring cannot be had (logged): the caller copies another way.
///
/// # Safety
/// `ring` must be the calling thread's lane's; the space of an earlier call must not
/// be written after this call returns.
unsafe fn slot(ring: &Ring, n: usize, s: Stream) -> Option<*mut u8> {
    // SAFETY: the calling thread's ring (caller).
    if !unsafe { ring.wanted() } {
        return None;
    }
    // SAFETY: the calling thread's ring; the caller's guarantee.
    match unsafe { ring.slot(n, s) } {
        Ok(p) => Some(p),
        Err(e) => {
            log::debug!("copy ring: {e}; copying without it");
            None
        }
    }
}

/// Copy `c` to the host on `s` through the calling thread's `ring`,
/// waited for; `None` when the ring cannot be had.
///
/// # Safety
/// `ring` the calling thread's lane's; `c.host` writable for `c.n` bytes; `c.dev`
/// checked by `check_host_copy`; `s` a stream of the device.
unsafe fn dev2host<B, T: LaneData>(
    d: &Parts<B, T>,
    ring: &Ring,
    s: Stream,
    c: &HostCopy,
) -> Option<Result<()>> {
    let (dst, src, n) = (c.host, c.dev, c.n);
    // SAFETY: the calling thread's ring (caller); the space is used only below.
    let slot = unsafe { slot(ring, n, s) }?;
    c.taken(ByRing.label());
    Some((|| {
        let copy = |s: Stream| {
            // SAFETY: the slot is page-locked, holds `n` bytes and stays untouched until
            // the copy, waited for here, has run.
            unsafe { s.copy_dtoh(slot.cast(), src, n) }
        };
        // SAFETY: the ring is this thread's lane's (caller); `s` a stream of the device.
        unsafe { d.on_waited(s, ring, false, copy) }?;
        // SAFETY: `dst` is writable for `n` bytes (caller); distinct buffers.
        unsafe { std::ptr::copy_nonoverlapping(slot, dst.cast::<u8>(), n) };
        Ok(())
    })())
}

/// Bytes of a ring.
pub const BYTES: usize = 256 << 10;
/// Bytes of each half.
pub const HALF: usize = BYTES / 2;
/// Alignment of each copy's space.
const ALIGN: usize = 64;
/// Polls of the flag between two questions about the stream's state
/// ([`Ring::wait`]): an error or completion the flag does not show is seen that soon.
const POLLS_PER_QUERY: u32 = 64;
/// How long [`Ring::wait`] polls before it waits by `cuStreamSynchronize` (a copy
/// queued behind a long kernel does not keep the thread spinning).
pub const SPIN_LIMIT: Duration = Duration::from_micros(200);

struct Inner {
    /// Recorded when a half is left, on the stream of its copies.
    fences: [OwnedEvent; 2],
    /// The two halves, then the flag's word ([`Ring::wait`]).
    mem: HostAlloc,
    /// The flag's device address (0: none; the ring is waited for by synchronizing).
    flag_dev: CUdeviceptr,
    /// The value the flag's latest write carries.
    seq: u32,
    /// The half being filled (0 or 1) and its bytes used.
    half: usize,
    used: usize,
    /// The stream of the copies in the current half (none yet: `None`).
    stream: Option<Stream>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The memory is freed after this (field order): never while a copy uses it.
        if let Some(s) = self.stream {
            let _ = self.fences[self.half].handle().record(s);
        }
        for f in &self.fences {
            if let Err(e) = f.handle().synchronize() {
                log::debug!("copy ring: {e}");
            }
        }
    }
}

/// Small copies a thread makes without the ring before it makes the ring
/// ([`Ring::wanted`]): a program's first region copies a few bytes each way.
pub const WITHOUT: u8 = 3;

/// One thread's ring (empty until first used), and how many small copies the thread
/// made without it ([`Ring::wanted`]).
#[derive(Default)]
pub struct Ring(UnsafeCell<Option<Inner>>, Cell<u8>);

// SAFETY: a ring is used only by the thread owning the lane it belongs to (one live
// thread at a time, see `cuda::pools::thread_streams`), and dropped by the device's
// close when no thread uses it.
unsafe impl Sync for Ring {}

impl Ring {
    /// Whether the thread's small copy about to be made should go through the ring:
    /// not its first [`WITHOUT`] ones (making the ring, a page-locked allocation and
    /// two events, costs more than a few copies gain from it: a thread that copies a
    /// few times, such as a program's first region, copies without it), every later
    /// one. Creates nothing.
    ///
    /// # Safety
    /// Only the thread owning the ring's lane may call this.
    pub unsafe fn wanted(&self) -> bool {
        // SAFETY: only the owning thread gets here (caller); no reference into the
        // cell outlives this call.
        if unsafe { &*self.0.get() }.is_some() {
            return true;
        }
        let n = self.1.get();
        if n < WITHOUT {
            self.1.set(n + 1);
            return false;
        }
        true
    }

    /// Whether the ring has been made and has its flag word (waits may poll it).
    ///
    /// # Safety
    /// Only the thread owning the ring's lane may call this.
    #[inline]
    pub unsafe fn has_flag(&self) -> bool {
        // SAFETY: only the owning thread gets here (caller); no reference into the
        // cell outlives this call.
        matches!(unsafe { &*self.0.get() }, Some(r) if r.flag_dev != 0)
    }

    /// Space for `n` bytes (at most [`HALF`]) for the copy the caller queues next on `s`;
    /// no queued copy uses it any more. Creates the ring on first use (context current).
    ///
    /// # Safety
    /// Only the thread owning the ring's lane may call this, and the space of an earlier
    /// call must not be written after this call returns.
    pub unsafe fn slot(&self, n: usize, s: Stream) -> Result<*mut u8> {
        // SAFETY: only the owning thread gets here (caller); no reference into the
        // cell outlives this call.
        let cell = unsafe { &mut *self.0.get() };
        if cell.is_none() {
            let mem = HostAlloc::alloc(BYTES + ALIGN, CU_MEMHOSTALLOC_DEVICEMAP as u32)?;
            // SAFETY: live page-locked memory (the word lies inside the allocation).
            let flag_dev =
                match unsafe { crate::cuda::safe::cu_mem::host_device_pointer(word(&mem)) } {
                    Ok(d) => d,
                    Err(e) => {
                        log::debug!("copy ring: {e}; waited for by synchronizing");
                        0
                    }
                };
            *cell = Some(Inner {
                fences: [OwnedEvent::create()?, OwnedEvent::create()?],
                mem,
                flag_dev,
                seq: 0,
                half: 0,
                used: 0,
                stream: None,
            });
        }
        let Some(r) = cell.as_mut() else {
            unreachable!("created above")
        };
        let len = n.max(1).next_multiple_of(ALIGN);
        if len > HALF {
            return Err(gomp_plugin::error::Error::invalid(
                "copy ring: copy larger than half the ring",
            ));
        }
        if r.used + len > HALF || r.stream.is_some_and(|t| t != s) {
            if let Some(t) = r.stream {
                // Events and streams of the device's context.
                r.fences[r.half].handle().record(t)?;
            }
            let next = 1 - r.half;
            r.fences[next].handle().synchronize()?;
            r.half = next;
            r.used = 0;
            r.stream = None;
        }
        // SAFETY: the space lies inside the current half (`used + len` ≤ HALF: a copy
        // is at most HALF bytes, caller).
        let p = unsafe { r.mem.as_ptr().cast::<u8>().add(r.half * HALF + r.used) };
        r.used += len;
        r.stream = Some(s);
        Ok(p)
    }

    /// Queues on `s`, after its work so far, the write of a new value into the ring's
    /// flag word, when `flag` (`syncwait`) asks for it and the ring has the word; the
    /// word and the value to wait for, or `None`: wait by `cuStreamSynchronize`.
    ///
    /// # Safety
    /// Only the thread owning the ring's lane may call this, and must wait for `s`
    /// before the ring is next used; `s` a stream of the device whose context is
    /// current.
    pub unsafe fn arm(&self, s: Stream, flag: bool) -> Option<Armed<'_>> {
        // SAFETY: only the owning thread gets here (caller); no reference into the
        // cell outlives this block.
        let (word, seq) = match unsafe { &mut *self.0.get() } {
            Some(r) if flag && r.flag_dev != 0 => {
                r.seq = r.seq.wrapping_add(1);
                // SAFETY: the word lies in the ring's memory, alive as long as the ring;
                // the caller waits for the stream before the ring is used again.
                match unsafe { s.write_value32(r.flag_dev, r.seq) } {
                    Ok(()) => (word(&r.mem), r.seq),
                    Err(e) => {
                        // Not asked again (drivers or devices without stream memory
                        // operations answer CUDA_ERROR_NOT_SUPPORTED).
                        r.flag_dev = 0;
                        log::debug!("copy ring: {e}; waited for by synchronizing from now on");
                        return None;
                    }
                }
            }
            _ => return None,
        };
        // SAFETY: the word is 64-byte aligned page-locked memory of the ring, which
        // lives as long as `self`; the device writes it, the host only reads it.
        let word = unsafe { &*word.cast::<AtomicU32>() };
        Some(Armed { word, seq })
    }

    /// Waits until the work queued on `s` so far (the ring's latest copy to the host
    /// among it) has run, by the flag when `flag` (`syncwait`, [`Ring::arm`]), else by
    /// `cuStreamSynchronize`; the stream's error, if any.
    /// Then calls [`Ring::synced`].
    ///
    /// # Safety
    /// Only the thread owning the ring's lane may call this; `s` a stream of the device
    /// whose context is current.
    pub unsafe fn wait(&self, s: Stream, flag: bool) -> Result<()> {
        // SAFETY: forwarded caller guarantee; waited for just below.
        match unsafe { self.arm(s, flag) } {
            Some(a) => poll(a.word, a.seq, s)?,
            None => s.synchronize()?,
        }
        // SAFETY: forwarded caller guarantee; `s` has just run its work.
        unsafe { self.synced(s) };
        Ok(())
    }

    /// Notes that stream `s` has been synchronised after the ring's latest copy: when
    /// the current half holds copies of `s`, they have all run, so the half needs no
    /// fence (leaving it later records none on `s`, which would make the half wait for
    /// whatever `s` runs by then).
    ///
    /// # Safety
    /// Only the thread owning the ring's lane may call this, after the synchronisation.
    pub unsafe fn synced(&self, s: Stream) {
        // SAFETY: only the owning thread gets here (caller); no reference into the
        // cell outlives this call.
        if let Some(r) = unsafe { &mut *self.0.get() } {
            if r.stream == Some(s) {
                r.stream = None;
            }
        }
    }
}

/// The device's synchronous waits by the calling thread's ring: the wait its settings
/// choose, and their measurement (`syncwait=auto`).
impl<B, T: LaneData> Parts<B, T> {
    /// [`LaunchResources::on_waited`] with the wait the device's settings choose for a
    /// kernel launch (`kernel`) or a copy; then, once per device under
    /// `GOMP_NVPTX_TUNE=syncwait=auto`, the ways of waiting measured on `s`
    /// ([`Parts::measure_waits`]).
    ///
    /// # Safety
    /// `ring` must be the calling thread's lane's and `s` that lane's stream.
    #[inline]
    pub unsafe fn on_waited<R>(
        &self,
        s: Stream,
        ring: &Ring,
        kernel: bool,
        f: impl FnOnce(Stream) -> Result<R>,
    ) -> Result<R> {
        let flag = self.settings.waits().by_flag(kernel);
        // SAFETY: forwarded caller guarantees.
        let r = unsafe { self.launch.on_waited(s, ring, flag, f) };
        if r.is_ok() {
            // SAFETY: forwarded caller guarantees; `s` has just run its work.
            unsafe { self.measure_waits(s, ring) };
        }
        r
    }

    /// [`LaunchResources::on_waited_by`] (`s` waited for by `wait`, a thread serving
    /// reverse offload meanwhile), then, as [`Parts::on_waited`], the ways of waiting
    /// measured once per device under `syncwait=auto`.
    ///
    /// # Safety
    /// `ring` must be the calling thread's lane's and `s` that lane's stream.
    pub unsafe fn on_waited_by<R>(
        &self,
        s: Stream,
        ring: &Ring,
        f: impl FnOnce(Stream) -> Result<R>,
        wait: impl FnOnce(Stream) -> Result<()>,
    ) -> Result<R> {
        // SAFETY: forwarded caller guarantees.
        let r = unsafe { self.launch.on_waited_by(s, ring, f, wait) };
        if r.is_ok() {
            // SAFETY: forwarded caller guarantees; `s` has just run its work.
            unsafe { self.measure_waits(s, ring) };
        }
        r
    }

    /// Measures the ways of waiting on `s` (`device::wait_choice`) if the device still
    /// wants them measured and the calling thread's `ring` has its flag word; keeps the
    /// faster of each and says which (`GOMP_DEBUG`, `GOMP_NVPTX_INFO`, the profile).
    /// One relaxed load when nothing is to be done.
    ///
    /// # Safety
    /// `ring` must be the calling thread's lane's and `s` that lane's stream, with
    /// nothing queued on it that has not run.
    #[inline]
    unsafe fn measure_waits(&self, s: Stream, ring: &Ring) {
        // SAFETY: the calling thread's ring (caller).
        if self.settings.waits().wanted() && unsafe { ring.has_flag() } {
            // SAFETY: forwarded caller guarantees.
            unsafe { self.measure_waits_now(s, ring) }
        }
    }

    /// [`Parts::measure_waits`]' measurement, by the one thread that claims it.
    ///
    /// # Safety
    /// As [`Parts::measure_waits`].
    #[cold]
    #[inline(never)]
    unsafe fn measure_waits_now(&self, s: Stream, ring: &Ring) {
        let waits = self.settings.waits();
        if !waits.claim() {
            return;
        }
        // SAFETY: forwarded caller guarantees.
        match unsafe { measure(s, ring) } {
            Ok(Some(m)) => {
                waits.keep(&m);
                let text = m.describe();
                let ord = self.context.ord();
                log::debug!("device {ord}: {text}");
                info::device(&self.settings.config().observe, ord, &text);
                if let Some(o) = self.observe() {
                    o.note(&text);
                }
            }
            Ok(None) => waits.unclaim(),
            Err(e) => {
                log::debug!("device {}: waits not measured ({e}): the word for launches, cuStreamSynchronize for copies", self.context.ord());
                waits.give_up();
            }
        }
    }
}

/// The waits of the launch resources by the calling thread's ring (the thread's
/// synchronous copies through the ring and its synchronous kernel launches).
impl<T: LaneData> LaunchResources<T> {
    /// [`LaunchResources::on`] with `s` waited for by the calling thread's `ring`
    /// ([`Ring::wait`]: by its flag when `flag`, else synchronized; the device's
    /// settings choose, `Parts::on_waited`).
    ///
    /// # Safety
    /// `ring` must be the calling thread's lane's; `s` a stream of the device.
    #[inline]
    pub unsafe fn on_waited<R>(
        &self,
        s: Stream,
        ring: &Ring,
        flag: bool,
        f: impl FnOnce(Stream) -> Result<R>,
    ) -> Result<R> {
        // SAFETY: forwarded caller guarantee; the context is current (a stream of the
        // device is in use on this thread).
        self.on_with(s, f, |s| unsafe { ring.wait(s, flag) })
    }

    /// [`LaunchResources::on`] with `s` waited for by `wait` (which returns once the
    /// stream's work has run, or with its error), then noted as synchronised on the
    /// calling thread's `ring` ([`Ring::synced`]).
    ///
    /// # Safety
    /// `ring` must be the calling thread's lane's; `s` a stream of the device.
    pub unsafe fn on_waited_by<R>(
        &self,
        s: Stream,
        ring: &Ring,
        f: impl FnOnce(Stream) -> Result<R>,
        wait: impl FnOnce(Stream) -> Result<()>,
    ) -> Result<R> {
        self.on_with(s, f, |s| {
            wait(s)?;
            // SAFETY: the calling thread's ring (caller), after `s` has run its work.
            unsafe { ring.synced(s) };
            Ok(())
        })
    }
}

/// A flag write queued by [`Ring::arm`]: the stream writes `seq` into `word` once the
/// work queued before it has run. Borrowed from the ring; read by the owning thread.
pub struct Armed<'a> {
    word: &'a AtomicU32,
    seq: u32,
}

impl Armed<'_> {
    /// Whether the stream has written the flag (a load, no driver call). A stream that
    /// failed never does: ask it too now and then ([`Stream::query`]).
    #[inline]
    pub fn reached(&self) -> bool {
        // Acquire: what the work before the flag wrote is read after it.
        self.word.load(Ordering::Acquire) == self.seq
    }
}

/// The flag's word in the ring's memory `mem`: [`ALIGN`] bytes after the two halves.
fn word(mem: &HostAlloc) -> *mut std::ffi::c_void {
    mem.as_ptr().cast::<u8>().wrapping_add(BYTES).cast()
}

/// Polls `word` until the stream writes `seq` there, asking `s`'s state every
/// [`POLLS_PER_QUERY`] polls (done: returns; an error: returns it) and synchronizing
/// after [`SPIN_LIMIT`] (counted from the first query that finds the stream busy: a
/// wait the flag ends within its first polls reads no clock). Once the word is seen
/// the stream is asked once more, so that an error of the copy is never taken for its
/// end.
fn poll(word: &AtomicU32, seq: u32, s: Stream) -> Result<()> {
    let mut start: Option<Instant> = None;
    let mut polls = 0u32;
    // Acquire: the copy's bytes, written before the fenced flag, are read after it.
    while word.load(Ordering::Acquire) != seq {
        polls += 1;
        if polls % POLLS_PER_QUERY == 0 {
            if !not_ready(s)? {
                return Ok(());
            }
            if start.get_or_insert_with(Instant::now).elapsed() > SPIN_LIMIT {
                return s.synchronize();
            }
        }
        std::hint::spin_loop();
    }
    not_ready(s).map(|_| ())
}

/// Whether `s` still has work to run (`cuStreamQuery`); its error, taken by
/// `cuStreamSynchronize` (which reports it as the driver's other waits do), if any.
pub fn not_ready(s: Stream) -> Result<bool> {
    match s.query() {
        Ok(()) => Ok(false),
        Err(e) if e.has_code(CUDA_ERROR_NOT_READY) => Ok(true),
        Err(_) => {
            s.synchronize()?;
            Ok(false)
        }
    }
}

/// The median of `v` (sorted in place; 0 when empty). Pure but for the order.
fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Measures both ways of waiting on `s` ([`ROUNDS`] rounds of a one-byte memset and of
/// an 8-byte copy to page-locked memory, each waited for by the word and by synchronizing, the
/// order alternating by round); `None` when the ring has no word (the driver has no
/// stream memory operations: every wait synchronizes).
///
/// # Safety
/// `ring` must be the calling thread's lane's and `s` that lane's stream, with nothing
/// queued that has not run; the device's context current.
pub unsafe fn measure(s: Stream, ring: &Ring) -> Result<Option<MeasuredWaits>> {
    // SAFETY: the calling thread's ring (caller).
    if !unsafe { ring.has_flag() } {
        return Ok(None);
    }
    let scratch = DeviceAlloc::new(64)?;
    // The copies' page-locked destination: a block of its own, so that the ring's
    // space (`Ring::slot`, inlined into the copy path's hot loop) has one caller.
    let dst = HostAlloc::alloc(64, 0)?;
    // [kind][way]: kind 0 a launch's (memset), 1 a copy's; way 0 the word, 1 synchronize.
    let mut t = [[[0u64; ROUNDS]; 2]; 2];
    for r in 0..ROUNDS {
        for (kind, times) in t.iter_mut().enumerate() {
            for i in 0..2 {
                let way = (i + r) % 2;
                let t0 = Instant::now();
                if kind == 0 {
                    s.memset_d8(scratch.ptr(), r as u8, 1)?;
                } else {
                    // SAFETY: 64 bytes of page-locked memory written by this copy alone
                    // (waited for just below), 64 of device memory.
                    unsafe { s.copy_dtoh(dst.as_ptr(), scratch.ptr(), 8) }?;
                }
                // SAFETY: the calling thread's ring and its lane's stream (caller).
                unsafe { ring.wait(s, way == 0) }?;
                times[way][r] = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
            }
        }
    }
    let [[mut lf, mut ls], [mut cf, mut cs]] = t;
    Ok(Some(MeasuredWaits {
        launch: (median(&mut lf), median(&mut ls)),
        copy: (median(&mut cf), median(&mut cs)),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_first_small_copies_go_without_the_ring() {
        let r = Ring::default();
        // SAFETY: this test's thread owns the ring.
        unsafe {
            for i in 0..WITHOUT {
                assert!(!r.wanted(), "copy {i}: no ring made");
            }
            assert!(r.wanted(), "the next copy: the ring");
            assert!(r.wanted());
        }
        // SAFETY: no other reference into the cell.
        assert!(unsafe { &*r.0.get() }.is_none(), "wanted creates nothing");
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), 0);
        assert_eq!(median(&mut [3, 1, 2]), 2);
        assert_eq!(median(&mut [4, 1, 3, 2]), 3);
    }
}
