//! A pool of page-locked host memory for `page_locked_host_alloc` (libgomp 16's pinned
//! allocator), so that `omp_alloc` on a pinned allocator does not pay a
//! `cuMemHostAlloc` (a slow driver call, even for 4 KiB) per request.
//!
//! - Small requests (up to [`SMALL_MAX`]) are rounded up to one of [`NCLASSES`] size
//!   classes (multiples of 64 bytes, four per power of two) and carved from shared
//!   chunks; a freed block goes to its class's free list and is reused by the next
//!   request of that class. Blocks are 64-byte aligned.
//! - Chunks grow: a shard's first chunk is small ([`Shape::first_chunk`], at least the
//!   request's block), each later one [`GROWTH`] times the previous, up to [`CHUNK`].
//!   Pinning costs time by the byte, so the first small request (which waits for its
//!   chunk) pins little, and a program that uses a few blocks holds little.
//! - Small blocks live in *shards* ([`Shape::shards`]), each with its own lock, free
//!   lists and chunks; a thread allocates from its own shard (threads are spread over
//!   the shards in the order they first allocate), so threads allocating at once do
//!   not queue on one lock. A free goes to the shard that holds the block: the freeing
//!   thread's own first (the usual case: the thread that allocated it), then the
//!   others.
//! - Large requests get their own allocation, rounded up to [`LARGE_GRANULE`] (page-aligned);
//!   freed ones are kept for a request of the same rounded size (one lock for them all).
//! - What the pool keeps unused is bounded (`bound`, `GOMP_NVPTX_PINNED_CACHE`): cached
//!   large blocks and chunks with no live block together stay within it, the chunks
//!   always allowed one [`CHUNK`] of it (so a single small block allocated and freed in
//!   a loop costs no driver call). A free that would go beyond gives memory back to the
//!   source before it returns (the largest cached blocks first, or the chunk it
//!   emptied); chunks that still hold a live block stay. When the source runs out of
//!   memory, everything unused is given back and the allocation retried; at
//!   [`PinnedPool::destroy`] (device close) everything goes back.
//!
//! The free lists are the framework's [`FreeLists`]: giving a chunk back costs no scan
//! of the lists.
//!
//! The memory comes from a [`ChunkSource`] (the CUDA driver in production, `std::alloc`
//! in the unit tests), so the bookkeeping is tested without a GPU.

use crate::device_pool::free_lists::FreeLists;
use crate::device_pool::size_cache::SizeCache;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::sync::Lock;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Bytes of the largest small-block chunk (`GOMP_NVPTX_TUNE`'s `pinnedchunk` bound), and
/// the default first chunk of a shard: settings, kept in `crate::config::tune`.
pub use crate::config::tune::{DEFAULT_PINNED_CHUNK as FIRST_CHUNK, PINNED_CHUNK_MAX as CHUNK};
/// Each chunk of a shard is this many times its previous one (up to [`CHUNK`]).
pub const GROWTH: usize = 4;
/// Largest request served from chunks.
pub const SMALL_MAX: usize = 256 << 10;
/// Rounding of large requests (a multiple of the page size).
pub const LARGE_GRANULE: usize = 64 << 10;
/// Alignment of every block.
pub const ALIGN: usize = 64;
/// Number of small size classes.
pub const NCLASSES: usize = 44;
/// The page size chunks are rounded to.
const PAGE: usize = 4096;
/// Most shards (`GOMP_NVPTX_TUNE`'s `pinnedshards` bound, kept in `crate::config::tune`).
pub use crate::config::tune::PINNED_SHARDS_MAX as MAX_SHARDS;

/// Where the pool's memory comes from. Called without the pool's locks held, from any
/// thread that allocates or frees.
pub trait ChunkSource {
    /// `bytes` (a multiple of 4096) of page-aligned page-locked memory; `Ok(None)` when
    /// out of memory.
    fn alloc(&self, bytes: usize) -> Result<Option<usize>>;
    /// Gives back memory from [`ChunkSource::alloc`] (`bytes` as allocated).
    fn free(&self, p: usize, bytes: usize) -> Result<()>;
}

/// The size class of a request of `size` bytes (`None` above [`SMALL_MAX`]).
pub fn class_of(size: usize) -> Option<usize> {
    let s = size.max(1);
    if s > SMALL_MAX {
        return None;
    }
    if s <= 256 {
        return Some(s.div_ceil(ALIGN) - 1);
    }
    // p < s <= 2p, p a power of two >= 256; four classes per doubling.
    let shift = (usize::BITS - 1 - (s - 1).leading_zeros()) as usize;
    let p = 1usize << shift;
    let steps = (s - p).div_ceil(p / 4);
    Some(4 + (shift - 8) * 4 + steps - 1)
}

/// The block size of class `c`.
pub fn class_size(c: usize) -> usize {
    if c < 4 {
        return (c + 1) * ALIGN;
    }
    let j = c - 4;
    let p = 1usize << (8 + j / 4);
    p + (j % 4 + 1) * (p / 4)
}

/// The size a large request is allocated (and cached) with.
pub fn large_size(size: usize) -> usize {
    size.next_multiple_of(LARGE_GRANULE)
}

/// How a pool lays out its small blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Bytes of a shard's first chunk (a page multiple, at most [`CHUNK`]).
    pub first_chunk: usize,
    /// Shards of small blocks, 1..=[`MAX_SHARDS`].
    pub shards: usize,
}

impl Default for Shape {
    /// [`FIRST_CHUNK`], and a shard per processor up to 16.
    fn default() -> Self {
        Shape {
            first_chunk: FIRST_CHUNK,
            shards: crate::config::tune::default_pinned_shards(),
        }
    }
}

impl Shape {
    /// The shape within its limits.
    fn clamped(self) -> Shape {
        Shape {
            first_chunk: self.first_chunk.clamp(PAGE, CHUNK).next_multiple_of(PAGE),
            shards: self.shards.clamp(1, MAX_SHARDS),
        }
    }
}

/// The calling thread's shard number among `n` (threads take 0, 1, 2, ... in the order
/// they first ask; the same number for every pool).
fn thread_shard(n: usize) -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static MINE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    let i = MINE.with(|m| {
        if m.get() == usize::MAX {
            m.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        m.get()
    });
    i % n
}

/// A chunk of small blocks.
struct Chunk {
    base: usize,
    bytes: usize,
    /// Blocks handed out.
    live: usize,
    /// Blocks carved from the chunk so far (each is live or in a free list).
    carved: usize,
}

const NO_SLOT: u32 = u32::MAX;

/// The small blocks of one shard.
struct Shard {
    /// Free small blocks by class, and the chunks.
    free: FreeLists<usize, Chunk>,
    /// The chunk being carved: next free byte, end, slot.
    bump: (usize, usize, u32),
    /// Live blocks: class and chunk slot.
    live: HashMap<usize, (usize, u32)>,
    /// Bytes of the next chunk.
    next_chunk: usize,
}

/// The large blocks.
#[derive(Default)]
struct Large {
    live: HashMap<usize, usize>,
    /// Freed large blocks kept for reuse.
    cached: SizeCache<usize>,
}

impl Shard {
    fn new(first_chunk: usize) -> Shard {
        Shard {
            free: FreeLists::default(),
            bump: (0, 0, NO_SLOT),
            live: HashMap::new(),
            next_chunk: first_chunk,
        }
    }

    /// Marks a block of chunk `slot` handed out.
    fn hand_out(&mut self, slot: u32, empty: &AtomicUsize) {
        let s = self.free.chunk_mut(slot);
        s.live += 1;
        if s.live == 1 {
            empty.fetch_sub(s.bytes, Ordering::Relaxed);
        }
    }

    #[inline]
    fn take_small(&mut self, c: usize, empty: &AtomicUsize) -> Option<usize> {
        let (p, slot) = match self.free.pop(c) {
            Some(x) => x,
            None => {
                let (at, end, slot) = self.bump;
                let size = class_size(c);
                if slot == NO_SLOT || end - at < size {
                    return None;
                }
                self.bump.0 = at + size;
                self.free.chunk_mut(slot).carved += 1;
                (at, slot)
            }
        };
        self.hand_out(slot, empty);
        self.live.insert(p, (c, slot));
        Some(p)
    }

    /// The bytes of the chunk to allocate for a block of class `c`.
    fn chunk_for(&self, c: usize) -> usize {
        self.next_chunk.max(class_size(c).next_multiple_of(PAGE))
    }

    /// Hands the rest of the current chunk to the free lists (largest classes first)
    /// and starts carving `chunk` (`bytes` long).
    fn new_chunk(&mut self, chunk: usize, bytes: usize, empty: &AtomicUsize) {
        let (mut at, end, old) = self.bump;
        while old != NO_SLOT && end - at >= ALIGN {
            let c = class_of(end - at).map_or(NCLASSES - 1, |c| {
                if class_size(c) > end - at {
                    c - 1
                } else {
                    c
                }
            });
            self.free.push(c, at, old);
            self.free.chunk_mut(old).carved += 1;
            at += class_size(c);
        }
        let slot = self.free.open(Chunk {
            base: chunk,
            bytes,
            live: 0,
            carved: 0,
        });
        empty.fetch_add(bytes, Ordering::Relaxed);
        self.bump = (chunk, chunk + bytes, slot);
        self.next_chunk = self.next_chunk.max(bytes.saturating_mul(GROWTH)).min(CHUNK);
    }

    /// Forgets chunk `slot` (no live block) and returns its address and bytes: its
    /// entries become stale.
    fn remove_chunk(&mut self, slot: u32, empty: &AtomicUsize) -> (usize, usize) {
        let carved = self.free.chunk(slot).carved;
        let c = self.free.close(slot, carved);
        let (base, bytes) = (c.base, c.bytes);
        empty.fetch_sub(bytes, Ordering::Relaxed);
        if self.bump.2 == slot {
            self.bump = (0, 0, NO_SLOT);
        }
        (base, bytes)
    }

    /// Bytes of the chunks held.
    fn chunk_bytes(&self) -> usize {
        self.free
            .held_where(|_| true)
            .into_iter()
            .map(|i| self.free.chunk(i).bytes)
            .sum()
    }
}

/// The pinned pool of one device. Thread-safe (a lock per shard and one for the large
/// blocks, never held across a call to the source, never two at once); owns the memory
/// it got from the source until it gives it back.
pub struct PinnedPool<S: ChunkSource> {
    source: S,
    /// Most bytes kept unused (cached large blocks and empty chunks).
    bound: usize,
    shape: Shape,
    shards: Box<[Mutex<Shard>]>,
    large: Mutex<Large>,
    /// Bytes of chunks with no live block, over every shard.
    empty: AtomicUsize,
    /// Bytes of cached large blocks (as `large.cached` holds them).
    cached: AtomicUsize,
}

impl<S: ChunkSource> PinnedPool<S> {
    /// An empty pool drawing on `source`, keeping at most `bound` bytes unused, of the
    /// default [`Shape`].
    pub fn new(source: S, bound: usize) -> Self {
        Self::with_shape(source, bound, Shape::default())
    }

    /// An empty pool of shape `shape` (clamped to its limits).
    pub fn with_shape(source: S, bound: usize, shape: Shape) -> Self {
        let shape = shape.clamped();
        PinnedPool {
            source,
            bound,
            shape,
            shards: (0..shape.shards)
                .map(|_| Mutex::new(Shard::new(shape.first_chunk)))
                .collect(),
            large: Mutex::new(Large::default()),
            empty: AtomicUsize::new(0),
            cached: AtomicUsize::new(0),
        }
    }

    /// The pool's shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The empty chunks the pool may always keep.
    fn floor(&self) -> usize {
        CHUNK.min(self.bound)
    }

    fn my_shard(&self) -> usize {
        thread_shard(self.shards.len())
    }

    /// A block of at least `size` bytes, 64-byte aligned (page-aligned when larger than
    /// [`SMALL_MAX`]). `Ok(None)` for size 0 and when out of memory.
    pub fn alloc(&self, size: usize) -> Result<Option<usize>> {
        if size == 0 {
            return Ok(None);
        }
        match class_of(size) {
            Some(c) => self.alloc_small(c),
            None => self.alloc_large(large_size(size)),
        }
    }

    fn alloc_small(&self, c: usize) -> Result<Option<usize>> {
        let shard = &self.shards[self.my_shard()];
        let bytes = {
            let mut sh = shard.locked();
            if let Some(p) = sh.take_small(c, &self.empty) {
                return Ok(Some(p));
            }
            sh.chunk_for(c)
        };
        let Some(chunk) = self.source_alloc(bytes)? else {
            return Ok(None);
        };
        let mut sh = shard.locked();
        sh.new_chunk(chunk, bytes, &self.empty);
        let p = sh
            .take_small(c, &self.empty)
            .expect("a fresh chunk holds its block");
        Ok(Some(p))
    }

    fn alloc_large(&self, bytes: usize) -> Result<Option<usize>> {
        let cached = {
            let mut l = self.large.locked();
            let p = l.cached.take(bytes);
            self.cached.store(l.cached.bytes(), Ordering::Relaxed);
            p
        };
        let p = match cached {
            Some(p) => p,
            None => match self.source_alloc(bytes)? {
                Some(p) => p,
                None => return Ok(None),
            },
        };
        self.large.locked().live.insert(p, bytes);
        Ok(Some(p))
    }

    /// The source's allocation; on out-of-memory everything unused is given back and
    /// the allocation retried once.
    fn source_alloc(&self, bytes: usize) -> Result<Option<usize>> {
        if let Some(p) = self.source.alloc(bytes)? {
            return Ok(Some(p));
        }
        if self.trim()? == 0 {
            return Ok(None);
        }
        self.source.alloc(bytes)
    }

    /// Gives the cached large blocks and the chunks with no live block back to the
    /// source; returns how many bytes.
    pub fn trim(&self) -> Result<usize> {
        let mut out = {
            let mut l = self.large.locked();
            let out = l.cached.drain();
            self.cached.store(0, Ordering::Relaxed);
            out
        };
        for shard in self.shards.iter() {
            let mut sh = shard.locked();
            let empty = sh.free.held_where(|c| c.live == 0);
            out.extend(empty.into_iter().map(|i| sh.remove_chunk(i, &self.empty)));
        }
        self.give_back(&out)?;
        Ok(out.iter().map(|&(_, b)| b).sum())
    }

    /// Frees `blocks` (address, bytes) to the source; the first error after trying all.
    fn give_back(&self, blocks: &[(usize, usize)]) -> Result<()> {
        let mut first = Ok(());
        for &(p, b) in blocks {
            if let Err(e) = self.source.free(p, b) {
                first = first.and(Err(e));
            }
        }
        first
    }

    /// Frees a block from [`PinnedPool::alloc`]. NULL is accepted; an address the pool
    /// did not hand out (or already freed) is an error. What the bound does not let the
    /// pool keep is given back to the source before this returns.
    pub fn free(&self, p: usize) -> Result<()> {
        if self.try_free(p)? {
            return Ok(());
        }
        Err(Error::invalid(format!(
            "page_locked_host_free: {p:#x} is not page-locked memory from page_locked_host_alloc"
        )))
    }

    /// [`PinnedPool::free`], answering `Ok(false)` (and changing nothing) for an address
    /// that is not a live block of the pool.
    pub fn try_free(&self, p: usize) -> Result<bool> {
        if p == 0 {
            return Ok(true);
        }
        let mine = self.my_shard();
        let mut out = self.free_small(mine, p);
        if out.is_none() {
            out = self.free_large(p);
        }
        for i in (0..self.shards.len()).filter(|&i| i != mine) {
            if out.is_some() {
                break;
            }
            out = self.free_small(i, p);
        }
        match out {
            None => Ok(false),
            Some(out) => self.give_back(&out).map(|()| true),
        }
    }

    /// Frees `p` if it is a live block of shard `i`: `None` if it is not, else what goes
    /// back to the source.
    fn free_small(&self, i: usize, p: usize) -> Option<Vec<(usize, usize)>> {
        let mut sh = self.shards[i].locked();
        let (class, slot) = sh.live.remove(&p)?;
        let s = sh.free.chunk_mut(slot);
        s.live -= 1;
        let (live, bytes) = (s.live, s.bytes);
        sh.free.push(class, p, slot);
        if live > 0 {
            return Some(Vec::new());
        }
        let empty = self.empty.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let room = self
            .bound
            .saturating_sub(self.cached.load(Ordering::Relaxed))
            .max(self.floor());
        if empty <= room {
            return Some(Vec::new());
        }
        Some(vec![sh.remove_chunk(slot, &self.empty)])
    }

    /// Frees `p` if it is a live large block: `None` if it is not, else what goes back
    /// to the source.
    fn free_large(&self, p: usize) -> Option<Vec<(usize, usize)>> {
        let mut l = self.large.locked();
        let bytes = l.live.remove(&p)?;
        let room = self
            .bound
            .saturating_sub(self.empty.load(Ordering::Relaxed).max(self.floor()));
        let out = l.cached.put(p, bytes, room);
        self.cached.store(l.cached.bytes(), Ordering::Relaxed);
        Some(out)
    }

    /// Whether `p` is a live block of the pool.
    pub fn owns(&self, p: usize) -> bool {
        let large = self.large.locked().live.contains_key(&p);
        large || self.shards.iter().any(|s| s.locked().live.contains_key(&p))
    }

    /// Bytes in the pool's chunks and large blocks (live or cached).
    pub fn footprint(&self) -> usize {
        let large = {
            let l = self.large.locked();
            l.cached.bytes() + l.live.values().sum::<usize>()
        };
        large
            + self
                .shards
                .iter()
                .map(|s| s.locked().chunk_bytes())
                .sum::<usize>()
    }

    /// Bytes the pool keeps unused and could give back: cached large blocks and chunks
    /// with no live block.
    pub fn unused(&self) -> usize {
        self.cached.load(Ordering::Relaxed) + self.empty.load(Ordering::Relaxed)
    }

    /// Gives everything back to the source (device close), live blocks included: libgomp
    /// frees no pinned memory after the device is finalized. The pool is empty and
    /// usable afterwards. Returns the first error, after trying every block.
    pub fn destroy(&self) -> Result<()> {
        let mut l = std::mem::take(&mut *self.large.locked());
        self.cached.store(0, Ordering::Relaxed);
        let mut live_small = 0;
        let mut all: Vec<(usize, usize)> = l.live.drain().collect();
        all.extend(l.cached.drain());
        for shard in self.shards.iter() {
            let sh = std::mem::replace(&mut *shard.locked(), Shard::new(self.shape.first_chunk));
            live_small += sh.live.len();
            all.extend(sh.free.into_held().map(|c| (c.base, c.bytes)));
        }
        self.empty.store(0, Ordering::Relaxed);
        if live_small > 0 {
            log::debug!("pinned pool: {live_small} small block(s) still allocated at device close");
        }
        self.give_back(&all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::Layout;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The default `GOMP_NVPTX_PINNED_CACHE`.
    const BOUND: usize = 256 << 20;
    const MIB: usize = 1 << 20;

    /// Page-aligned memory from the Rust allocator, with counters and an optional limit.
    #[derive(Default)]
    struct Malloc {
        allocs: AtomicUsize,
        frees: AtomicUsize,
        bytes: AtomicUsize,
        limit: Option<usize>,
        out: Mutex<HashMap<usize, usize>>,
    }

    impl ChunkSource for Malloc {
        fn alloc(&self, bytes: usize) -> Result<Option<usize>> {
            assert_eq!(bytes % 4096, 0);
            if self
                .limit
                .is_some_and(|l| self.bytes.load(Ordering::Relaxed) + bytes > l)
            {
                return Ok(None);
            }
            // SAFETY: non-zero size, valid alignment.
            let p = unsafe { std::alloc::alloc(Layout::from_size_align(bytes, 4096).unwrap()) };
            assert!(!p.is_null());
            self.allocs.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(bytes, Ordering::Relaxed);
            self.out.lock().unwrap().insert(p as usize, bytes);
            Ok(Some(p as usize))
        }

        fn free(&self, p: usize, bytes: usize) -> Result<()> {
            assert_eq!(self.out.lock().unwrap().remove(&p), Some(bytes));
            self.frees.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_sub(bytes, Ordering::Relaxed);
            // SAFETY: allocated above with this layout.
            unsafe {
                std::alloc::dealloc(p as *mut u8, Layout::from_size_align(bytes, 4096).unwrap())
            };
            Ok(())
        }
    }

    /// A pool of one shard whose chunks all have [`CHUNK`] bytes: the layout the
    /// bookkeeping tests count chunks in.
    fn old_layout(source: Malloc, bound: usize) -> PinnedPool<Malloc> {
        PinnedPool::with_shape(
            source,
            bound,
            Shape {
                first_chunk: CHUNK,
                shards: 1,
            },
        )
    }

    impl Malloc {
        /// The sizes of the pieces allocated and not freed, by address.
        fn pieces(&self) -> Vec<usize> {
            let mut v: Vec<(usize, usize)> = self.out.lock().unwrap().clone().into_iter().collect();
            v.sort();
            v.into_iter().map(|(_, b)| b).collect()
        }

        fn n(&self) -> (usize, usize) {
            (
                self.allocs.load(Ordering::Relaxed),
                self.frees.load(Ordering::Relaxed),
            )
        }
    }

    #[test]
    fn classes_cover_every_small_size() {
        assert_eq!(class_size(NCLASSES - 1), SMALL_MAX);
        assert_eq!(class_of(SMALL_MAX), Some(NCLASSES - 1));
        assert_eq!(class_of(SMALL_MAX + 1), None);
        let mut prev = 0;
        for c in 0..NCLASSES {
            let s = class_size(c);
            assert!(s > prev && s % ALIGN == 0, "class {c}: {s}");
            assert_eq!(class_of(s), Some(c));
            assert_eq!(class_of(prev + 1), Some(c), "{}", prev + 1);
            // Waste at most a quarter (past the first classes).
            if s > 256 {
                assert!((s - prev - 1) * 4 <= s, "class {c}");
            }
            prev = s;
        }
        assert_eq!(class_of(0), Some(0));
        assert_eq!(
            (0..6).map(class_size).collect::<Vec<_>>(),
            [64, 128, 192, 256, 320, 384]
        );
    }

    #[test]
    fn small_blocks_come_from_one_chunk_and_are_reused() {
        let pool = old_layout(Malloc::default(), BOUND);
        assert_eq!(pool.alloc(0).unwrap(), None);
        let mut ps = Vec::new();
        for size in [1, 64, 65, 4096, 4097, 100_000, SMALL_MAX] {
            let p = pool.alloc(size).unwrap().unwrap();
            assert_eq!(p % ALIGN, 0);
            // Usable: write every byte.
            // SAFETY: the block holds at least `size` bytes.
            unsafe { std::ptr::write_bytes(p as *mut u8, 0xab, size) };
            ps.push(p);
        }
        assert_eq!(pool.source.n(), (1, 0), "one chunk for all of them");
        let mut sorted = ps.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ps.len(), "distinct blocks");
        let q = ps[4];
        pool.free(q).unwrap();
        assert_eq!(
            pool.alloc(4100).unwrap(),
            Some(q),
            "same class reuses the block"
        );
        assert!(pool.free(q + 64).is_err(), "not a block start");
        pool.free(q).unwrap();
        assert!(pool.free(q).is_err(), "double free");
        pool.free(0).unwrap();
        pool.destroy().unwrap();
        assert_eq!(pool.source.n(), (1, 1));
    }

    #[test]
    fn chunks_are_added_and_their_tails_not_lost() {
        let pool = old_layout(Malloc::default(), BOUND);
        let n = CHUNK / SMALL_MAX;
        // n blocks fill chunk 1 exactly; one more starts chunk 2.
        let big: Vec<_> = (0..n + 1)
            .map(|_| pool.alloc(SMALL_MAX).unwrap().unwrap())
            .collect();
        assert_eq!(pool.source.n(), (2, 0));
        let chunk2 = big[n];
        let mut more: Vec<_> = (0..n - 2)
            .map(|_| pool.alloc(SMALL_MAX).unwrap().unwrap())
            .collect();
        // One 256 KiB slot left in chunk 2: a 224 KiB block leaves a 32 KiB tail, and
        // the next 256 KiB request opens chunk 3.
        let c224 = class_size(class_of(200 << 10).unwrap());
        assert_eq!(c224, 224 << 10);
        more.push(pool.alloc(200 << 10).unwrap().unwrap());
        more.push(pool.alloc(SMALL_MAX).unwrap().unwrap());
        assert_eq!(pool.source.n(), (3, 0));
        // The tail serves a 32 KiB request without a new chunk.
        let tail = pool.alloc(32 << 10).unwrap().unwrap();
        assert_eq!(tail, chunk2 + (n - 1) * SMALL_MAX + c224);
        assert_eq!(pool.source.n(), (3, 0));
        for p in big.iter().chain(&more).chain([&tail]) {
            pool.free(*p).unwrap();
        }
        assert_eq!(pool.footprint(), 3 * CHUNK);
        pool.destroy().unwrap();
        assert_eq!(pool.source.n(), (3, 3));
    }

    #[test]
    fn large_blocks_are_own_allocations_cached_by_size() {
        let pool = old_layout(Malloc::default(), BOUND);
        let p = pool.alloc(SMALL_MAX + 1).unwrap().unwrap();
        assert_eq!(p % 4096, 0);
        assert_eq!(pool.footprint(), large_size(SMALL_MAX + 1));
        pool.free(p).unwrap();
        assert_eq!(pool.alloc(SMALL_MAX + 100).unwrap(), Some(p), "cached");
        assert_eq!(pool.source.n(), (1, 0));
        let q = pool.alloc(1 << 20).unwrap().unwrap();
        assert_ne!(p, q);
        pool.free(q).unwrap();
        pool.free(p).unwrap();
        // Over the bound: given back at once.
        let r = pool.alloc(BOUND).unwrap().unwrap();
        pool.free(r).unwrap();
        assert_eq!(pool.source.n(), (3, 1));
        assert_eq!(pool.trim().unwrap(), large_size(SMALL_MAX + 1) + (1 << 20));
        assert_eq!(pool.source.n(), (3, 3));
        pool.destroy().unwrap();
    }

    #[test]
    fn out_of_memory_gives_null_after_trimming_the_cache() {
        let src = Malloc {
            limit: Some(CHUNK + (1 << 20)),
            ..Malloc::default()
        };
        let pool = old_layout(src, BOUND);
        let a = pool.alloc(2 << 20).unwrap().unwrap();
        pool.free(a).unwrap();
        // A chunk does not fit beside the cached 2 MiB block until the cache is trimmed.
        let s = pool.alloc(64).unwrap().unwrap();
        assert_eq!(pool.source.n(), (2, 1), "cache trimmed for the chunk");
        assert_eq!(pool.alloc(4 << 20).unwrap(), None, "out of memory: NULL");
        pool.free(s).unwrap();
        pool.destroy().unwrap();
        assert_eq!(pool.source.bytes.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn destroy_returns_live_blocks_too() {
        let pool = old_layout(Malloc::default(), BOUND);
        let _small = pool.alloc(100).unwrap().unwrap();
        let _large = pool.alloc(1 << 20).unwrap().unwrap();
        pool.destroy().unwrap();
        assert_eq!(pool.source.n(), (2, 2));
        assert!(pool.source.out.lock().unwrap().is_empty());
        // Usable again afterwards.
        let p = pool.alloc(100).unwrap().unwrap();
        pool.free(p).unwrap();
        pool.destroy().unwrap();
    }

    #[test]
    fn threads_get_distinct_writable_blocks() {
        let pool = PinnedPool::new(Malloc::default(), BOUND);
        std::thread::scope(|s| {
            for t in 0..8u8 {
                let pool = &pool;
                s.spawn(move || {
                    for i in 0..2000usize {
                        let size = 1 + (i * 7919 + t as usize * 104_729) % (SMALL_MAX * 2);
                        let p = pool.alloc(size).unwrap().unwrap();
                        // SAFETY: `size` bytes are ours until freed.
                        unsafe {
                            std::ptr::write_bytes(p as *mut u8, t, size);
                            assert!((0..size)
                                .step_by(997)
                                .all(|k| *(p as *const u8).add(k) == t));
                        }
                        pool.free(p).unwrap();
                    }
                });
            }
        });
        assert!(pool.footprint() <= 16 * CHUNK + BOUND);
        pool.destroy().unwrap();
        let (a, f) = pool.source.n();
        assert_eq!(a, f);
    }

    #[test]
    fn empty_chunks_beyond_the_bound_go_back_at_the_free() {
        // Room for two chunks' worth.
        let pool = old_layout(Malloc::default(), 2 * CHUNK);
        let per_chunk = CHUNK / SMALL_MAX;
        let ps: Vec<_> = (0..5 * per_chunk)
            .map(|_| pool.alloc(SMALL_MAX).unwrap().unwrap())
            .collect();
        assert_eq!(pool.source.n(), (5, 0));
        for &p in &ps {
            pool.free(p).unwrap();
            assert!(pool.unused() <= 2 * CHUNK);
        }
        assert_eq!(pool.source.n(), (5, 3), "three chunks went back");
        assert_eq!(pool.unused(), 2 * CHUNK);
        assert_eq!(pool.footprint(), 2 * CHUNK);
        // The two kept chunks serve again without a new one, and no block of a chunk
        // given back is handed out.
        let again: Vec<_> = (0..2 * per_chunk)
            .map(|_| pool.alloc(SMALL_MAX).unwrap().unwrap())
            .collect();
        assert_eq!(pool.source.n(), (5, 3));
        let live = pool.source.out.lock().unwrap().clone();
        for &p in &again {
            assert!(
                live.iter().any(|(&c, &b)| p >= c && p + SMALL_MAX <= c + b),
                "{p:#x} lies in a chunk still allocated"
            );
        }
        for p in again {
            pool.free(p).unwrap();
        }
        assert_eq!(pool.trim().unwrap(), 2 * CHUNK);
        assert_eq!(pool.source.n(), (5, 5));
        assert_eq!((pool.unused(), pool.footprint()), (0, 0));
        pool.destroy().unwrap();
    }

    #[test]
    fn cached_large_blocks_stay_within_the_bound() {
        let pool = old_layout(Malloc::default(), 8 * MIB + CHUNK);
        let sizes = [MIB, 4 * MIB, 2 * MIB, MIB];
        let ps: Vec<_> = sizes
            .iter()
            .map(|&b| pool.alloc(b).unwrap().unwrap())
            .collect();
        for &p in &ps {
            pool.free(p).unwrap();
        }
        assert_eq!(pool.source.n(), (4, 0), "8 MiB cached: within the bound");
        assert_eq!(pool.unused(), 8 * MIB);
        // 3 MiB more: the largest cached block (4 MiB) goes back to make room.
        let q = pool.alloc(3 * MIB).unwrap().unwrap();
        pool.free(q).unwrap();
        assert_eq!(pool.source.n(), (5, 1));
        assert_eq!(pool.unused(), 7 * MIB);
        assert_eq!(pool.alloc(4 * MIB).unwrap().map(|_| ()), Some(()));
        assert_eq!(pool.source.n(), (6, 1), "the 4 MiB block was given back");
        // A block larger than the bound is never kept.
        let big = pool.alloc(16 * MIB).unwrap().unwrap();
        pool.free(big).unwrap();
        assert_eq!(pool.source.n(), (7, 2));
        pool.destroy().unwrap();
        let (a, f) = pool.source.n();
        assert_eq!(a, f);
    }

    #[test]
    fn a_bound_of_zero_keeps_nothing() {
        let pool = old_layout(Malloc::default(), 0);
        for size in [64, SMALL_MAX, SMALL_MAX + 1, 8 * MIB] {
            let p = pool.alloc(size).unwrap().unwrap();
            pool.free(p).unwrap();
            assert_eq!(pool.unused(), 0, "{size}");
            assert_eq!(pool.footprint(), 0, "{size}");
        }
        assert_eq!(pool.source.n(), (4, 4));
        pool.destroy().unwrap();
    }

    #[test]
    fn chunks_given_back_leave_no_stale_block() {
        // Room for one chunk only: blocks of many classes spread over many chunks,
        // freed in a scrambled order, with a few kept live throughout.
        let pool = old_layout(Malloc::default(), CHUNK);
        let mut ps: Vec<(usize, usize)> = (0..2000usize)
            .map(|i| {
                let size = 64 + (i * 7919) % (64 << 10);
                (pool.alloc(size).unwrap().unwrap(), size)
            })
            .collect();
        ps.sort_by_key(|&(p, _)| p.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let keep = ps.split_off(1900);
        for &(p, _) in &ps {
            pool.free(p).unwrap();
        }
        assert!(pool.unused() <= CHUNK);
        // Everything handed out now lies in a chunk the source still has, and does not
        // overlap a live block.
        let mut live: Vec<(usize, usize)> = keep.clone();
        for i in 0..1000usize {
            let size = 64 + (i * 104_729) % (64 << 10);
            let p = pool.alloc(size).unwrap().unwrap();
            live.push((p, size));
        }
        let out = pool.source.out.lock().unwrap().clone();
        for &(p, size) in &live {
            assert!(
                out.iter().any(|(&c, &b)| p >= c && p + size <= c + b),
                "{p:#x} lies in an allocated chunk"
            );
        }
        live.sort();
        for w in live.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "overlap at {:#x}", w[1].0);
        }
        for (p, _) in live {
            pool.free(p).unwrap();
        }
        assert!(pool.unused() <= CHUNK);
        pool.destroy().unwrap();
        assert!(pool.source.out.lock().unwrap().is_empty());
    }

    #[test]
    fn chunks_grow_from_a_small_first_one() {
        let pool = PinnedPool::with_shape(
            Malloc::default(),
            BOUND,
            Shape {
                first_chunk: FIRST_CHUNK,
                shards: 1,
            },
        );
        let first = pool.alloc(4096 + 64).unwrap().unwrap();
        assert_eq!(pool.source.pieces(), [FIRST_CHUNK], "a small first chunk");
        // Fill it and the next ones with 4 KiB blocks: each chunk GROWTH times the
        // previous, up to CHUNK.
        let mut ps = vec![first];
        while pool.source.n().0 < 6 {
            ps.push(pool.alloc(4096).unwrap().unwrap());
        }
        let mut sizes = pool.source.pieces();
        sizes.sort();
        assert_eq!(
            sizes,
            [
                FIRST_CHUNK,
                FIRST_CHUNK * GROWTH,
                FIRST_CHUNK * GROWTH * GROWTH,
                CHUNK,
                CHUNK,
                CHUNK
            ]
        );
        for p in ps {
            pool.free(p).unwrap();
        }
        assert_eq!(pool.footprint(), sizes.iter().sum::<usize>());
        pool.destroy().unwrap();
        assert!(pool.source.out.lock().unwrap().is_empty());
        // A first request larger than the first chunk gets a chunk that holds it.
        let p = pool.alloc(SMALL_MAX).unwrap().unwrap();
        assert_eq!(pool.source.pieces(), [SMALL_MAX]);
        pool.free(p).unwrap();
        pool.destroy().unwrap();
    }

    #[test]
    fn a_block_goes_back_to_its_shard_from_any_thread() {
        let pool = PinnedPool::with_shape(
            Malloc::default(),
            BOUND,
            Shape {
                first_chunk: FIRST_CHUNK,
                shards: 8,
            },
        );
        let sizes = [64usize, 4096, 5000, SMALL_MAX, SMALL_MAX + 1];
        let blocks: Vec<Vec<usize>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|_| s.spawn(|| sizes.map(|n| pool.alloc(n).unwrap().unwrap()).to_vec()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<(usize, usize)> = blocks
            .iter()
            .flat_map(|b| b.iter().copied().zip(sizes))
            .collect();
        all.sort();
        for w in all.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "overlap at {:#x}", w[1].0);
        }
        assert!(all.iter().all(|&(p, _)| pool.owns(p)));
        // Freed by this thread, whichever shard holds each block.
        for &(p, _) in &all {
            assert!(pool.try_free(p).unwrap());
            assert!(!pool.try_free(p).unwrap(), "double free");
            assert!(pool.free(p).is_err());
            assert!(!pool.owns(p));
        }
        assert!(!pool.try_free(12345 * 64).unwrap());
        assert_eq!(pool.unused(), pool.footprint(), "all unused, all kept");
        let held: usize = pool.source.pieces().iter().sum();
        assert_eq!(pool.trim().unwrap(), held);
        assert_eq!((pool.unused(), pool.footprint()), (0, 0));
        pool.destroy().unwrap();
        let (a, f) = pool.source.n();
        assert_eq!(a, f);
    }

    #[test]
    fn shapes_are_clamped() {
        let s = Shape {
            first_chunk: 1,
            shards: 0,
        }
        .clamped();
        assert_eq!((s.first_chunk, s.shards), (PAGE, 1));
        let s = Shape {
            first_chunk: 5000,
            shards: 1000,
        }
        .clamped();
        assert_eq!((s.first_chunk, s.shards), (8192, MAX_SHARDS));
        let s = Shape {
            first_chunk: 64 << 20,
            shards: 3,
        }
        .clamped();
        assert_eq!((s.first_chunk, s.shards), (CHUNK, 3));
    }
}
