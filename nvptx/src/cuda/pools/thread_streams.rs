//! The calling thread's stream on one open device. Each host thread that works on the
//! device gets a stream of its own, created on its first use there, and keeps it: the
//! synchronous copies and launches of one thread go on one stream, so one target
//! region's copies and kernel are in stream order and threads never share a stream (no
//! lock, no serialisation between threads).
//!
//! Ownership: the device's [`ThreadStreams`] owns every stream it made and destroys them
//! at device close ([`ThreadStreams::destroy`]). A thread keeps only a borrowed handle
//! in a thread-local cache keyed by the open's unique id (never reused, so a closed and
//! reopened device is never matched). When the thread ends, its streams go back to
//! their devices' idle lists for the next new thread, unless the device has been closed
//! meanwhile.
//!
//! Threading: `get` is lock-free after a thread's first call (a thread-local lookup and
//! one atomic load); creating or reusing a stream takes the set's lock.

use crate::cuda::safe::{OwnedStream, Stream};
use gomp_plugin::error::{Error, Result};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Ids of opens, process-wide; 0 is never handed out.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The streams of one open device.
#[derive(Default)]
struct Owned {
    /// Every stream made for a thread; destroyed when the set is destroyed.
    all: Vec<OwnedStream>,
    /// Streams whose thread has ended, for the next thread.
    idle: Vec<Stream>,
    /// Set by `destroy`: nothing is handed out or given back afterwards.
    closed: bool,
}

/// What the set and the threads' caches share (the caches hold it weakly).
#[derive(Default)]
struct Shared {
    owned: Mutex<Owned>,
    /// A copy of `Owned::closed` for the lock-free lookup.
    closed: AtomicBool,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Owned> {
        self.owned.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One cached stream of the calling thread.
struct Cached {
    id: u64,
    stream: Stream,
    home: Weak<Shared>,
}

/// The calling thread's streams, one per open device it used. Dropped at thread exit:
/// each stream goes back to its device's idle list.
struct Cache(Vec<Cached>);

impl Drop for Cache {
    fn drop(&mut self) {
        for c in self.0.drain(..) {
            if let Some(home) = c.home.upgrade() {
                let mut o = home.lock();
                if !o.closed {
                    o.idle.push(c.stream);
                }
            }
        }
    }
}

thread_local! {
    static CACHE: RefCell<Cache> = const { RefCell::new(Cache(Vec::new())) };
}

/// The per-thread streams of one open device. Owned by the device core; `Sync`.
pub struct ThreadStreams {
    id: u64,
    flags: u32,
    shared: Arc<Shared>,
}

impl ThreadStreams {
    /// A set whose streams are created with `flags` (`CU_STREAM_*`).
    pub fn new(flags: u32) -> ThreadStreams {
        ThreadStreams {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            flags,
            shared: Arc::default(),
        }
    }

    /// Whether the streams are blocking streams (ordered after CUDA's legacy default
    /// stream, which is ordered after them).
    #[inline]
    pub fn blocking(&self) -> bool {
        self.flags & crate::cuda::sys::CU_STREAM_NON_BLOCKING as u32 == 0
    }

    /// The calling thread's stream (the device's context is current).
    #[inline]
    pub fn get(&self) -> Result<Stream> {
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(Error::invalid("the device is closed"));
        }
        let hit = CACHE.try_with(|c| {
            c.borrow()
                .0
                .iter()
                .find(|e| e.id == self.id)
                .map(|e| e.stream)
        });
        match hit {
            Ok(Some(s)) => Ok(s),
            _ => self.assign(),
        }
    }

    /// Whether `s` is the calling thread's stream of this set (never creates one).
    #[inline]
    pub fn is_mine(&self, s: Stream) -> bool {
        CACHE
            .try_with(|c| {
                c.borrow()
                    .0
                    .iter()
                    .any(|e| e.id == self.id && e.stream == s)
            })
            .unwrap_or(false)
    }

    /// Gives the calling thread a stream: an idle one or a new one.
    fn assign(&self) -> Result<Stream> {
        let reused = {
            let mut o = self.shared.lock();
            if o.closed {
                return Err(Error::invalid("the device is closed"));
            }
            o.idle.pop()
        };
        let s = match reused {
            Some(s) => s,
            None => {
                // The device's context is current (caller).
                let owned = OwnedStream::create(self.flags)?;
                let s = owned.handle();
                let mut o = self.shared.lock();
                if o.closed {
                    drop(o);
                    drop(owned);
                    return Err(Error::invalid("the device is closed"));
                }
                o.all.push(owned);
                s
            }
        };
        // A thread that is exiting has no cache any more: the stream then stays with
        // the set (destroyed at close) without going back to the idle list.
        let _ = CACHE.try_with(|c| {
            let mut c = c.borrow_mut();
            c.0.retain(|e| {
                e.home
                    .upgrade()
                    .is_some_and(|h| !h.closed.load(Ordering::Acquire))
            });
            c.0.push(Cached {
                id: self.id,
                stream: s,
                home: Arc::downgrade(&self.shared),
            });
        });
        Ok(s)
    }

    /// Destroys every stream of the set (device close, context current; the caller has
    /// waited for the device's work). Threads asking afterwards get an error.
    pub fn destroy(&self) {
        let all = {
            let mut o = self.shared.lock();
            o.closed = true;
            self.shared.closed.store(true, Ordering::Release);
            o.idle.clear();
            std::mem::take(&mut o.all)
        };
        drop(all);
    }
}
