//! A cache of small device blocks. libgomp allocates a small block for every mapped
//! region (the target-variable table, the OpenACC pointer block) and frees it right
//! after; serving those from per-size free lists makes alloc and free a few list
//! operations with no driver call. Blocks are carved from chunks taken from the
//! device's allocator; a chunk whose blocks are all free again is kept while the
//! empty chunks fit the room the caller gives (its share of `GOMP_NVPTX_DEVICE_CACHE`),
//! else handed back to be freed. Chunks that still hold a live block stay.
//!
//! Classes are powers of two from 256 bytes (CUDA's allocation alignment, which every
//! block keeps) to [`MAX_SMALL`]. A block is reused as soon as it is freed: libgomp
//! frees blocks only after the work using them has completed.
//!
//! The free lists are the framework's [`FreeLists`]: handing a chunk back costs no
//! scan of the lists.

use crate::cuda::sys::CUdeviceptr;
use crate::device_pool::free_lists::FreeLists;
use gomp_plugin::error::Result;
use gomp_plugin::sync::Lock;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Largest request served from the cache.
pub const MAX_SMALL: usize = 64 << 10;
const MIN_SHIFT: u32 = 8;
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

/// The bytes of a chunk of `class`.
fn chunk_bytes(class: usize) -> usize {
    (class_bytes(class) * BLOCKS_PER_CHUNK).max(MIN_CHUNK)
}

/// A chunk of blocks of one class.
struct Chunk {
    base: CUdeviceptr,
    class: usize,
    /// Blocks handed out.
    live: usize,
}

#[derive(Default)]
struct State {
    /// Free blocks by class, and the chunks.
    free: FreeLists<CUdeviceptr, Chunk>,
    by_base: BTreeMap<CUdeviceptr, u32>,
    /// Bytes of free blocks (of live chunks).
    free_bytes: usize,
    /// Bytes of chunks with no live block.
    empty_bytes: usize,
}

impl State {
    fn pop(&mut self, class: usize) -> Option<CUdeviceptr> {
        let (p, slot) = self.free.pop(class)?;
        let s = self.free.chunk_mut(slot);
        s.live += 1;
        if s.live == 1 {
            self.empty_bytes -= chunk_bytes(class);
        }
        self.free_bytes -= class_bytes(class);
        Some(p)
    }

    /// Registers a fresh chunk of `class` at `base` whose first block is handed out.
    fn add_chunk(&mut self, class: usize, base: CUdeviceptr) {
        let slot = self.free.open(Chunk {
            base,
            class,
            live: 1,
        });
        self.by_base.insert(base, slot);
        let block = class_bytes(class);
        let n = chunk_bytes(class) / block;
        for i in (1..n).rev() {
            self.free.push(class, base + (i * block) as u64, slot);
        }
        self.free_bytes += (n - 1) * block;
    }

    /// Forgets chunk `slot` (no live block): its entries become stale.
    fn remove_chunk(&mut self, slot: u32) -> CUdeviceptr {
        let class = self.free.chunk(slot).class;
        let bytes = chunk_bytes(class);
        let base = self.free.close(slot, bytes / class_bytes(class)).base;
        self.by_base.remove(&base);
        self.empty_bytes -= bytes;
        self.free_bytes -= bytes;
        base
    }
}

/// What [`SmallBlocks::give`] did with a block.
#[derive(Debug, PartialEq, Eq)]
pub enum Given {
    /// Not a small block: it came from elsewhere.
    NotSmall,
    /// Back in its free list.
    Kept,
    /// Back in its free list, and its chunk, now empty and over the room, is handed
    /// back: the caller frees this chunk.
    Release(CUdeviceptr),
}

/// Free small blocks of one device, by class, and the chunks they came from.
/// Thread-safe (one lock, never held across the chunk allocator).
#[derive(Default)]
pub struct SmallBlocks {
    state: Mutex<State>,
    /// `State::empty_bytes`, readable without the lock.
    empty: AtomicUsize,
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
        {
            let mut st = self.state.locked();
            if let Some(p) = st.pop(class) {
                self.empty.store(st.empty_bytes, Ordering::Relaxed);
                return Some(Ok(p));
            }
        }
        let base = match chunk(chunk_bytes(class)) {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        self.state.locked().add_chunk(class, base);
        Some(Ok(base))
    }

    /// Takes back block `p` of a request of `size` bytes. A chunk left with no live
    /// block is kept while the empty chunks total at most `room` bytes, else handed
    /// back ([`Given::Release`]).
    pub fn give(&self, p: CUdeviceptr, size: usize, room: usize) -> Given {
        let Some(class) = class_of(size) else {
            return Given::NotSmall;
        };
        let mut st = self.state.locked();
        let Some((_, &slot)) = st.by_base.range(..=p).next_back() else {
            // Not from a chunk (cannot happen for a block `take` handed out).
            return Given::NotSmall;
        };
        let s = st.free.chunk_mut(slot);
        debug_assert!(s.class == class && p - s.base < chunk_bytes(class) as u64);
        s.live -= 1;
        let empty = s.live == 0;
        st.free.push(class, p, slot);
        st.free_bytes += class_bytes(class);
        let mut out = Given::Kept;
        if empty {
            st.empty_bytes += chunk_bytes(class);
            if st.empty_bytes > room {
                out = Given::Release(st.remove_chunk(slot));
            }
        }
        self.empty.store(st.empty_bytes, Ordering::Relaxed);
        out
    }

    /// Bytes of chunks with no live block (a relaxed read).
    pub fn empty_bytes(&self) -> usize {
        self.empty.load(Ordering::Relaxed)
    }

    /// Bytes of free blocks: what the cache holds that the program could allocate.
    pub fn free_bytes(&self) -> usize {
        self.state.locked().free_bytes
    }

    /// Hands back every chunk with no live block (on out-of-memory); the caller frees them.
    pub fn drain_empty(&self) -> Vec<CUdeviceptr> {
        let mut st = self.state.locked();
        let empty = st.free.held_where(|c| c.live == 0);
        let out = empty.into_iter().map(|i| st.remove_chunk(i)).collect();
        self.empty.store(st.empty_bytes, Ordering::Relaxed);
        out
    }

    /// Forgets every block and returns the chunks, for the device to free at close.
    pub fn drain_chunks(&self) -> Vec<CUdeviceptr> {
        let st = std::mem::take(&mut *self.state.locked());
        self.empty.store(0, Ordering::Relaxed);
        st.by_base.into_keys().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// The number of classes.
    const CLASSES: usize = (MAX_SMALL.trailing_zeros() - MIN_SHIFT + 1) as usize;

    #[test]
    fn classes() {
        assert_eq!(class_of(0), Some(0));
        assert_eq!(class_of(256), Some(0));
        assert_eq!(class_of(257), Some(1));
        assert_eq!(class_of(MAX_SMALL), Some(CLASSES - 1));
        assert_eq!(class_of(MAX_SMALL + 1), None);
        assert_eq!(chunk_bytes(0), MIN_CHUNK);
        assert_eq!(chunk_bytes(CLASSES - 1), MAX_SMALL * BLOCKS_PER_CHUNK);
    }

    /// A chunk allocator handing out consecutive addresses, counting its calls.
    struct Carver {
        chunks: Cell<usize>,
        next: Cell<u64>,
    }

    impl Carver {
        fn new() -> Carver {
            Carver {
                chunks: Cell::new(0),
                next: Cell::new(0x10_0000),
            }
        }
        fn carve(&self) -> impl FnOnce(usize) -> Result<CUdeviceptr> + '_ {
            move |bytes| {
                self.chunks.set(self.chunks.get() + 1);
                let b = self.next.get();
                self.next.set(b + bytes as u64);
                Ok(b)
            }
        }
    }

    const ROOM: usize = 1 << 30;

    #[test]
    fn blocks_are_carved_aligned_and_reused() {
        let s = SmallBlocks::default();
        let c = Carver::new();
        let a = s.take(39, c.carve()).unwrap().unwrap();
        let b = s.take(39, c.carve()).unwrap().unwrap();
        assert_eq!(c.chunks.get(), 1);
        assert_eq!((a, b), (0x10_0000, 0x10_0100));
        assert_eq!(s.free_bytes(), MIN_CHUNK - 512);
        assert!(s.take(MAX_SMALL + 1, c.carve()).is_none());
        assert_eq!(s.give(a, 39, ROOM), Given::Kept);
        assert_eq!(s.take(100, c.carve()).unwrap().unwrap(), a);
        let big = s.take(MAX_SMALL, c.carve()).unwrap().unwrap();
        assert_eq!(big % MAX_SMALL as u64, 0);
        assert_eq!(c.chunks.get(), 2);
        assert_eq!(s.give(0x99, MAX_SMALL + 1, ROOM), Given::NotSmall);
        assert_eq!(s.empty_bytes(), 0);
        assert_eq!(s.drain_chunks().len(), 2);
        assert_eq!((s.free_bytes(), s.empty_bytes()), (0, 0));
    }

    #[test]
    fn empty_chunks_beyond_the_room_are_handed_back() {
        let s = SmallBlocks::default();
        let c = Carver::new();
        let chunk = chunk_bytes(CLASSES - 1);
        // Three chunks of the largest class, full.
        let ps: Vec<_> = (0..3 * BLOCKS_PER_CHUNK)
            .map(|_| s.take(MAX_SMALL, c.carve()).unwrap().unwrap())
            .collect();
        assert_eq!(c.chunks.get(), 3);
        assert_eq!(s.free_bytes(), 0);
        // Free them all with room for one empty chunk: two are handed back.
        let mut released = Vec::new();
        for &p in &ps {
            match s.give(p, MAX_SMALL, chunk) {
                Given::Kept => {}
                Given::Release(b) => released.push(b),
                Given::NotSmall => panic!("a small block"),
            }
        }
        assert_eq!(released.len(), 2, "{released:?}");
        assert_eq!(s.empty_bytes(), chunk);
        assert_eq!(s.free_bytes(), chunk);
        // The kept chunk serves the next requests; nothing of the others comes back.
        let again: Vec<_> = (0..BLOCKS_PER_CHUNK)
            .map(|_| s.take(MAX_SMALL, c.carve()).unwrap().unwrap())
            .collect();
        assert_eq!(c.chunks.get(), 3, "served by the kept chunk");
        assert!(again
            .iter()
            .all(|p| !released.iter().any(|b| p.wrapping_sub(*b) < chunk as u64)));
        assert_eq!((s.empty_bytes(), s.free_bytes()), (0, 0));
        // A chunk handed back leaves no stale block behind: the next request carves anew.
        let next = s.take(MAX_SMALL, c.carve()).unwrap().unwrap();
        assert_eq!(c.chunks.get(), 4);
        let released_now = again
            .iter()
            .filter(|&&p| matches!(s.give(p, MAX_SMALL, 0), Given::Release(_)))
            .count();
        assert_eq!(released_now, 1, "no room: the kept chunk goes once empty");
        assert!(matches!(s.give(next, MAX_SMALL, 0), Given::Release(_)));
        assert_eq!(s.drain_empty().len(), 0);
        assert_eq!((s.empty_bytes(), s.free_bytes()), (0, 0));
    }

    #[test]
    fn a_slot_reused_after_hand_back_ignores_the_old_entries() {
        let s = SmallBlocks::default();
        let c = Carver::new();
        // A chunk with many free blocks, so the stale entries are not compacted.
        let _keep = s.take(1, c.carve()).unwrap().unwrap();
        let a = s.take(300, c.carve()).unwrap().unwrap();
        let Given::Release(base) = s.give(a, 300, 0) else {
            panic!("no room: handed back");
        };
        assert_eq!(base, a);
        // The same address comes back from the allocator for another class.
        c.next.set(base);
        let b = s.take(5000, c.carve()).unwrap().unwrap();
        assert_eq!(b, base);
        let b2 = s.take(5000, c.carve()).unwrap().unwrap();
        assert_eq!(b2, base + 8192);
        // The 512-byte class has only stale entries: a new chunk, not a block inside
        // `b`'s chunk.
        let d = s.take(300, c.carve()).unwrap().unwrap();
        assert_eq!(d, base + chunk_bytes(class_of(5000).unwrap()) as u64);
        assert_eq!(c.chunks.get(), 4);
    }

    #[test]
    fn many_chunks_freed_in_any_order() {
        let s = SmallBlocks::default();
        let c = Carver::new();
        let mut ps: Vec<_> = (0..4000)
            .map(|i| s.take(256 << (i % 9), c.carve()).unwrap().unwrap())
            .zip((0..4000).map(|i| 256usize << (i % 9)))
            .collect();
        // Free in a scrambled order with a small room: most chunks are handed back.
        ps.sort_by_key(|&(p, _)| p.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut released = 0;
        for &(p, size) in &ps {
            if let Given::Release(_) = s.give(p, size, 1 << 20) {
                released += 1;
            }
        }
        let chunks = c.chunks.get();
        assert!(released > 0 && released < chunks);
        assert!(s.empty_bytes() <= 1 << 20);
        assert_eq!(s.free_bytes(), s.empty_bytes(), "every block is free");
        assert_eq!(s.drain_chunks().len(), chunks - released);
    }
}
