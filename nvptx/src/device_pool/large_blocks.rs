//! A bounded cache of freed large device blocks (above the small-block sizes), reused
//! for requests of the same rounded size: `omp_target_alloc`/`omp_target_free` or a
//! map/unmap of the same array in a loop then costs no driver call. Sizes are rounded
//! up to [`GRANULE`]. Each [`LargeBlocks::put`] says how many bytes the cache may hold
//! (the device's share of `GOMP_NVPTX_DEVICE_CACHE`); what does not fit is handed back
//! for the caller to free at once. The cache is emptied when an allocation runs out of
//! memory and at device close.

use crate::cuda::sys::CUdeviceptr;
use crate::device_pool::size_cache::SizeCache;
use gomp_plugin::sync::Lock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Rounding of cached sizes.
pub const GRANULE: usize = 64 << 10;

/// The size a large request is allocated (and cached) with.
pub fn rounded(size: usize) -> usize {
    size.max(1).next_multiple_of(GRANULE)
}

/// Freed large blocks of one device, by rounded size. Thread-safe; the blocks are the
/// cache's until taken, handed back or drained.
#[derive(Default)]
pub struct LargeBlocks {
    cached: Mutex<SizeCache<CUdeviceptr>>,
    /// The cache's bytes, readable without the lock.
    bytes: AtomicUsize,
}

impl LargeBlocks {
    /// A cached block of `rounded` bytes, if there is one.
    pub fn take(&self, rounded: usize) -> Option<CUdeviceptr> {
        let mut c = self.cached.locked();
        let p = c.take(rounded)?;
        self.bytes.store(c.bytes(), Ordering::Relaxed);
        Some(p)
    }

    /// Keeps freed block `p` of `rounded` bytes in a cache of at most `room` bytes,
    /// making room by evicting the largest cached blocks. Returns the blocks the caller
    /// must free, if any: the evicted ones, or `p` itself when it is larger than `room`.
    #[inline]
    pub fn put(&self, p: CUdeviceptr, rounded: usize, room: usize) -> Option<Vec<CUdeviceptr>> {
        if rounded > room {
            return Some(vec![p]);
        }
        let mut c = self.cached.locked();
        let out = c.put(p, rounded, room);
        self.bytes.store(c.bytes(), Ordering::Relaxed);
        (!out.is_empty()).then(|| out.into_iter().map(|(q, _)| q).collect())
    }

    /// Bytes cached (a relaxed read: exact when no other thread changes the cache).
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Empties the cache; the caller frees the blocks returned.
    pub fn drain(&self) -> Vec<CUdeviceptr> {
        let mut c = self.cached.locked();
        self.bytes.store(0, Ordering::Relaxed);
        c.drain().into_iter().map(|(p, _)| p).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn reuse_by_rounded_size_within_the_room() {
        let l = LargeBlocks::default();
        assert_eq!(rounded(1 << 20), 1 << 20);
        assert_eq!(rounded((1 << 20) + 1), (1 << 20) + GRANULE);
        assert!(l.take(MIB).is_none());
        assert!(l.put(0x1000_0000, MIB, 8 * MIB).is_none());
        assert_eq!(l.bytes(), MIB);
        assert!(l.take(2 * MIB).is_none());
        assert_eq!(l.take(MIB), Some(0x1000_0000));
        assert_eq!(l.bytes(), 0);
        assert!(l.put(0x2000_0000, 8 * MIB, 8 * MIB).is_none());
        assert_eq!(
            l.put(0x3000_0000, 9 * MIB, 8 * MIB),
            Some(vec![0x3000_0000]),
            "larger than the room: not kept"
        );
        assert_eq!(l.drain(), vec![0x2000_0000]);
        assert_eq!(l.bytes(), 0);
    }

    #[test]
    fn the_largest_blocks_make_room() {
        let l = LargeBlocks::default();
        for (i, size) in [MIB, 4 * MIB, 2 * MIB, MIB].into_iter().enumerate() {
            assert!(l.put(0x1000 * (i as u64 + 1), size, 8 * MIB).is_none());
        }
        assert_eq!(l.bytes(), 8 * MIB);
        // 3 MiB more: the 4 MiB block goes.
        assert_eq!(l.put(0x9000, 3 * MIB, 8 * MIB), Some(vec![0x2000]));
        assert_eq!(l.bytes(), 7 * MIB);
        // A smaller room (the device's bound shrank): everything else goes first.
        let mut out = l.put(0xa000, 2 * MIB, 2 * MIB).unwrap();
        out.sort();
        assert_eq!(out, vec![0x1000, 0x3000, 0x4000, 0x9000]);
        assert_eq!(l.bytes(), 2 * MIB);
        assert_eq!(l.take(2 * MIB), Some(0xa000));
        // No room at all: nothing is kept.
        assert_eq!(l.put(0xb000, GRANULE, 0), Some(vec![0xb000]));
        assert_eq!(l.bytes(), 0);
    }
}
