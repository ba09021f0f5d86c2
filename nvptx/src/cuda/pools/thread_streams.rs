//! The calling thread's stream on one open device, with per-thread data of the user's
//! choice (a [`Lane`]). Each host thread that works on the device gets a lane of its
//! own, created on its first use there, and keeps it: the synchronous copies and
//! launches of one thread go on one stream, so one target region's copies and kernel
//! are in stream order and threads never share a stream (no lock, no serialisation
//! between threads).
//!
//! Ownership: the device's [`ThreadStreams`] owns every lane it made (stream and data)
//! and drops them at device close ([`ThreadStreams::destroy`]). A thread keeps only a
//! pointer in a thread-local cache keyed by the open's unique id (never reused, so a
//! closed and reopened device is never matched). When the thread ends, its lanes go
//! back to their devices' idle lists for the next new thread, unless the device has
//! been closed meanwhile. So a lane is used by one live thread at a time.
//!
//! A thread can also step aside ([`aside`]): inside, it gets other lanes than its own
//! (one per depth), so that work it queues there never waits behind what its own
//! stream runs. A thread waiting for its kernel serves that kernel's reverse-offload
//! requests aside, as the kernel, on the thread's own stream, waits for them.
//!
//! Threading: `get` is lock-free after a thread's first call (a thread-local lookup and
//! one atomic load); creating or reusing a lane takes the set's lock.

use crate::cuda::safe::{OwnedStream, Stream};
use gomp_plugin::error::{Error, Result};
use gomp_plugin::sync::Lock;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// What a lane's data must be: made empty for a new thread (`Default`), handed between
/// threads with its lane (`Send + Sync`, see [`Lane`]) and kept by the set (`'static`).
/// Every type that is so is one (the device's is the copy paths' per-thread buffers).
pub trait LaneData: Default + Send + Sync + 'static {}

impl<T: Default + Send + Sync + 'static> LaneData for T {}

/// Ids of opens, process-wide; 0 is never handed out.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One thread's stream and data. Used by one live thread at a time (see the module
/// documentation); the data's own type says what else may touch it.
pub struct Lane<T> {
    /// The thread's data (dropped first: it may refer to work queued on the stream).
    pub data: T,
    stream: OwnedStream,
}

impl<T> Lane<T> {
    /// The lane's stream.
    #[inline]
    pub fn stream(&self) -> Stream {
        self.stream.handle()
    }
}

/// The lanes of one open device.
struct Owned<T> {
    /// Every lane made for a thread (boxed: threads keep their addresses); dropped
    /// when the set is destroyed.
    all: Vec<Box<Lane<T>>>,
    /// Lanes whose thread has ended, for the next thread.
    idle: Vec<usize>,
    /// Set by `destroy`: nothing is handed out or given back afterwards.
    closed: bool,
}

/// What the set and the threads' caches share (the caches hold it weakly).
struct Shared<T> {
    owned: Mutex<Owned<T>>,
    /// A copy of `Owned::closed` for the lock-free lookup.
    closed: AtomicBool,
}

impl<T> Shared<T> {}

/// What a thread's cache needs from a set whatever its data type: taking a lane back.
trait Home: Send + Sync {
    /// Puts the lane at `lane` back on the idle list (unless the set is closed).
    fn give_back(&self, lane: usize);
    /// Whether the set is closed.
    fn is_closed(&self) -> bool;
}

impl<T: Send + Sync> Home for Shared<T> {
    fn give_back(&self, lane: usize) {
        let mut o = self.owned.locked();
        if !o.closed {
            o.idle.push(lane);
        }
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

/// One cached lane of the calling thread (its address, type-erased).
struct Cached {
    /// The open's id and the depth aside ([`ThreadStreams::key`]).
    id: u64,
    lane: usize,
    home: Weak<dyn Home>,
}

/// The calling thread's lanes, one per open device it used. Dropped at thread exit:
/// each lane goes back to its device's idle list.
struct Cache(Vec<Cached>);

impl Drop for Cache {
    fn drop(&mut self) {
        // The lanes go back below: the last-used entry must not hand one out again.
        let _ = THREAD.try_with(|t| t.last.set((0, 0)));
        for c in self.0.drain(..) {
            if let Some(home) = c.home.upgrade() {
                home.give_back(c.lane);
            }
        }
    }
}

/// What [`ThreadStreams::get`] reads of the calling thread on every call, in one
/// thread-local (one lookup: in a shared library each thread-local access is a call
/// of the dynamic loader's `__tls_get_addr`). Plain values with no destructor, so
/// reading them needs no lazy registration and no borrow.
struct Thread {
    /// The last used entry of `CACHE` (key, lane address), for the common case of one
    /// device. Key 0 (never a set's): none.
    last: Cell<(u64, usize)>,
    /// How deep the thread is in [`aside`] calls.
    aside: Cell<u64>,
}

thread_local! {
    static CACHE: RefCell<Cache> = const { RefCell::new(Cache(Vec::new())) };
    static THREAD: Thread = const {
        Thread {
            last: Cell::new((0, 0)),
            aside: Cell::new(0),
        }
    };
}

/// Depths of [`aside`] told apart (deeper ones share the deepest's lanes).
const DEPTHS: u64 = 16;

/// Runs `f` with the calling thread stepped aside: every set hands the thread, until
/// `f` returns, a lane other than its own (and other than those of shallower calls).
pub fn aside<R>(f: impl FnOnce() -> R) -> R {
    let depth = THREAD.with(|t| t.aside.replace(t.aside.get() + 1));
    let r = f();
    THREAD.with(|t| t.aside.set(depth));
    r
}

/// The per-thread lanes of one open device. Owned by the device core; `Sync`.
pub struct ThreadStreams<T> {
    id: u64,
    flags: u32,
    /// Told of each new lane's stream and number (names it for profilers).
    on_new: fn(Stream, usize),
    shared: Arc<Shared<T>>,
}

impl<T: Default + Send + Sync + 'static> ThreadStreams<T> {
    /// A set whose streams are created with `flags` (`CU_STREAM_*`).
    pub fn new(flags: u32) -> ThreadStreams<T> {
        ThreadStreams {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            flags,
            on_new: |_, _| {},
            shared: Arc::new(Shared {
                owned: Mutex::new(Owned {
                    all: Vec::new(),
                    idle: Vec::new(),
                    closed: false,
                }),
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// The set, telling `f` of each new lane's stream and number when it is made (the
    /// layer above names the streams for profilers through it).
    pub fn on_new_lane(self, f: fn(Stream, usize)) -> ThreadStreams<T> {
        ThreadStreams { on_new: f, ..self }
    }

    /// Whether the streams are blocking streams (ordered after CUDA's legacy default
    /// stream, which is ordered after them).
    #[inline]
    pub fn blocking(&self) -> bool {
        self.flags & crate::cuda::sys::CU_STREAM_NON_BLOCKING as u32 == 0
    }

    /// The cache key for this set at depth `aside`: the open's id and the depth.
    #[inline]
    fn key_at(&self, aside: u64) -> u64 {
        self.id * DEPTHS + aside.min(DEPTHS - 1)
    }

    /// The calling thread's cache key for this set: the open's id and the depth aside.
    #[inline]
    fn key(&self) -> u64 {
        self.key_at(THREAD.try_with(|t| t.aside.get()).unwrap_or(0))
    }

    #[inline]
    fn cached(&self) -> Option<usize> {
        // One thread-local lookup for the depth and the last-used entry.
        let (key, (k, lane)) = THREAD
            .try_with(|t| (self.key_at(t.aside.get()), t.last.get()))
            .unwrap_or((self.key_at(0), (0, 0)));
        if k == key {
            return Some(lane);
        }
        self.cached_slow(key)
    }

    /// [`Self::cached`] past the last-used entry; makes the entry found the last used.
    #[cold]
    fn cached_slow(&self, key: u64) -> Option<usize> {
        let lane = CACHE
            .try_with(|c| c.borrow().0.iter().find(|e| e.id == key).map(|e| e.lane))
            .ok()
            .flatten()?;
        let _ = THREAD.try_with(|t| t.last.set((key, lane)));
        Some(lane)
    }

    /// The calling thread's lane (the device's context is current). The reference is
    /// valid until the set is destroyed, which no thread may overlap with a use.
    #[inline]
    pub fn get(&self) -> Result<&Lane<T>> {
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(Error::invalid("the device is closed"));
        }
        let lane = match self.cached() {
            Some(l) => l,
            None => self.assign()?,
        };
        // SAFETY: the address of a boxed lane owned by `self.shared`, alive until
        // `destroy` (checked just above; no use may overlap it).
        Ok(unsafe { &*(lane as *const Lane<T>) })
    }

    /// The calling thread's stream.
    #[inline]
    pub fn stream(&self) -> Result<Stream> {
        self.get().map(Lane::stream)
    }

    /// Whether `s` is the calling thread's stream of this set (never creates one).
    #[inline]
    pub fn is_mine(&self, s: Stream) -> bool {
        self.cached().is_some_and(|l| {
            // SAFETY: as in `get`; the set is not destroyed while it is used.
            unsafe { &*(l as *const Lane<T>) }.stream() == s
        })
    }

    /// Gives the calling thread a lane: an idle one or a new one.
    fn assign(&self) -> Result<usize> {
        let reused = {
            let mut o = self.shared.owned.locked();
            if o.closed {
                return Err(Error::invalid("the device is closed"));
            }
            o.idle.pop()
        };
        let lane = match reused {
            Some(l) => l,
            None => {
                // The device's context is current (caller).
                let lane = Box::new(Lane {
                    data: T::default(),
                    stream: OwnedStream::create(self.flags)?,
                });
                let at = &*lane as *const Lane<T> as usize;
                let mut o = self.shared.owned.locked();
                if o.closed {
                    drop(o);
                    drop(lane);
                    return Err(Error::invalid("the device is closed"));
                }
                let n = o.all.len();
                (self.on_new)(lane.stream(), n);
                o.all.push(lane);
                at
            }
        };
        // A thread that is exiting has no cache any more: the lane then stays with the
        // set (dropped at close) without going back to the idle list.
        let home: Arc<dyn Home> = self.shared.clone();
        let _ = CACHE.try_with(|c| {
            let mut c = c.borrow_mut();
            c.0.retain(|e| e.home.upgrade().is_some_and(|h| !h.is_closed()));
            c.0.push(Cached {
                id: self.key(),
                lane,
                home: Arc::downgrade(&home),
            });
        });
        Ok(lane)
    }

    /// Drops every lane of the set, destroying the streams (device close, context
    /// current; the caller has waited for the device's work and no thread uses the
    /// set). Threads asking afterwards get an error.
    pub fn destroy(&self) {
        let all = {
            let mut o = self.shared.owned.locked();
            o.closed = true;
            self.shared.closed.store(true, Ordering::Release);
            o.idle.clear();
            std::mem::take(&mut o.all)
        };
        drop(all);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_aside_is_told_apart_at_each_depth() {
        let ts: ThreadStreams<()> = ThreadStreams::new(0);
        let own = ts.key();
        let (first, second, back) = aside(|| {
            let first = ts.key();
            let second = aside(|| ts.key());
            (first, second, ts.key())
        });
        assert_ne!(first, own);
        assert_ne!(second, first);
        assert_ne!(second, own);
        assert_eq!(back, first, "the depth comes back after a nested call");
        assert_eq!(
            ts.key(),
            own,
            "and the thread's own lane after the outer one"
        );
        // Deeper than DEPTHS: the deepest key, never another set's.
        fn deep(n: u64, ts: &ThreadStreams<()>) -> u64 {
            if n == 0 {
                ts.key()
            } else {
                aside(|| deep(n - 1, ts))
            }
        }
        let k = deep(DEPTHS + 3, &ts);
        assert_eq!(k, deep(DEPTHS - 1, &ts));
        assert_eq!(k / DEPTHS, own / DEPTHS);
        let other: ThreadStreams<()> = ThreadStreams::new(0);
        assert_ne!(other.key() / DEPTHS, own / DEPTHS);
    }
}
