//! Copy path: copies of a few bytes through the calling thread's page-locked ring
//! (`host::ring`). To the device: a synchronous copy that may be deferred, below the
//! ring size; the bytes are copied into the ring and the copy queued, so the program's
//! buffer, pageable or page-locked, is free when this returns (ends deferred). To the
//! host: below the ring size, waited for, then copied out of the ring. Sized by `ring`.

use super::host_copy::HostCopy;
use super::path::{CopyPath, Ended, Failed, Knob, Taken, Takes};
pub(super) use crate::config::tune::RING as KNOB;
use crate::config::Config;
use crate::cuda::safe::Stream;
use crate::device::parts::Parts;
use crate::device::serving;
use crate::host::ranges as host_ranges;
use crate::host::ring::Ring as ThreadRing;
use crate::observe::profile::CopyDir;
use gomp_plugin::error::Result;

/// The ring path (zero-sized, stateless, `Sync`; the ring is the calling thread's
/// lane's).
pub struct Ring;

impl CopyPath for Ring {
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

    unsafe fn try_copy(&self, d: &Parts, c: &HostCopy) -> Option<Taken> {
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
        let r = unsafe { dev2host(d, &lane.data.ring, s, c) }?;
        Some(r.map(|()| Ended::Done).map_err(Failed::copy))
    }
}

/// Copy `c` to the device, deferred, through the calling thread's ring. `None` when
/// the ring cannot be had (the caller takes another path).
///
/// # Safety
/// `c.host` readable for `c.n` bytes; `c.dev` checked by `check_host_copy`.
unsafe fn host2dev(d: &Parts, c: &HostCopy) -> Option<Result<()>> {
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
    let slot = unsafe { slot(&lane.data.ring, n, s) }?;
    c.taken(Ring.label());
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
unsafe fn slot(ring: &ThreadRing, n: usize, s: Stream) -> Option<*mut u8> {
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
unsafe fn dev2host(d: &Parts, ring: &ThreadRing, s: Stream, c: &HostCopy) -> Option<Result<()>> {
    let (dst, src, n) = (c.host, c.dev, c.n);
    // SAFETY: the calling thread's ring (caller); the space is used only below.
    let slot = unsafe { slot(ring, n, s) }?;
    c.taken(Ring.label());
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
