//! The live kernels of one product: the handles `load_image` gave libgomp, and the one
//! check every handle libgomp passes back goes through (`run`, `async_run`, `can_run`,
//! `openacc_exec`). A handle is the address of a kernel object owned by an `Arc`
//! (`Arc::as_ptr`), registered with the device and image that loaded it; a handle that
//! is not registered is refused with a `libgomp:` error and never read.
//!
//! Ownership: the set holds one `Arc` of each live kernel, from the `load_image` that
//! made it until `unload_image` or `fini_device` of its device; the backend's image
//! holds another. A caller borrows the kernel for the length of one call
//! ([`KernelSet::with`]) and clones the `Arc` if it keeps the kernel longer (a queued
//! launch).
//!
//! Threading and cost: registration and removal take a write lock (image loads and
//! unloads: rare). A lookup first asks a small cache of the calling thread: the last
//! few handles it validated, with the set's removal count at the time. A hit costs a
//! thread-local read, one plain atomic load of that count (a cache line written only
//! by removals, so shared by every reader without bouncing) and a few comparisons: no
//! lock and no atomic read-modify-write, so host threads launching at once do not
//! contend. A miss takes the read lock once and refills the cache. Any removal
//! invalidates every thread's cached entries of the set.

use crate::error::{Error, Result};
use crate::sync::ReadWrite;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// A registered kernel: its owner and where it came from.
struct Entry<K> {
    /// Held, never read: keeps the kernel alive while it is registered.
    _owner: Arc<K>,
    ord: i32,
    image: usize,
}

/// The live kernels of one product (a field of its [`crate::registry::Registry`], a
/// `static`). Thread-safe.
pub struct KernelSet<K> {
    live: RwLock<BTreeMap<usize, Entry<K>>>,
    /// Removals so far: a thread's cached validation holds while this is unchanged.
    removals: AtomicU64,
}

/// A kernel as a lookup finds it, borrowed for one call.
pub struct Live<'a, K> {
    /// The kernel (clone it to keep it past the call).
    pub kernel: &'a Arc<K>,
    /// The ordinal of the device whose `load_image` made it.
    pub ord: i32,
}

/// One validated handle in a thread's cache.
#[derive(Clone, Copy)]
struct Seen {
    set: usize,
    handle: usize,
    removals: u64,
    ord: i32,
}

const EMPTY: Seen = Seen {
    set: 0,
    handle: 0,
    removals: 0,
    ord: 0,
};
/// Handles a thread remembers (a region usually launches one or a few kernels).
const WAYS: usize = 4;

thread_local! {
    /// The calling thread's last validated handles, of any set, and the slot to
    /// replace next.
    static SEEN: Cell<([Seen; WAYS], usize)> = const { Cell::new(([EMPTY; WAYS], 0)) };
}

/// The handle libgomp is given for `k`: the kernel object's address.
pub fn handle<K>(k: &Arc<K>) -> usize {
    Arc::as_ptr(k) as usize
}

impl<K: Send + Sync + 'static> KernelSet<K> {
    /// An empty set.
    pub const fn new() -> Self {
        KernelSet {
            live: RwLock::new(BTreeMap::new()),
            removals: AtomicU64::new(0),
        }
    }

    /// Registers the kernels of image `image` (libgomp's `target_data` address) loaded
    /// on device `ord`; returns their handles in order.
    pub fn insert(&self, ord: i32, image: usize, kernels: &[Arc<K>]) -> Vec<usize> {
        let mut live = self.live.write_locked();
        kernels
            .iter()
            .map(|k| {
                let h = handle(k);
                live.insert(
                    h,
                    Entry {
                        _owner: Arc::clone(k),
                        ord,
                        image,
                    },
                );
                h
            })
            .collect()
    }

    /// Unregisters what `keep` refuses; returns how many went.
    fn remove_where(&self, keep: impl Fn(&Entry<K>) -> bool) -> usize {
        let gone: Vec<Entry<K>> = {
            let mut live = self.live.write_locked();
            let keys: Vec<usize> = live
                .iter()
                .filter(|(_, e)| !keep(e))
                .map(|(&h, _)| h)
                .collect();
            let gone: Vec<Entry<K>> = keys.iter().filter_map(|h| live.remove(h)).collect();
            if !gone.is_empty() {
                // Under the write lock: a reader that validated under the read lock
                // cached the count before this removal.
                self.removals.fetch_add(1, Ordering::Release);
            }
            gone
        };
        // The set's own `Arc`s go after the lock is released.
        gone.len()
    }

    /// Unregisters the kernels of image `image` on device `ord` (`unload_image`).
    pub fn remove_image(&self, ord: i32, image: usize) -> usize {
        self.remove_where(|e| e.ord != ord || e.image != image)
    }

    /// Unregisters every kernel of device `ord` (`fini_device`).
    pub fn remove_device(&self, ord: i32) -> usize {
        self.remove_where(|e| e.ord != ord)
    }

    /// The device ordinal of live handle `h`, `None` if `h` is not registered.
    fn validate(&'static self, h: usize) -> Option<i32> {
        let set = self as *const Self as usize;
        let removals = self.removals.load(Ordering::Acquire);
        let (mut seen, next) = SEEN.get();
        if let Some(s) = seen
            .iter()
            .find(|s| s.handle == h && s.set == set && s.removals == removals)
        {
            return Some(s.ord);
        }
        let live = self.live.read_locked();
        // Read under the lock: no removal runs between this and the lookup.
        let removals = self.removals.load(Ordering::Acquire);
        let ord = live.get(&h)?.ord;
        drop(live);
        seen[next] = Seen {
            set,
            handle: h,
            removals,
            ord,
        };
        SEEN.set((seen, (next + 1) % WAYS));
        Some(ord)
    }

    /// Calls `f` with the live kernel whose handle is `h`; `None` (and `f` not called)
    /// when `h` is not a registered handle. The set is `'static` (a product's static
    /// registry), so its address identifies it in the threads' caches.
    ///
    /// The kernel stays alive during `f` as long as its image stays loaded, which
    /// libgomp's contract guarantees while it launches one of its kernels.
    pub fn with<T>(&'static self, h: usize, f: impl FnOnce(Live<'_, K>) -> T) -> Option<T> {
        let ord = self.validate(h)?;
        // SAFETY: `h` is `Arc::as_ptr` of an `Arc` the set holds (validated above, and
        // kept registered during the call by libgomp's contract); the `ManuallyDrop`
        // borrows that reference without taking it: the count is unchanged on return,
        // and a clone `f` makes is a real new reference.
        let kernel = ManuallyDrop::new(unsafe { Arc::from_raw(h as *const K) });
        Some(f(Live {
            kernel: &kernel,
            ord,
        }))
    }

    /// As [`KernelSet::with`], with the one policy for a handle that is not live: a
    /// `libgomp:`-style error naming the entry point `what`.
    pub fn with_known<T>(
        &'static self,
        what: &str,
        h: usize,
        f: impl FnOnce(Live<'_, K>) -> Result<T>,
    ) -> Result<T> {
        self.with(h, f).unwrap_or_else(|| {
            Err(Error::invalid(format!(
                "{what}: unknown kernel handle {h:#x} (not a kernel of a loaded image)"
            )))
        })
    }
}

impl<K: Send + Sync + 'static> Default for KernelSet<K> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    static DROPPED: AtomicUsize = AtomicUsize::new(0);

    struct K(u32);
    impl Drop for K {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn leaked() -> &'static KernelSet<K> {
        Box::leak(Box::new(KernelSet::new()))
    }

    #[test]
    fn lookups_follow_loads_and_unloads() {
        let set = leaked();
        let a = Arc::new(K(1));
        let b = Arc::new(K(2));
        let hs = set.insert(0, 0x100, &[a.clone(), b.clone()]);
        assert_eq!(hs, [handle(&a), handle(&b)]);
        // Twice: the second is a cache hit and must agree.
        for _ in 0..2 {
            assert_eq!(set.with(hs[1], |l| (l.kernel.0, l.ord)), Some((2, 0)));
        }
        assert!(set.with(hs[0] + 8, |_| ()).is_none(), "not a handle");
        assert!(set.with(0, |_| ()).is_none());
        let err = set
            .with_known("run", 0x42, |_| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("run: unknown kernel handle 0x42"), "{err}");
        // A clone taken inside outlives the set's entry.
        let kept = set.with(hs[0], |l| Arc::clone(l.kernel)).unwrap();
        assert_eq!(Arc::strong_count(&a), 3, "ours, the set's, the clone");
        assert_eq!(set.remove_image(1, 0x100), 0, "another device's image");
        assert_eq!(set.remove_image(0, 0x100), 2);
        assert!(set.with(hs[1], |_| ()).is_none(), "cached, then unloaded");
        assert!(set.with(hs[0], |_| ()).is_none());
        assert_eq!(Arc::strong_count(&a), 2);
        drop(kept);
        let before = DROPPED.load(Ordering::SeqCst);
        drop((a, b));
        assert_eq!(DROPPED.load(Ordering::SeqCst), before + 2);
    }

    #[test]
    fn devices_and_threads() {
        let set = leaked();
        let ks: Vec<Arc<K>> = (0..6).map(|i| Arc::new(K(i))).collect();
        let h0 = set.insert(0, 1, &ks[..3]);
        let h1 = set.insert(1, 1, &ks[3..]);
        // More handles than a thread caches, from several threads at once.
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..3 {
                        for (i, &h) in h0.iter().chain(&h1).enumerate() {
                            let got = set.with(h, |l| (l.kernel.0, l.ord));
                            assert_eq!(got, Some((i as u32, (i >= 3) as i32)));
                        }
                    }
                });
            }
        });
        assert_eq!(set.remove_device(1), 3);
        assert!(h1.iter().all(|&h| set.with(h, |_| ()).is_none()));
        assert!(h0.iter().all(|&h| set.with(h, |_| ()).is_some()));
        // A second set does not see the first one's cached handles.
        let other = leaked();
        assert!(other.with(h0[0], |_| ()).is_none());
    }
}
