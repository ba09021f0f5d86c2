//! The ordering rule of deferred host-to-device copies, written once.
//!
//! A synchronous host-to-device copy of at most `GOMP_NVPTX_TUNE`'s `defer` bytes
//! returns as soon as its source bytes are safe to reuse, before its DMA has ended: the
//! driver has copied pageable bytes into its own staging memory, or the plugin has
//! copied them into a page-locked bounce buffer (see `Copies::host2dev`). Such a copy
//! is *deferred*: it is queued on a stream (the calling thread's, or CUDA's legacy
//! default stream), and that stream is recorded here as *dirty* with an event recorded
//! right after the copy. The rule that keeps every later observer of device memory
//! after the copy:
//!
//! 1. Work queued later on the same stream is after it (stream order).
//! 2. Work queued on any other stream first makes that stream wait for every dirty
//!    stream's event ([`CopyOrder::order`]; `cuStreamWaitEvent`, no host wait). A
//!    stream ordered after the legacy default stream by CUDA itself (a blocking
//!    stream) skips the legacy stream's entry.
//! 3. Operations that have no stream and can observe device memory (memory given back
//!    to the driver, module unloads, large staged copies, device close) first wait on
//!    the host for every dirty stream ([`CopyOrder::settle`]).
//! 4. An entry is cleared once its copy is known complete: after a successful
//!    synchronisation of a stream that waited for it or owns it
//!    ([`CopyOrder::synced`]), or when a later `order` finds its event complete.
//!
//! Events record only up to the copy (never work queued after it on the same stream),
//! so a waiting stream never waits for another thread's kernel.
//!
//! Errors: a deferred copy that fails on the device is reported by the next
//! synchronisation of its stream (the thread's next `run`, device-to-host copy or other
//! synchronous operation), by an `order` or `settle` that queries its event, and at the
//! latest by the device's close.
//!
//! Threading: shared by all threads of the device; a lock-free check when nothing is
//! dirty, else a short lock (driver calls that only queue work are made under it).
//!
//! A cleared entry keeps its stream's event for that stream's next deferred copy (no
//! round trip through the device's event pool per copy); [`CopyOrder::settle`] gives
//! the events of cleared entries back to the pool.

use crate::cuda::pools::events::EventPool;
use crate::cuda::safe::{OwnedEvent, Stream};
use crate::cuda::sys::CUDA_ERROR_NOT_READY;
use gomp_plugin::error::Result;
use gomp_plugin::sync::Lock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// A stream with deferred copies not yet known complete.
struct Dirty {
    stream: Stream,
    /// Recorded on `stream` right after its latest deferred copy.
    event: OwnedEvent,
    /// Number of that copy (bumped at every deferred copy on any stream).
    seq: u64,
}

#[derive(Default)]
struct Entries {
    list: Vec<Dirty>,
    seq: u64,
    /// Events of cleared entries, for the next new entry (at most [`SPARE`]).
    spare: Vec<OwnedEvent>,
}

/// Most events kept in [`Entries::spare`]; more go back to the device's pool.
const SPARE: usize = 8;

impl Entries {
    /// Drops entry `i` (its copy is complete or reported), keeping its event.
    fn clear(&mut self, i: usize, events: &EventPool) {
        let d = self.list.swap_remove(i);
        if self.spare.len() < SPARE {
            self.spare.push(d.event);
        } else {
            events.release(d.event);
        }
    }
}

/// Most entries a [`Waited`] remembers; the rest are cleared later by `order`'s queries.
const WAITED: usize = 4;

/// The dirty entries one stream was ordered after (or owns), to clear once that stream
/// has been synchronised. Plain data, no allocation.
#[derive(Clone, Copy, Default)]
pub struct Waited {
    items: [(usize, u64); WAITED],
    n: usize,
}

impl Waited {
    fn push(&mut self, s: Stream, seq: u64) {
        if self.n < WAITED {
            self.items[self.n] = (s.raw() as usize, seq);
            self.n += 1;
        }
    }

    fn has(&self, s: Stream, seq: u64) -> bool {
        self.items[..self.n]
            .iter()
            .any(|&(x, q)| x == s.raw() as usize && q == seq)
    }
}

/// The device's record of dirty streams. Owned by the device core; `Sync`.
#[derive(Default)]
pub struct CopyOrder {
    /// Entries in `entries` (read without the lock: 0 = nothing to order after).
    dirty: AtomicUsize,
    /// Events in `Entries::spare` (read without the lock by `settle`).
    kept: AtomicUsize,
    entries: Mutex<Entries>,
}

impl CopyOrder {
    fn publish(&self, e: &Entries) {
        self.dirty.store(e.list.len(), Ordering::Release);
        self.kept.store(e.spare.len(), Ordering::Relaxed);
    }

    /// True when no deferred copy may be in flight.
    #[inline]
    pub fn is_clear(&self) -> bool {
        self.dirty.load(Ordering::Acquire) == 0
    }

    /// Records that a deferred copy was just queued on `s`: an event is recorded after it
    /// and `s` is dirty until that event is known complete. Context current (caller).
    pub fn deferred(&self, s: Stream, events: &EventPool) -> Result<()> {
        let mut e = self.entries.locked();
        e.seq += 1;
        let seq = e.seq;
        let i = match e.list.iter().position(|d| d.stream == s) {
            Some(i) => i,
            None => {
                let event = match e.spare.pop() {
                    Some(ev) => ev,
                    None => events.acquire()?,
                };
                e.list.push(Dirty {
                    stream: s,
                    event,
                    seq,
                });
                e.list.len() - 1
            }
        };
        let d = &mut e.list[i];
        d.seq = seq;
        // The event and stream belong to the device's context.
        let r = d.event.handle().record(s);
        if r.is_err() {
            // Without its event the entry cannot be waited for: the caller waits for the
            // copy instead (its error is returned), so the entry goes.
            let d = e.list.swap_remove(i);
            events.release(d.event);
        }
        self.publish(&e);
        r
    }

    /// Makes future work on `target` wait for every other dirty stream (skipping the
    /// legacy default stream when `after_legacy`: CUDA orders `target` after it). Entries
    /// found complete are cleared; a failed deferred copy is returned as the error.
    /// Returns what `target` now waits for, and its own entry, for [`CopyOrder::synced`].
    #[inline]
    pub fn order(&self, target: Stream, after_legacy: bool, events: &EventPool) -> Result<Waited> {
        if self.is_clear() {
            return Ok(Waited::default());
        }
        self.order_slow(target, after_legacy, events)
    }

    fn order_slow(&self, target: Stream, after_legacy: bool, events: &EventPool) -> Result<Waited> {
        let mut w = Waited::default();
        let mut e = self.entries.locked();
        let mut i = 0;
        let mut err = None;
        while i < e.list.len() {
            let d = &e.list[i];
            if d.stream == target || (after_legacy && d.stream == Stream::LEGACY) {
                w.push(d.stream, d.seq);
                i += 1;
                continue;
            }
            // Event and streams of the device's context.
            match d.event.handle().query() {
                Ok(()) => e.clear(i, events),
                Err(x) if x.has_code(CUDA_ERROR_NOT_READY) => {
                    if let Err(x) = d.event.handle().wait_on(target) {
                        err = Some(x);
                        break;
                    }
                    w.push(d.stream, d.seq);
                    i += 1;
                }
                Err(x) => {
                    // Reported here, once: the entry goes.
                    e.clear(i, events);
                    err = Some(x);
                    break;
                }
            }
        }
        self.publish(&e);
        match err {
            Some(x) => Err(x),
            None => Ok(w),
        }
    }

    /// Clears the entries in `w` that have not been renewed since: the stream they were
    /// taken for has been synchronised, so their copies have completed (or failed, and
    /// the synchronisation reported it).
    #[inline]
    pub fn synced(&self, w: &Waited, events: &EventPool) {
        if w.n == 0 {
            return;
        }
        let mut e = self.entries.locked();
        let mut i = 0;
        while i < e.list.len() {
            if w.has(e.list[i].stream, e.list[i].seq) {
                e.clear(i, events);
            } else {
                i += 1;
            }
        }
        self.publish(&e);
    }

    /// Waits on the host for every deferred copy queued so far, then clears their
    /// entries; the first failure is returned. Entries stay visible to other threads
    /// until their copies are known complete. The kept events of cleared entries go
    /// back to `events` (so that the device's close destroys them with the pool's).
    pub fn settle(&self, events: &EventPool) -> Result<()> {
        if self.is_clear() && self.kept.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        let mut w = Vec::new();
        {
            let e = self.entries.locked();
            for d in &e.list {
                w.push((d.stream, d.seq, d.event.handle()));
            }
        }
        let mut first = None;
        for &(_, _, ev) in &w {
            // An event of the device's context, owned by its entry or given back to the
            // device's pool (never destroyed while the device is open).
            if let Err(x) = ev.synchronize() {
                first.get_or_insert(x);
            }
        }
        let mut e = self.entries.locked();
        let mut i = 0;
        while i < e.list.len() {
            let d = &e.list[i];
            if w.iter().any(|&(s, q, _)| s == d.stream && q == d.seq) {
                let d = e.list.swap_remove(i);
                events.release(d.event);
            } else {
                i += 1;
            }
        }
        for ev in e.spare.drain(..) {
            events.release(ev);
        }
        self.publish(&e);
        first.map_or(Ok(()), Err)
    }
}
