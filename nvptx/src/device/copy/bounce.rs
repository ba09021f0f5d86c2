//! Copy path: pageable copies within the bounce size (`bounce`) through a page-locked
//! bounce buffer: the route ([`Bounced`]) and the buffers ([`Bounce`], a device's, also
//! `deferred.rs`' and a queue's copies'). A synchronous or device-to-host copy takes a
//! buffer (waiting for one) and is waited for; a queue's host-to-device copy only one
//! free without waiting for earlier work (else it goes on to `direct`), queued.
//!
//! The page-locked bounce buffers. For a pageable copy of 16 KiB to 1 MiB the driver's own
//! path (its internal staging) costs more than copying the bytes on the CPU into
//! page-locked memory and letting the copy engine read that; below [`MIN_BYTES`] the
//! bounce does not pay off, so those copies stay with the driver, and from 4 MiB the
//! staging engine takes over (bench/results/latest.md, the `floor_h2d4k_*` and
//! `*_pageable_*` rows). Copies of [`MIN_BYTES`] up to `GOMP_NVPTX_TUNE`'s `bounce`
//! bytes (default [`DEFAULT_LIMIT`]) between pageable memory and the device go this
//! way, synchronous ones and those of OpenACC async queues alike. Small host-to-device
//! copies from page-locked memory use them too, so that a copy can return before its
//! DMA has ended without leaving the DMA reading the program's buffer (see
//! `device::copy`).
//!
//! A buffer may still be read by a host-to-device copy when it is given back
//! ([`Bounce::give`]): its event, recorded after that copy, says when it may be
//! written again, and [`Bounce::take`] hands out only buffers whose copy completed.
//!
//! Ownership and threading: one `Bounce` per device, shared by all threads; a copy takes
//! a buffer for its duration (a lock around a short list), so concurrent copies use
//! different buffers. A [`Buffer`] frees its memory only after its last copy completed
//! (its `Drop` waits for the event). Buffers are freed at device close
//! ([`Bounce::destroy`], context current).

use super::host_copy::{HostCopy, Via};
use super::path::{CopyPath, Ended, Failed, Knob, Route, Taken};
pub(super) use crate::config::tune::BOUNCE as KNOB;
use crate::cuda::pools::thread_streams::LaneData;
use crate::cuda::safe::{HostAlloc, OwnedEvent, Stream};
use crate::cuda::sys::{CUdeviceptr, CUDA_ERROR_NOT_READY};
use crate::device::parts::Parts;
use crate::observe::profile::CopyDir;
use gomp_plugin::error::Result;
use gomp_plugin::sync::Lock;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::Mutex;

/// The bounce path (zero-sized, stateless, `Sync`; the buffers, [`Bounce`], are the
/// copy buffers' `bounce`).
pub struct Bounced;

impl Route for Bounced {
    fn label(&self) -> &'static str {
        "bounce"
    }

    fn knob(&self) -> Option<Knob> {
        Some(Knob::Own(&KNOB))
    }
}

impl<B: AsRef<Bounce>, T: LaneData> CopyPath<B, T> for Bounced {
    unsafe fn try_copy(&self, d: &Parts<B, T>, c: &HostCopy) -> Option<Taken> {
        let bounce: &Bounce = d.buffers.as_ref();
        if !bounce.takes(c.n) || !c.pageable(d) {
            return None;
        }
        c.taken(self.label());
        let (dev, n) = (c.dev, c.n);
        match (c.dir, c.via) {
            (CopyDir::H2D, Via::Sync) => {
                let b = match bounce.take() {
                    Ok(b) => b,
                    Err(e) => return Some(Err(e.into())),
                };
                // SAFETY: `c.host` readable for `n` bytes (caller); the stream is waited
                // for.
                let r = d.launch.on_copy_stream(&d.settings, |s| unsafe {
                    host2dev(d, s, b, dev, c.host, n)
                });
                Some(r.map(|()| Ended::Done).map_err(Failed::copy))
            }
            (CopyDir::H2D, Via::Queue(s)) => {
                // A bounce buffer only if one is free without waiting for earlier work.
                let b = match bounce.try_take()? {
                    Ok(b) => b,
                    Err(e) => return Some(Err(e.into())),
                };
                // SAFETY: `c.host` readable for `n` bytes (caller); `dev` checked.
                let r = unsafe { host2dev(d, s, b, dev, c.host, n) };
                Some(r.map(|()| Ended::Queued).map_err(Failed::from))
            }
            _ => {
                let s = match c.stream(d) {
                    Ok(s) => s,
                    Err(e) => return Some(Err(e.into())),
                };
                let b = match bounce.take() {
                    Ok(b) => b,
                    Err(e) => return Some(Err(e.into())),
                };
                let r = d.launch.on(s, |s| {
                    // SAFETY: the buffer is page-locked, holds at least `n` bytes, no copy
                    // reads it (`take`), and it is alive until the copy, waited for here, has
                    // completed.
                    unsafe { s.copy_dtoh(b.ptr().cast(), dev, n) }
                });
                if r.is_ok() {
                    // SAFETY: `c.host` is writable for `n` bytes (caller); distinct
                    // buffers.
                    unsafe { std::ptr::copy_nonoverlapping(b.ptr(), c.host.cast::<u8>(), n) };
                }
                bounce.give(b);
                Some(r.map(|()| Ended::Done).map_err(Failed::copy))
            }
        }
    }
}

/// Queues on `s` a copy of `n` bytes from `src` through bounce buffer `b` (taken by
/// the caller, given back here): the bytes are copied into the buffer first, so
/// `src` is free when this returns; the buffer is handed out again only after the
/// event recorded after the copy (`Bounce`).
///
/// # Safety
/// `src` readable for `n` bytes (`n` within the bounce size); `dst` checked by
/// `check_host_copy`; `s` a stream of the device.
pub(super) unsafe fn host2dev<B: AsRef<Bounce>, T>(
    d: &Parts<B, T>,
    s: Stream,
    b: Buffer,
    dst: CUdeviceptr,
    src: *const c_void,
    n: usize,
) -> Result<()> {
    // SAFETY: `src` is readable for `n` bytes (caller), the buffer holds at least
    // `n` (caller: `fits`) and no copy reads it (`take`); they do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>(), b.ptr(), n) };
    // SAFETY: the buffer stays allocated and unwritten until the event recorded
    // after the copy has completed (`Bounce`).
    let r = unsafe { s.copy_htod(dst, b.ptr().cast(), n) }.and_then(|()| b.read_by(s));
    AsRef::<Bounce>::as_ref(&d.buffers).give(b);
    r
}

/// Smallest pageable copy that goes through a bounce buffer, and the largest by default
/// (`GOMP_NVPTX_TUNE`'s `bounce`): settings, kept in `crate::config::tune`.
pub use crate::config::tune::{BOUNCE_MIN as MIN_BYTES, DEFAULT_BOUNCE as DEFAULT_LIMIT};
/// Idle buffers kept for reuse (8 MiB of page-locked memory at most with the default
/// limit); more concurrent copies allocate and free their own.
const KEEP: usize = 8;

/// One page-locked buffer and the event after its latest host-to-device copy.
pub struct Buffer {
    /// Recorded after the latest copy that reads the buffer (never recorded: free).
    done: OwnedEvent,
    mem: HostAlloc,
}

impl Buffer {
    /// The buffer's first byte.
    #[inline]
    pub fn ptr(&self) -> *mut u8 {
        self.mem.as_ptr().cast()
    }

    /// Notes that a copy reading the buffer was queued on `s` (the buffer's event and
    /// `s` belong to the device's context).
    #[inline]
    pub fn read_by(&self, s: Stream) -> Result<()> {
        self.done.handle().record(s)
    }

    /// Whether the buffer's last copy has completed (a failed copy counts as done: the
    /// stream that ran it reports the failure).
    fn free(&self) -> bool {
        !matches!(self.done.handle().query(), Err(e) if e.has_code(CUDA_ERROR_NOT_READY))
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // The memory is freed after this (field order): never while a copy reads it.
        if let Err(e) = self.done.handle().synchronize() {
            log::debug!("bounce buffer: {e}");
        }
    }
}

/// What [`Bounce::find`] found.
enum Found {
    /// An idle buffer no copy reads.
    Free(Buffer),
    /// None free, fewer than [`KEEP`] kept: a new one may be made.
    Room,
    /// [`KEEP`] kept, all still read by their copies.
    Full,
}

/// The device's bounce buffers, each `limit` bytes.
pub struct Bounce {
    limit: usize,
    idle: Mutex<VecDeque<Buffer>>,
}

impl Bounce {
    /// Buffers for copies of at most `limit` bytes (0: none go this way).
    pub fn new(limit: usize) -> Bounce {
        Bounce {
            limit,
            idle: Mutex::new(VecDeque::new()),
        }
    }

    /// Whether a pageable copy of `bytes` bytes goes through a bounce buffer.
    #[inline]
    pub fn takes(&self, bytes: usize) -> bool {
        (MIN_BYTES..=self.limit).contains(&bytes)
    }

    /// Whether a copy of `bytes` bytes fits in a buffer.
    #[inline]
    pub fn fits(&self, bytes: usize) -> bool {
        bytes <= self.limit
    }

    /// A buffer no copy reads any more: the oldest idle one whose copy completed, else a
    /// new one, else (all [`KEEP`] buffers busy) the oldest after waiting for its copy.
    /// Context current.
    pub fn take(&self) -> Result<Buffer> {
        match self.find() {
            Found::Free(b) => Ok(b),
            Found::Room => self.create(),
            Found::Full => match self.idle.locked().pop_front() {
                Some(b) => {
                    // The buffer's event belongs to the device's context.
                    b.done.handle().synchronize()?;
                    Ok(b)
                }
                None => self.create(),
            },
        }
    }

    /// As [`Bounce::take`], but `None` rather than a wait when all [`KEEP`] buffers are
    /// busy (an OpenACC queue's copy then goes to the driver: it must not wait for the
    /// queue's earlier work).
    pub fn try_take(&self) -> Option<Result<Buffer>> {
        match self.find() {
            Found::Free(b) => Some(Ok(b)),
            Found::Room => Some(self.create()),
            Found::Full => None,
        }
    }

    /// The oldest idle buffer whose copy completed, taken out of the list.
    fn find(&self) -> Found {
        let mut idle = self.idle.locked();
        if let Some(b) = idle
            .iter()
            .position(Buffer::free)
            .and_then(|i| idle.remove(i))
        {
            return Found::Free(b);
        }
        if idle.len() < KEEP {
            Found::Room
        } else {
            Found::Full
        }
    }

    /// A new buffer (context current).
    fn create(&self) -> Result<Buffer> {
        Ok(Buffer {
            done: crate::cuda::safe::OwnedEvent::create()?,
            mem: HostAlloc::alloc(self.limit.max(1), 0)?,
        })
    }

    /// Gives a buffer back (its copy may still be running); beyond [`KEEP`] idle
    /// buffers it is freed once its copy completed.
    pub fn give(&self, b: Buffer) {
        let mut idle = self.idle.locked();
        if idle.len() < KEEP {
            idle.push_back(b);
        } else {
            drop(idle);
            drop(b);
        }
    }

    /// Frees the idle buffers after their copies (device close, context current).
    pub fn destroy(&self) {
        drop(std::mem::take(&mut *self.idle.locked()));
    }
}
