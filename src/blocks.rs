//! The device blocks handed out by `alloc` (shared by both products): their sizes, so
//! a free of an address that is not a block and a copy running past a block's end get
//! libgomp's errors ("invalid device address", "invalid size") instead of a driver or
//! runtime error or a silent overrun.

use crate::error::{Error, Result};
use crate::sync::Lock;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// A device address (CUDA's `CUdeviceptr`, or an HSA pointer as an integer).
pub type DevPtr = u64;

/// Live blocks of one device by start address. Thread-safe.
#[derive(Default)]
pub struct Blocks {
    live: Mutex<Live>,
}

/// The blocks and the answer of the latest look-up.
#[derive(Default)]
struct Live {
    map: BTreeMap<DevPtr, usize>,
    /// The latest look-up's answer, for the next ones nearby (a region's copies and
    /// launch ask about the same block), kept across the region's insert and remove of
    /// its block. The default's window is empty.
    hint: Hint,
}

/// No block starts inside `(from, to)`, so the block with the greatest start at or
/// below any address of `[from, to)` is the same for all of them: `block` (`None`: no
/// block starts at or below the window; else its start is `from`), or, when `before`,
/// the block with the greatest start below `from`, not looked up yet: the block that
/// started at `from` was removed (a region's block, freed; the next region's block is
/// often inserted at the same address, which then needs no look-up).
#[derive(Clone, Copy, Default)]
struct Hint {
    from: DevPtr,
    to: DevPtr,
    block: Option<(DevPtr, usize)>,
    before: bool,
}

impl Hint {
    #[inline]
    fn covers(&self, p: DevPtr) -> bool {
        self.from <= p && p < self.to
    }
}

impl Live {
    /// The block with the greatest start at or below `p` (start, size), if any: what
    /// `map.range(..=p).next_back()` answers, from the hint when it covers `p`.
    #[inline]
    fn at_or_below(&mut self, p: DevPtr) -> Option<(DevPtr, usize)> {
        if self.hint.covers(p) && !self.hint.before {
            return self.hint.block;
        }
        self.look_up(p)
    }

    /// [`Live::at_or_below`] from the map, the hint made anew for `p`'s window.
    #[inline(never)]
    fn look_up(&mut self, p: DevPtr) -> Option<(DevPtr, usize)> {
        let h = self.hint;
        if h.covers(p) {
            // A `before` window: no block starts in [from, to), so the block below
            // `from` answers for the whole window, which grows down to it.
            let b = self.map.range(..h.from).next_back().map(|(&s, &n)| (s, n));
            self.hint = Hint {
                from: b.map_or(0, |(s, _)| s),
                to: h.to,
                block: b,
                before: false,
            };
            return b;
        }
        let block = self.map.range(..=p).next_back().map(|(&s, &n)| (s, n));
        let to = p
            .checked_add(1)
            .and_then(|q| self.map.range(q..).next())
            .map_or(DevPtr::MAX, |(&s, _)| s);
        self.hint = Hint {
            from: block.map_or(0, |(s, _)| s),
            to,
            block,
            before: false,
        };
        block
    }
}

impl Blocks {
    /// Records a new block.
    pub fn insert(&self, p: DevPtr, size: usize) {
        let mut live = self.live.locked();
        // Inside the hint's window no other block starts after `p`: `p` answers for
        // `[p, to)`. A block inserted outside the window changes no answer inside it
        // (below `from`, a `before` window is looked up when asked).
        if live.hint.covers(p) {
            live.hint = Hint {
                from: p,
                to: live.hint.to,
                block: Some((p, size)),
                before: false,
            };
        }
        live.map.insert(p, size);
    }

    /// Forgets block `p`; an address that does not start a block is an error.
    pub fn remove(&self, p: DevPtr) -> Result<usize> {
        let mut live = self.live.locked();
        let size = live
            .map
            .remove(&p)
            .ok_or_else(|| Error::invalid("invalid device address"))?;
        // A removed block starts its window (no other block starts inside one): the
        // window now answers with the block below it.
        if live.hint.covers(p) {
            live.hint = Hint {
                from: p,
                to: live.hint.to,
                block: None,
                before: true,
            };
        }
        Ok(size)
    }

    /// Forgets every block (when its device closes), returning their addresses.
    pub fn take_all(&self) -> Vec<DevPtr> {
        let mut live = self.live.locked();
        live.hint = Hint::default();
        std::mem::take(&mut live.map).into_keys().collect()
    }

    /// Whether `p` lies inside a live block.
    pub fn contains(&self, p: DevPtr) -> bool {
        self.live
            .locked()
            .at_or_below(p)
            .is_some_and(|(start, size)| p < start + size as u64)
    }

    /// Whether `[p, p+n)` lies inside the live block that contains `owner`.
    pub fn inside_block_of(&self, owner: DevPtr, p: DevPtr, n: usize) -> bool {
        self.live
            .locked()
            .at_or_below(owner)
            .is_some_and(|(start, size)| {
                let end = start + size as u64;
                owner < end && p >= start && p.checked_add(n as u64).is_some_and(|e| e <= end)
            })
    }

    /// Checks `[p, p+n)` against the block containing `p`, if any: running past its
    /// end is "invalid size". Addresses outside every block (module globals, memory
    /// the program allocated itself) are left to the driver.
    pub fn check(&self, p: DevPtr, n: usize) -> Result<()> {
        if let Some((start, size)) = self.live.locked().at_or_below(p) {
            let end = start + size as u64;
            if p < end && p.checked_add(n as u64).is_none_or(|e| e > end) {
                return Err(Error::invalid("invalid size"));
            }
        }
        Ok(())
    }
}

/// The address checks of a copy between host and device, with libgomp's messages.
pub fn check_copy(dev_ptr: DevPtr, host_ptr: *const std::ffi::c_void) -> Result<()> {
    if dev_ptr == 0 {
        return Err(Error::invalid("invalid device address"));
    }
    if host_ptr.is_null() {
        return Err(Error::invalid("invalid host address"));
    }
    if dev_ptr == host_ptr as u64 {
        return Err(Error::invalid("invalid host or device address"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frees_and_ranges() {
        let b = Blocks::default();
        b.insert(0x1000, 0x100);
        assert!(b.check(0x1000, 0x100).is_ok());
        assert!(b.check(0x1080, 0x80).is_ok());
        assert_eq!(
            b.check(0x1080, 0x81).unwrap_err().to_string(),
            "invalid size"
        );
        assert!(b.check(0x2000, 1 << 20).is_ok(), "outside every block");
        assert!(b.contains(0x1000) && b.contains(0x10ff));
        assert!(!b.contains(0x1100) && !b.contains(0xfff));
        assert_eq!(
            b.remove(0x1080).unwrap_err().to_string(),
            "invalid device address"
        );
        assert_eq!(b.remove(0x1000).unwrap(), 0x100);
        assert!(b.remove(0x1000).is_err(), "double free");
        b.insert(0x3000, 8);
        b.insert(0x2000, 0);
        assert_eq!(b.take_all(), [0x2000, 0x3000]);
        assert!(!b.contains(0x3000));
    }

    /// The look-ups' answers with the hint are the map's own, whatever the order of
    /// inserts, removes and look-ups (a deterministic pseudo-random run against a plain
    /// map, with zero-sized and adjacent blocks).
    #[test]
    fn hinted_lookups_answer_as_the_map() {
        let b = Blocks::default();
        let mut model: BTreeMap<DevPtr, usize> = BTreeMap::new();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let r = next();
            let p = 0x1000 + (r >> 8) % 64 * 0x10;
            match r % 8 {
                0 | 1 => {
                    let size = (next() % 5) as usize * 0x10;
                    b.insert(p, size);
                    model.insert(p, size);
                }
                2 => assert_eq!(b.remove(p).ok(), model.remove(&p), "remove {p:#x}"),
                _ => {
                    let q = p + next() % 0x18;
                    let n = (next() % 0x30) as usize;
                    let want = model.range(..=q).next_back().map(|(&s, &z)| (s, z));
                    assert_eq!(b.live.locked().at_or_below(q), want, "at or below {q:#x}");
                    let end = want.map(|(s, z)| s + z as u64);
                    assert_eq!(b.contains(q), end.is_some_and(|e| q < e), "contains {q:#x}");
                    let bad = end.is_some_and(|e| q < e && q + n as u64 > e);
                    assert_eq!(b.check(q, n).is_err(), bad, "check {q:#x} {n}");
                }
            }
        }
        assert_eq!(b.take_all(), model.into_keys().collect::<Vec<_>>());
        assert_eq!(b.live.locked().at_or_below(0x1000), None);
    }

    /// A region's cycle: its block inserted where the last one was removed is answered
    /// from the hint; after a remove, the window answers with the block below it as the
    /// map has it when asked (a block inserted below meanwhile included).
    #[test]
    fn a_removed_blocks_window_answers_with_the_block_below() {
        let b = Blocks::default();
        b.insert(0x1000, 0x100);
        b.insert(0x3000, 0x100);
        for _ in 0..3 {
            b.insert(0x2000, 0x40);
            assert!(b.check(0x2000, 0x40).is_ok());
            assert!(b.check(0x2010, 0x40).is_err(), "past the region's block");
            assert!(b.inside_block_of(0x2000, 0x2008, 8));
            assert_eq!(b.remove(0x2000).unwrap(), 0x40);
            assert!(!b.contains(0x2000), "freed");
        }
        assert_eq!(b.live.locked().at_or_below(0x2080), Some((0x1000, 0x100)));
        b.remove(0x1000).unwrap();
        b.insert(0x2000, 0x40);
        b.remove(0x2000).unwrap();
        b.insert(0x1800, 0x1000);
        assert_eq!(b.live.locked().at_or_below(0x2080), Some((0x1800, 0x1000)));
        assert!(b.contains(0x2080), "the block inserted below reaches it");
        assert_eq!(b.live.locked().at_or_below(0x3000), Some((0x3000, 0x100)));
    }

    #[test]
    fn ranges_inside_the_block_of_an_address() {
        let b = Blocks::default();
        b.insert(0x1000, 0x100);
        b.insert(0x1100, 0x100);
        assert!(b.inside_block_of(0x1000, 0x1000, 0x100));
        assert!(b.inside_block_of(0x1010, 0x1080, 0x80));
        assert!(
            !b.inside_block_of(0x1010, 0x1080, 0x81),
            "past the block's end"
        );
        assert!(!b.inside_block_of(0x1000, 0x1100, 8), "the next block");
        assert!(!b.inside_block_of(0x1100, 0x10f8, 8), "the block before");
        assert!(
            !b.inside_block_of(0x2000, 0x2000, 8),
            "no block holds the owner"
        );
        assert!(!b.inside_block_of(0x1000, u64::MAX - 4, 8), "overflow");
        b.remove(0x1000).unwrap();
        assert!(!b.inside_block_of(0x1000, 0x1000, 8), "freed");
    }

    #[test]
    fn copy_addresses() {
        let h = 0x5000usize as *const std::ffi::c_void;
        assert!(check_copy(0x1000, h).is_ok());
        assert_eq!(
            check_copy(0, h).unwrap_err().to_string(),
            "invalid device address"
        );
        assert_eq!(
            check_copy(0x1000, std::ptr::null())
                .unwrap_err()
                .to_string(),
            "invalid host address"
        );
        assert_eq!(
            check_copy(0x5000, h).unwrap_err().to_string(),
            "invalid host or device address"
        );
    }
}
