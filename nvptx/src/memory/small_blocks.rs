//! A cache of small device blocks. libgomp allocates a small block for every mapped
//! region (the target-variable table, the OpenACC pointer block) and frees it right
//! after; serving those from per-size free lists makes alloc and free a few list
//! operations with no driver call. Blocks are carved from chunks taken from the
//! device's allocator and kept until the device closes.
//!
//! Classes are powers of two from 256 bytes (CUDA's allocation alignment, which every
//! block keeps) to [`MAX_SMALL`]. A block is reused as soon as it is freed: libgomp
//! frees blocks only after the work using them has completed.

use crate::cuda::sys::CUdeviceptr;
use gomp_plugin::error::Result;
use std::sync::Mutex;

/// Largest request served from the cache.
pub const MAX_SMALL: usize = 64 << 10;
const MIN_SHIFT: u32 = 8;
const CLASSES: usize = (MAX_SMALL.trailing_zeros() - MIN_SHIFT + 1) as usize;
/// Smallest chunk carved into blocks.
const MIN_CHUNK: usize = 64 << 10;
/// Blocks per chunk for the largest classes.
const BLOCKS_PER_CHUNK: usize = 16;

/// The class of a request of `size` bytes, or `None` if it is not small.
fn class_of(size: usize) -> Option<usize> {
    (size <= MAX_SMALL).then(|| {
        let bytes = size.max(1 << MIN_SHIFT).next_power_of_two();
        (bytes.trailing_zeros() - MIN_SHIFT) as usize
    })
}

fn class_bytes(class: usize) -> usize {
    1 << (class as u32 + MIN_SHIFT)
}

/// Free small blocks of one device, by class, and the chunks they came from.
/// Thread-safe.
#[derive(Default)]
pub struct SmallBlocks {
    free: Mutex<[Vec<CUdeviceptr>; CLASSES]>,
    chunks: Mutex<Vec<CUdeviceptr>>,
}

impl SmallBlocks {
    /// A block for `size` bytes, or `None` if `size` is not small. A class with no free
    /// block gets a new chunk from `chunk(bytes)`.
    pub fn take(
        &self,
        size: usize,
        chunk: impl FnOnce(usize) -> Result<CUdeviceptr>,
    ) -> Option<Result<CUdeviceptr>> {
        let class = class_of(size)?;
        if let Some(p) = self.free.lock().unwrap_or_else(|e| e.into_inner())[class].pop() {
            return Some(Ok(p));
        }
        let block = class_bytes(class);
        let bytes = (block * BLOCKS_PER_CHUNK).max(MIN_CHUNK);
        let base = match chunk(bytes) {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        self.chunks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(base);
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free[class].extend((1..bytes / block).rev().map(|i| base + (i * block) as u64));
        Some(Ok(base))
    }

    /// Takes back block `p` of a request of `size` bytes; false if `size` is not small
    /// (the block came from elsewhere).
    pub fn give(&self, p: CUdeviceptr, size: usize) -> bool {
        match class_of(size) {
            Some(class) => {
                self.free.lock().unwrap_or_else(|e| e.into_inner())[class].push(p);
                true
            }
            None => false,
        }
    }

    /// Forgets every block and returns the chunks, for the device to free at close.
    pub fn drain_chunks(&self) -> Vec<CUdeviceptr> {
        for v in self
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter_mut()
        {
            v.clear();
        }
        std::mem::take(&mut *self.chunks.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(class_of(0), Some(0));
        assert_eq!(class_of(256), Some(0));
        assert_eq!(class_of(257), Some(1));
        assert_eq!(class_of(MAX_SMALL), Some(CLASSES - 1));
        assert_eq!(class_of(MAX_SMALL + 1), None);
    }

    #[test]
    fn blocks_are_carved_aligned_and_reused() {
        let s = SmallBlocks::default();
        let chunks = std::cell::Cell::new(0);
        let next = std::cell::Cell::new(0x10_0000u64);
        let carve = |bytes: usize| {
            chunks.set(chunks.get() + 1);
            let b = next.get();
            next.set(b + bytes as u64);
            Ok(b)
        };
        let a = s.take(39, carve).unwrap().unwrap();
        let b = s.take(39, carve).unwrap().unwrap();
        assert_eq!(chunks.get(), 1);
        assert_eq!((a, b), (0x10_0000, 0x10_0100));
        assert!(s.take(MAX_SMALL + 1, carve).is_none());
        assert!(s.give(a, 39));
        assert_eq!(s.take(100, carve).unwrap().unwrap(), a);
        let big = s.take(MAX_SMALL, carve).unwrap().unwrap();
        assert_eq!(big % MAX_SMALL as u64, 0);
        assert_eq!(chunks.get(), 2);
        assert!(!s.give(0x99, MAX_SMALL + 1));
        assert_eq!(s.drain_chunks().len(), 2);
    }
}
