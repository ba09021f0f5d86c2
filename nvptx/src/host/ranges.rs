//! The registry of page-locked host ranges the plugin made: chunks and large blocks of
//! the pinned pool (`page_locked_host_alloc`) and ranges locked with
//! `gomp_nvptx_host_lock`. The copy paths ask it first whether host memory is
//! page-locked (a hit means direct DMA, no staging, no driver query).
//!
//! Ranges are kept page-rounded, as the driver locks whole pages; they never overlap.
//! A user lock of a range lying inside a registered one shares it (reference counted,
//! one count per lock call at each start address); one that overlaps a registered
//! range without lying inside it is refused. A user range is really unlocked (the
//! `unregister` action runs) when its last lock is released; a pool range lives until
//! the pool frees it, whatever user locks share it.
//!
//! Pure Rust: the driver calls are actions passed in by the caller, so the rules are
//! unit-tested without a GPU.

use gomp_plugin::error::{Error, Result};
use gomp_plugin::sync::{Lock, ReadWrite};
use std::collections::BTreeMap;
use std::sync::{Mutex, RwLock};

/// Page size the ranges are rounded to.
pub const PAGE: usize = 4096;

/// Who made a range page-locked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A chunk or large block of device `ord`'s pinned pool (`cuMemHostAlloc`).
    Pool(i32),
    /// `gomp_nvptx_host_lock` through device `ord` (`cuMemHostRegister`).
    User(i32),
}

/// A registered range as the registry reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostRange {
    /// First byte (page-aligned).
    pub start: usize,
    /// One past the last byte (page-aligned).
    pub end: usize,
    /// Who locked it.
    pub origin: Origin,
}

/// What [`Registry::lock`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Locked {
    /// The range was new: the `register` action ran and the range is now registered.
    New,
    /// The range lies inside a registered one, which it now shares.
    Shared(HostRange),
}

struct Entry {
    end: usize,
    origin: Origin,
    /// The pool owns the range (it is removed only by [`Registry::remove_owned`]).
    owned: bool,
    /// User locks: (start address passed to `lock`, number of locks at it).
    holds: Vec<(usize, usize)>,
}

/// Page-locked host ranges of the process. Thread-safe: lookups share a read lock;
/// lock, unlock, insert and remove are serialized among themselves (so a range is never
/// registered twice with the driver), and hold the write lock only to update the map,
/// never while a driver action runs.
pub struct Registry {
    map: RwLock<BTreeMap<usize, Entry>>,
    ops: Mutex<()>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

static GLOBAL: Registry = Registry::new();

/// The process's registry (host memory is process-wide, and so are portable locks).
pub fn global() -> &'static Registry {
    &GLOBAL
}

/// `[p, p+len)` widened to whole pages; `None` for an empty range or one that wraps.
pub fn page_span(p: usize, len: usize) -> Option<(usize, usize)> {
    if len == 0 {
        return None;
    }
    let end = p.checked_add(len)?.checked_next_multiple_of(PAGE)?;
    Some((p - p % PAGE, end))
}

fn span_of(p: usize, len: usize) -> Result<(usize, usize)> {
    page_span(p, len)
        .ok_or_else(|| Error::invalid(format!("invalid host range {p:#x} + {len} bytes")))
}

impl Registry {
    /// An empty registry.
    pub const fn new() -> Registry {
        Registry {
            map: RwLock::new(BTreeMap::new()),
            ops: Mutex::new(()),
        }
    }

    fn serialize(&self) -> std::sync::MutexGuard<'_, ()> {
        self.ops.locked()
    }

    /// The registered range containing address `p`, if any.
    pub fn find(&self, p: usize) -> Option<HostRange> {
        let m = self.map.read_locked();
        let (&start, e) = m.range(..=p).next_back()?;
        (p < e.end).then_some(HostRange {
            start,
            end: e.end,
            origin: e.origin,
        })
    }

    /// Whether all of `[p, p+n)` is page-locked by a registered range (the copy paths'
    /// question). False for an empty range.
    pub fn contains(&self, p: usize, n: usize) -> bool {
        let Some(end) = p.checked_add(n).filter(|_| n > 0) else {
            return false;
        };
        self.find(p).is_some_and(|r| end <= r.end)
    }

    /// The registered range overlapping page span `[s, e)` without containing it, or
    /// `Ok(Some)` for the one containing it, or `Ok(None)` if it touches none.
    fn classify(m: &BTreeMap<usize, Entry>, s: usize, e: usize) -> Result<Option<usize>> {
        // The only candidates: the last range starting at or before s, and ranges
        // starting inside (s, e).
        if let Some((&start, ent)) = m.range(..=s).next_back() {
            if e <= ent.end {
                return Ok(Some(start));
            }
            if s < ent.end {
                return Err(overlap(s, e, start, ent.end));
            }
        }
        if let Some((&start, ent)) = m.range(s + 1..e).next() {
            return Err(overlap(s, e, start, ent.end));
        }
        Ok(None)
    }

    /// Locks `[p, p+len)` for a user: shares the registered range it lies in, or else
    /// runs `register(start, bytes)` on its page span and records it with `origin`.
    /// A span overlapping a registered range without lying inside it is refused, as is
    /// an empty or wrapping range; so is the new range if `register` fails.
    pub fn lock(
        &self,
        p: usize,
        len: usize,
        origin: Origin,
        register: impl FnOnce(usize, usize) -> Result<()>,
    ) -> Result<Locked> {
        let (s, e) = span_of(p, len)?;
        let _ops = self.serialize();
        let inside = Self::classify(&self.map.read_locked(), s, e)?;
        if let Some(start) = inside {
            let mut m = self.map.write_locked();
            let ent = m.get_mut(&start).expect("entry found under the ops lock");
            match ent.holds.iter_mut().find(|(a, _)| *a == p) {
                Some((_, n)) => *n += 1,
                None => ent.holds.push((p, 1)),
            }
            return Ok(Locked::Shared(HostRange {
                start,
                end: ent.end,
                origin: ent.origin,
            }));
        }
        register(s, e - s)?;
        self.map.write_locked().insert(
            s,
            Entry {
                end: e,
                origin,
                owned: false,
                holds: vec![(p, 1)],
            },
        );
        Ok(Locked::New)
    }

    /// Releases one user lock made at address `p`. When it was the last lock of a user
    /// range, the range is removed and `unregister(start, bytes, origin)` runs (its error
    /// is returned; the range is forgotten either way). An address that is not the start
    /// of a lock is an error.
    pub fn unlock(
        &self,
        p: usize,
        unregister: impl FnOnce(usize, usize, Origin) -> Result<()>,
    ) -> Result<()> {
        let _ops = self.serialize();
        let not_locked = || Error::invalid(format!("host address {p:#x} is not locked"));
        let r = self.find(p).ok_or_else(not_locked)?;
        let last = {
            let mut m = self.map.write_locked();
            let ent = m.get_mut(&r.start).expect("entry found under the ops lock");
            let i = ent
                .holds
                .iter()
                .position(|&(a, _)| a == p)
                .ok_or_else(not_locked)?;
            ent.holds[i].1 -= 1;
            if ent.holds[i].1 == 0 {
                ent.holds.swap_remove(i);
            }
            let last = ent.holds.is_empty() && !ent.owned;
            if last {
                m.remove(&r.start);
            }
            last
        };
        if last {
            unregister(r.start, r.end - r.start, r.origin)?;
        }
        Ok(())
    }

    /// Records `[start, start+len)` (page-rounded) as owned by the pool. Refused if it
    /// overlaps a registered range (it then stays unregistered: copies fall back to the
    /// driver's check).
    pub fn insert_owned(&self, start: usize, len: usize, origin: Origin) -> Result<()> {
        let (s, e) = span_of(start, len)?;
        let _ops = self.serialize();
        if let Some(inside) = Self::classify(&self.map.read_locked(), s, e)? {
            let end = self
                .map
                .read_locked()
                .get(&inside)
                .map_or(inside, |x| x.end);
            return Err(overlap(s, e, inside, end));
        }
        self.map.write_locked().insert(
            s,
            Entry {
                end: e,
                origin,
                owned: true,
                holds: Vec::new(),
            },
        );
        Ok(())
    }

    /// Forgets the pool range starting at `start` (the pool is freeing it), together
    /// with any user locks sharing it. False if there is no such owned range.
    pub fn remove_owned(&self, start: usize) -> bool {
        let _ops = self.serialize();
        let mut m = self.map.write_locked();
        let s = start - start % PAGE;
        match m.get(&s) {
            Some(e) if e.owned => {
                if !e.holds.is_empty() {
                    log::debug!(
                        "pinned range {s:#x}..{:#x} freed while {} user lock(s) share it",
                        e.end,
                        e.holds.len()
                    );
                }
                m.remove(&s);
                true
            }
            _ => false,
        }
    }

    /// Number of registered ranges (diagnostics and tests).
    pub fn len(&self) -> usize {
        self.map.read_locked().len()
    }

    /// True when no range is registered.
    pub fn is_empty(&self) -> bool {
        self.map.read_locked().is_empty()
    }
}

fn overlap(s: usize, e: usize, start: usize, end: usize) -> Error {
    Error::invalid(format!(
        "host range {s:#x}..{e:#x} overlaps the page-locked range {start:#x}..{end:#x} \
         without lying inside it"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    const A: usize = 0x10_0000;

    fn ok(_: usize, _: usize) -> Result<()> {
        Ok(())
    }

    #[test]
    fn spans_are_page_rounded() {
        assert_eq!(page_span(A + 10, 100), Some((A, A + PAGE)));
        assert_eq!(page_span(A, PAGE), Some((A, A + PAGE)));
        assert_eq!(page_span(A, PAGE + 1), Some((A, A + 2 * PAGE)));
        assert_eq!(page_span(A, 0), None);
        assert_eq!(page_span(usize::MAX - 10, 100), None);
    }

    #[test]
    fn nested_lock_shares_and_registers_once() {
        let r = Registry::new();
        let calls = RefCell::new(Vec::new());
        let reg = |s, n| {
            calls.borrow_mut().push((s, n));
            Ok(())
        };
        assert_eq!(
            r.lock(A, 8 * PAGE, Origin::User(0), reg).unwrap(),
            Locked::New
        );
        let outer = HostRange {
            start: A,
            end: A + 8 * PAGE,
            origin: Origin::User(0),
        };
        let shared = r
            .lock(A + PAGE + 5, PAGE, Origin::User(1), |_, _| {
                panic!("a nested lock must not register again")
            })
            .unwrap();
        assert_eq!(shared, Locked::Shared(outer));
        // The same range again, and one sharing the start address.
        assert_eq!(
            r.lock(A, 8 * PAGE, Origin::User(0), ok).unwrap(),
            Locked::Shared(outer)
        );
        assert_eq!(calls.into_inner(), vec![(A, 8 * PAGE)]);
        assert!(r.contains(A + 100, 7 * PAGE));
        assert!(!r.contains(A + 100, 8 * PAGE));
        assert!(!r.contains(A, 0));
        assert_eq!(r.find(A + 8 * PAGE - 1), Some(outer));
        assert_eq!(r.find(A + 8 * PAGE), None);
        assert_eq!(r.find(A - 1), None);
    }

    #[test]
    fn partial_overlap_and_extension_are_refused() {
        let r = Registry::new();
        r.lock(A + 4 * PAGE, 4 * PAGE, Origin::User(0), ok).unwrap();
        let never = |_, _| -> Result<()> { panic!("must not register an overlapping range") };
        // Extends past the end, starts before, covers it entirely.
        for (p, n) in [
            (A + 6 * PAGE, 4 * PAGE),
            (A + 2 * PAGE, 3 * PAGE),
            (A, 16 * PAGE),
            (A + 7 * PAGE + 100, PAGE),
        ] {
            let e = r.lock(p, n, Origin::User(0), never).unwrap_err();
            assert!(e.to_string().contains("overlaps"), "{p:#x}+{n}: {e}");
        }
        // Neighbours on other pages are fine.
        r.lock(A, 4 * PAGE, Origin::User(0), ok).unwrap();
        r.lock(A + 8 * PAGE, 1, Origin::User(0), ok).unwrap();
        assert_eq!(r.len(), 3);
    }

    #[test]
    fn last_unlock_unregisters() {
        let r = Registry::new();
        let gone = RefCell::new(Vec::new());
        let unreg = |s, n, o| {
            gone.borrow_mut().push((s, n, o));
            Ok(())
        };
        r.lock(A, 2 * PAGE, Origin::User(3), ok).unwrap();
        r.lock(A + 8, 16, Origin::User(3), ok).unwrap();
        r.lock(A + 8, 16, Origin::User(3), ok).unwrap();
        r.unlock(A, unreg).unwrap();
        r.unlock(A + 8, unreg).unwrap();
        assert!(gone.borrow().is_empty(), "still one lock at A+8");
        assert!(r.contains(A, 2 * PAGE));
        r.unlock(A + 8, unreg).unwrap();
        assert_eq!(gone.into_inner(), vec![(A, 2 * PAGE, Origin::User(3))]);
        assert!(r.is_empty());
        assert!(!r.contains(A, 1));
        // The range can be locked again afterwards.
        assert_eq!(r.lock(A, PAGE, Origin::User(0), ok).unwrap(), Locked::New);
    }

    #[test]
    fn unlock_of_unknown_ranges_is_an_error() {
        let r = Registry::new();
        let never = |_, _, _| -> Result<()> { panic!("nothing to unregister") };
        assert!(r.unlock(A, never).is_err());
        r.lock(A + 16, 100, Origin::User(0), ok).unwrap();
        // Inside the locked page but not where a lock started.
        let e = r.unlock(A, never).unwrap_err();
        assert!(e.to_string().contains("not locked"), "{e}");
        assert!(r.unlock(A + 17, never).is_err());
        r.unlock(A + 16, |_, _, _| Ok(())).unwrap();
        assert!(r.unlock(A + 16, never).is_err(), "already released");
    }

    #[test]
    fn failed_register_records_nothing() {
        let r = Registry::new();
        let e = r
            .lock(A, PAGE, Origin::User(0), |_, _| Err(Error::invalid("no")))
            .unwrap_err();
        assert_eq!(e.to_string(), "no");
        assert!(r.is_empty());
        assert!(r.lock(A, 0, Origin::User(0), ok).is_err(), "empty range");
    }

    #[test]
    fn pool_ranges_outlive_user_locks_inside_them() {
        let r = Registry::new();
        r.insert_owned(A, 4 * PAGE, Origin::Pool(0)).unwrap();
        assert!(r.insert_owned(A + PAGE, PAGE, Origin::Pool(0)).is_err());
        assert!(r.contains(A + 123, 1000));
        assert!(matches!(
            r.lock(A + PAGE, 64, Origin::User(0), |_, _| panic!("shared")),
            Ok(Locked::Shared(HostRange {
                origin: Origin::Pool(0),
                ..
            }))
        ));
        // The pool's own start is not a user lock, and the last user unlock leaves the
        // pool range registered.
        assert!(r.unlock(A, |_, _, _| panic!("not a lock")).is_err());
        r.unlock(A + PAGE, |_, _, _| panic!("owned by the pool"))
            .unwrap();
        assert!(r.contains(A, 4 * PAGE));
        assert!(r.remove_owned(A));
        assert!(!r.remove_owned(A));
        assert!(r.is_empty());
        // A user range is not the pool's to remove.
        r.lock(A, PAGE, Origin::User(0), ok).unwrap();
        assert!(!r.remove_owned(A));
    }

    #[test]
    fn concurrent_locks_register_each_range_once() {
        let r = Registry::new();
        let registered = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for t in 0..8 {
                let (r, registered) = (&r, &registered);
                s.spawn(move || {
                    for i in 0..200 {
                        let p = A + (i % 10) * 4 * PAGE + t * 8;
                        r.lock(p, 64, Origin::User(0), |_, _| {
                            registered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            Ok(())
                        })
                        .unwrap();
                        assert!(r.contains(p, 64));
                    }
                });
            }
        });
        assert_eq!(registered.into_inner(), 10);
        assert_eq!(r.len(), 10);
    }
}
