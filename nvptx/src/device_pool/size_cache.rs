//! Freed blocks kept for reuse by their exact size, within a bound given at each put
//! (the largest go first when room is needed): the one shape of the nvptx backend's
//! large device-block cache and of its pinned pool's large blocks. Plain data, no
//! lock: the owner locks it.

use std::collections::BTreeMap;

/// Blocks (`P`: an address) by size, and their total size. Not synchronised.
pub struct SizeCache<P> {
    by_size: BTreeMap<usize, Vec<P>>,
    bytes: usize,
}

impl<P> Default for SizeCache<P> {
    fn default() -> Self {
        SizeCache {
            by_size: BTreeMap::new(),
            bytes: 0,
        }
    }
}

impl<P> SizeCache<P> {
    /// A kept block of `size` bytes, if there is one (no longer kept).
    pub fn take(&mut self, size: usize) -> Option<P> {
        let p = self.by_size.get_mut(&size)?.pop()?;
        self.bytes -= size;
        Some(p)
    }

    /// Keeps block `p` of `size` bytes, the cache holding at most `room` bytes
    /// afterwards: the largest kept blocks are evicted until `p` fits. Returns the
    /// blocks the caller must give back, with their sizes: the evicted ones, or `p`
    /// itself when it is larger than `room` (nothing then changes); empty when all
    /// is kept.
    pub fn put(&mut self, p: P, size: usize, room: usize) -> Vec<(P, usize)> {
        if size > room {
            return vec![(p, size)];
        }
        let mut out = Vec::new();
        while self.bytes + size > room {
            let Some(mut e) = self.by_size.last_entry() else {
                break;
            };
            let largest = *e.key();
            let q = e.get_mut().pop();
            if e.get().is_empty() {
                e.remove();
            }
            if let Some(q) = q {
                out.push((q, largest));
                self.bytes -= largest;
            }
        }
        self.bytes += size;
        self.by_size.entry(size).or_default().push(p);
        out
    }

    /// Bytes kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Empties the cache; the caller gives back the blocks returned, with their sizes.
    pub fn drain(&mut self) -> Vec<(P, usize)> {
        self.bytes = 0;
        std::mem::take(&mut self.by_size)
            .into_iter()
            .flat_map(|(size, ps)| ps.into_iter().map(move |p| (p, size)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_by_size_within_the_room() {
        let mut c = SizeCache::default();
        assert_eq!(c.take(8), None);
        assert!(c.put(1, 8, 64).is_empty());
        assert!(c.put(2, 16, 64).is_empty());
        assert_eq!(c.bytes(), 24);
        assert_eq!(c.take(16), Some(2));
        assert_eq!(c.take(16), None);
        assert_eq!(c.bytes(), 8);
        assert_eq!(c.put(3, 65, 64), vec![(3, 65)], "larger than the room");
        assert_eq!(c.bytes(), 8);
        assert_eq!(c.drain(), vec![(1, 8)]);
        assert_eq!(c.bytes(), 0);
    }

    #[test]
    fn the_largest_blocks_make_room() {
        let mut c = SizeCache::default();
        for (p, size) in [(1, 8), (2, 32), (3, 16), (4, 8)] {
            assert!(c.put(p, size, 64).is_empty());
        }
        assert_eq!(c.put(5, 24, 64), vec![(2, 32)]);
        assert_eq!(c.bytes(), 56);
        let mut out = c.put(6, 16, 16);
        out.sort();
        assert_eq!(out, vec![(1, 8), (3, 16), (4, 8), (5, 24)]);
        assert_eq!(c.take(16), Some(6));
        assert_eq!(c.put(7, 1, 0), vec![(7, 1)]);
        assert_eq!(c.bytes(), 0);
    }
}
