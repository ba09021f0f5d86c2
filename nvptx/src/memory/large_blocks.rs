//! A bounded cache of freed large device blocks (above the small-block sizes), reused
//! for requests of the same rounded size: `omp_target_alloc`/`omp_target_free` or a
//! map/unmap of the same array in a loop then costs no driver call. Sizes are rounded
//! up to [`GRANULE`]; at most [`CAP`] bytes are kept, and the cache is emptied when an
//! allocation runs out of memory and at device close.

use crate::cuda::sys::CUdeviceptr;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Rounding of cached sizes.
pub const GRANULE: usize = 64 << 10;
/// Most bytes kept in the cache.
pub const CAP: usize = 512 << 20;

/// The size a large request is allocated (and cached) with.
pub fn rounded(size: usize) -> usize {
    size.max(1).next_multiple_of(GRANULE)
}

#[derive(Default)]
struct Cached {
    by_size: BTreeMap<usize, Vec<CUdeviceptr>>,
    bytes: usize,
}

/// Freed large blocks of one device, by rounded size. Thread-safe.
#[derive(Default)]
pub struct LargeBlocks {
    cached: Mutex<Cached>,
}

impl LargeBlocks {
    /// A cached block of `rounded` bytes, if there is one.
    pub fn take(&self, rounded: usize) -> Option<CUdeviceptr> {
        let mut c = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        let p = c.by_size.get_mut(&rounded)?.pop()?;
        c.bytes -= rounded;
        Some(p)
    }

    /// Keeps freed block `p` of `rounded` bytes if the cache has room; false if the
    /// caller must free it.
    pub fn put(&self, p: CUdeviceptr, rounded: usize) -> bool {
        let mut c = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        if c.bytes + rounded > CAP {
            return false;
        }
        c.bytes += rounded;
        c.by_size.entry(rounded).or_default().push(p);
        true
    }

    /// Empties the cache; the caller frees the blocks returned.
    pub fn drain(&self) -> Vec<CUdeviceptr> {
        let mut c = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        c.bytes = 0;
        std::mem::take(&mut c.by_size)
            .into_values()
            .flatten()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_by_rounded_size_within_the_cap() {
        let l = LargeBlocks::default();
        assert_eq!(rounded(1 << 20), 1 << 20);
        assert_eq!(rounded((1 << 20) + 1), (1 << 20) + GRANULE);
        assert!(l.take(1 << 20).is_none());
        assert!(l.put(0x1000_0000, 1 << 20));
        assert!(l.take(2 << 20).is_none());
        assert_eq!(l.take(1 << 20), Some(0x1000_0000));
        assert!(l.put(0x2000_0000, CAP));
        assert!(!l.put(0x3000_0000, GRANULE), "over the cap");
        assert_eq!(l.drain(), vec![0x2000_0000]);
        assert!(l.put(0x3000_0000, GRANULE));
    }
}
