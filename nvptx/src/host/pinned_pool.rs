//! A pool of page-locked host memory for `page_locked_host_alloc` (libgomp 16's pinned
//! allocator), so that `omp_alloc` on a pinned allocator does not pay a
//! `cuMemHostAlloc` (a slow driver call, even for 4 KiB) per request.
//!
//! - Small requests (up to [`SMALL_MAX`]) are rounded up to one of [`NCLASSES`] size
//!   classes (multiples of 64 bytes, four per power of two) and carved from shared
//!   [`CHUNK`]-byte chunks; a freed block goes to its class's free list and is reused by
//!   the next request of that class. Blocks are 64-byte aligned.
//! - Large requests get their own allocation, rounded up to [`LARGE_GRANULE`] (page-aligned);
//!   freed ones are kept for a request of the same rounded size.
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

use gomp_plugin::error::{Error, Result};
use gomp_plugin::free_lists::FreeLists;
use gomp_plugin::size_cache::SizeCache;
use gomp_plugin::sync::Lock;
use std::collections::HashMap;
use std::sync::Mutex;

/// Bytes of each small-block chunk.
pub const CHUNK: usize = 4 << 20;
/// Largest request served from chunks.
pub const SMALL_MAX: usize = 256 << 10;
/// Rounding of large requests (a multiple of the page size).
pub const LARGE_GRANULE: usize = 64 << 10;
/// Alignment of every block.
pub const ALIGN: usize = 64;
/// Number of small size classes.
pub const NCLASSES: usize = 44;

/// Where the pool's memory comes from. Called without the pool's lock held, from any
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Live {
    Small { class: usize, slot: u32 },
    Large(usize),
}

/// A chunk of small blocks.
struct Chunk {
    base: usize,
    /// Blocks handed out.
    live: usize,
    /// Blocks carved from the chunk so far (each is live or in a free list).
    carved: usize,
}

const NO_SLOT: u32 = u32::MAX;

struct State {
    /// Free small blocks by class, and the chunks.
    free: FreeLists<usize, Chunk>,
    /// The chunk being carved: next free byte, end, slot.
    bump: (usize, usize, u32),
    live: HashMap<usize, Live>,
    /// Freed large blocks kept for reuse.
    cached: SizeCache<usize>,
    /// Bytes of chunks with no live block.
    empty_bytes: usize,
}

impl State {
    fn new() -> State {
        State {
            free: FreeLists::default(),
            bump: (0, 0, NO_SLOT),
            live: HashMap::new(),
            cached: SizeCache::default(),
            empty_bytes: 0,
        }
    }

    /// Marks a block of chunk `slot` handed out.
    fn hand_out(&mut self, slot: u32) {
        let s = self.free.chunk_mut(slot);
        s.live += 1;
        if s.live == 1 {
            self.empty_bytes -= CHUNK;
        }
    }

    #[inline]
    fn take_small(&mut self, c: usize) -> Option<(usize, u32)> {
        if let Some((p, slot)) = self.free.pop(c) {
            self.hand_out(slot);
            return Some((p, slot));
        }
        let (at, end, slot) = self.bump;
        let size = class_size(c);
        if slot != NO_SLOT && end - at >= size {
            self.bump.0 = at + size;
            self.free.chunk_mut(slot).carved += 1;
            self.hand_out(slot);
            return Some((at, slot));
        }
        None
    }

    /// Hands the rest of the current chunk to the free lists (largest classes first)
    /// and starts carving `chunk`.
    fn new_chunk(&mut self, chunk: usize) {
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
            live: 0,
            carved: 0,
        });
        self.empty_bytes += CHUNK;
        self.bump = (chunk, chunk + CHUNK, slot);
    }

    /// Forgets chunk `slot` (no live block) and returns its address: its entries
    /// become stale.
    fn remove_chunk(&mut self, slot: u32) -> usize {
        let carved = self.free.chunk(slot).carved;
        let base = self.free.close(slot, carved).base;
        self.empty_bytes -= CHUNK;
        if self.bump.2 == slot {
            self.bump = (0, 0, NO_SLOT);
        }
        base
    }

    fn chunks(&self) -> usize {
        self.free.held()
    }
}

/// The pinned pool of one device. Thread-safe (one mutex, never held across a call to
/// the source); owns the memory it got from the source until it gives it back.
pub struct PinnedPool<S: ChunkSource> {
    source: S,
    /// Most bytes kept unused (cached large blocks and empty chunks).
    bound: usize,
    state: Mutex<State>,
}

impl<S: ChunkSource> PinnedPool<S> {
    /// An empty pool drawing on `source`, keeping at most `bound` bytes unused.
    pub fn new(source: S, bound: usize) -> Self {
        PinnedPool {
            source,
            bound,
            state: Mutex::new(State::new()),
        }
    }

    /// The empty chunks the pool may always keep.
    fn floor(&self) -> usize {
        CHUNK.min(self.bound)
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
        let mut st = self.state.locked();
        if let Some((p, slot)) = st.take_small(c) {
            st.live.insert(p, Live::Small { class: c, slot });
            return Ok(Some(p));
        }
        drop(st);
        let Some(chunk) = self.source_alloc(CHUNK)? else {
            return Ok(None);
        };
        let mut st = self.state.locked();
        st.new_chunk(chunk);
        let (p, slot) = st.take_small(c).expect("a fresh chunk holds every class");
        st.live.insert(p, Live::Small { class: c, slot });
        Ok(Some(p))
    }

    fn alloc_large(&self, bytes: usize) -> Result<Option<usize>> {
        let cached = { self.state.locked().cached.take(bytes) };
        let p = match cached {
            Some(p) => p,
            None => match self.source_alloc(bytes)? {
                Some(p) => p,
                None => return Ok(None),
            },
        };
        self.state.locked().live.insert(p, Live::Large(bytes));
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
        let out: Vec<(usize, usize)> = {
            let mut st = self.state.locked();
            let mut out = st.cached.drain();
            let empty = st.free.held_where(|c| c.live == 0);
            out.extend(empty.into_iter().map(|i| (st.remove_chunk(i), CHUNK)));
            out
        };
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
        if p == 0 {
            return Ok(());
        }
        let mut st = self.state.locked();
        let out: Vec<(usize, usize)> = match st.live.remove(&p) {
            Some(Live::Small { class, slot }) => {
                let s = st.free.chunk_mut(slot);
                s.live -= 1;
                let live = s.live;
                st.free.push(class, p, slot);
                if live > 0 {
                    return Ok(());
                }
                st.empty_bytes += CHUNK;
                let room = self.bound.saturating_sub(st.cached.bytes()).max(self.floor());
                if st.empty_bytes <= room {
                    return Ok(());
                }
                vec![(st.remove_chunk(slot), CHUNK)]
            }
            Some(Live::Large(bytes)) => {
                let room = self
                    .bound
                    .saturating_sub(st.empty_bytes.max(self.floor()));
                let out = st.cached.put(p, bytes, room);
                if out.is_empty() {
                    return Ok(());
                }
                out
            }
            None => {
                return Err(Error::invalid(format!(
                    "page_locked_host_free: {p:#x} is not page-locked memory from page_locked_host_alloc"
                )))
            }
        };
        drop(st);
        self.give_back(&out)
    }

    /// Whether `p` is a live block of the pool.
    pub fn owns(&self, p: usize) -> bool {
        self.state.locked().live.contains_key(&p)
    }

    /// Bytes in the pool's chunks and large blocks (live or cached).
    pub fn footprint(&self) -> usize {
        let st = self.state.locked();
        st.chunks() * CHUNK
            + st.cached.bytes()
            + st.live
                .values()
                .map(|l| match l {
                    Live::Large(b) => *b,
                    Live::Small { .. } => 0,
                })
                .sum::<usize>()
    }

    /// Bytes the pool keeps unused and could give back: cached large blocks and chunks
    /// with no live block.
    pub fn unused(&self) -> usize {
        let st = self.state.locked();
        st.cached.bytes() + st.empty_bytes
    }

    /// Gives everything back to the source (device close), live blocks included: libgomp
    /// frees no pinned memory after the device is finalized. The pool is empty and
    /// usable afterwards. Returns the first error, after trying every block.
    pub fn destroy(&self) -> Result<()> {
        let mut st = std::mem::replace(&mut *self.state.locked(), State::new());
        let live_small = st
            .live
            .values()
            .filter(|l| matches!(l, Live::Small { .. }))
            .count();
        if !st.live.is_empty() {
            log::debug!(
                "pinned pool: {} block(s) still allocated at device close ({live_small} small)",
                st.live.len()
            );
        }
        let large = st.live.into_iter().filter_map(|(p, l)| match l {
            Live::Large(b) => Some((p, b)),
            Live::Small { .. } => None,
        });
        let cached = st.cached.drain();
        let chunks = st.free.into_held().map(|c| (c.base, CHUNK));
        let all: Vec<_> = large.chain(cached).chain(chunks).collect();
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

    impl Malloc {
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
        let pool = PinnedPool::new(Malloc::default(), BOUND);
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
        let pool = PinnedPool::new(Malloc::default(), BOUND);
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
        let pool = PinnedPool::new(Malloc::default(), BOUND);
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
        let pool = PinnedPool::new(src, BOUND);
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
        let pool = PinnedPool::new(Malloc::default(), BOUND);
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
        let pool = PinnedPool::new(Malloc::default(), 2 * CHUNK);
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
        let pool = PinnedPool::new(Malloc::default(), 8 * MIB + CHUNK);
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
        let pool = PinnedPool::new(Malloc::default(), 0);
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
        let pool = PinnedPool::new(Malloc::default(), CHUNK);
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
}
