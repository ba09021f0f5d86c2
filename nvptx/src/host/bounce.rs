//! Page-locked bounce buffers. For a pageable copy of 16 KiB to 1 MiB the driver's own
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

use crate::cuda::safe::{HostAlloc, OwnedEvent, Stream};
use crate::cuda::sys::CUDA_ERROR_NOT_READY;
use gomp_plugin::error::Result;
use gomp_plugin::sync::Lock;
use std::collections::VecDeque;
use std::sync::Mutex;

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
