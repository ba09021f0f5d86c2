//! A pool of page-locked host memory for `page_locked_host_alloc` (libgomp 16's pinned
//! allocator), so that `omp_alloc` on a pinned allocator does not pay a
//! `cuMemHostAlloc` (about half a millisecond, even for 4 KiB) per request.
//!
//! - Small requests (up to [`SMALL_MAX`]) are rounded up to one of [`NCLASSES`] size
//!   classes (multiples of 64 bytes, four per power of two) and carved from shared
//!   [`CHUNK`]-byte chunks; a freed block goes to its class's free list and is reused by
//!   the next request of that class. Blocks are 64-byte aligned.
//! - Large requests get their own allocation, rounded up to [`LARGE_GRANULE`] (page-aligned);
//!   freed ones are kept for a request of the same rounded size, up to [`CACHE_CAP`]
//!   bytes, and the cache is emptied (and the request retried) when the source runs out
//!   of memory.
//! - Memory goes back to the source only at [`PinnedPool::destroy`] (device close),
//!   except large blocks that do not fit the cache; the small-block memory of the pool is
//!   its high-water mark.
//!
//! The memory comes from a [`ChunkSource`] (the CUDA driver in production, `std::alloc`
//! in the unit tests), so the bookkeeping is tested without a GPU.

use gomp_plugin::error::{Error, Result};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// Bytes of each small-block chunk.
pub const CHUNK: usize = 4 << 20;
/// Largest request served from chunks.
pub const SMALL_MAX: usize = 256 << 10;
/// Rounding of large requests (a multiple of the page size).
pub const LARGE_GRANULE: usize = 64 << 10;
/// Most bytes of freed large blocks kept for reuse.
pub const CACHE_CAP: usize = 256 << 20;
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
    Small(usize),
    Large(usize),
}

#[derive(Default)]
struct State {
    free: Vec<Vec<usize>>,
    /// The chunk being carved: next free byte and end.
    bump: (usize, usize),
    chunks: Vec<usize>,
    live: HashMap<usize, Live>,
    cached: BTreeMap<usize, Vec<usize>>,
    cached_bytes: usize,
}

impl State {
    fn take_small(&mut self, c: usize) -> Option<usize> {
        if let Some(p) = self.free[c].pop() {
            return Some(p);
        }
        let (at, end) = self.bump;
        let size = class_size(c);
        if end - at >= size {
            self.bump.0 = at + size;
            return Some(at);
        }
        None
    }

    /// Hands the rest of the current chunk to the free lists (largest classes first)
    /// and starts carving `chunk`.
    fn new_chunk(&mut self, chunk: usize) {
        let (mut at, end) = self.bump;
        while end - at >= ALIGN {
            let c = class_of(end - at).map_or(NCLASSES - 1, |c| {
                if class_size(c) > end - at {
                    c - 1
                } else {
                    c
                }
            });
            self.free[c].push(at);
            at += class_size(c);
        }
        self.chunks.push(chunk);
        self.bump = (chunk, chunk + CHUNK);
    }
}

/// The pinned pool of one device. Thread-safe (one mutex, never held across a call to
/// the source); owns the memory it got from the source until [`PinnedPool::destroy`].
pub struct PinnedPool<S: ChunkSource> {
    source: S,
    state: Mutex<State>,
}

impl<S: ChunkSource> PinnedPool<S> {
    /// An empty pool drawing on `source`.
    pub fn new(source: S) -> Self {
        PinnedPool {
            source,
            state: Mutex::new(State {
                free: vec![Vec::new(); NCLASSES],
                ..State::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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
        let mut st = self.lock();
        if let Some(p) = st.take_small(c) {
            st.live.insert(p, Live::Small(c));
            return Ok(Some(p));
        }
        drop(st);
        let Some(chunk) = self.source_alloc(CHUNK)? else {
            return Ok(None);
        };
        let mut st = self.lock();
        st.new_chunk(chunk);
        let p = st.take_small(c).expect("a fresh chunk holds every class");
        st.live.insert(p, Live::Small(c));
        Ok(Some(p))
    }

    fn alloc_large(&self, bytes: usize) -> Result<Option<usize>> {
        let cached = {
            let mut st = self.lock();
            let p = st.cached.get_mut(&bytes).and_then(Vec::pop);
            if p.is_some() {
                st.cached_bytes -= bytes;
            }
            p
        };
        let p = match cached {
            Some(p) => p,
            None => match self.source_alloc(bytes)? {
                Some(p) => p,
                None => return Ok(None),
            },
        };
        self.lock().live.insert(p, Live::Large(bytes));
        Ok(Some(p))
    }

    /// The source's allocation; on out-of-memory the cached large blocks are given back
    /// and the allocation retried once.
    fn source_alloc(&self, bytes: usize) -> Result<Option<usize>> {
        if let Some(p) = self.source.alloc(bytes)? {
            return Ok(Some(p));
        }
        if self.trim()? == 0 {
            return Ok(None);
        }
        self.source.alloc(bytes)
    }

    /// Gives the cached large blocks back to the source; returns how many bytes.
    pub fn trim(&self) -> Result<usize> {
        let cached = {
            let mut st = self.lock();
            st.cached_bytes = 0;
            std::mem::take(&mut st.cached)
        };
        let mut freed = 0;
        for (bytes, ps) in cached {
            for p in ps {
                self.source.free(p, bytes)?;
                freed += bytes;
            }
        }
        Ok(freed)
    }

    /// Frees a block from [`PinnedPool::alloc`]. NULL is accepted; an address the pool
    /// did not hand out (or already freed) is an error.
    pub fn free(&self, p: usize) -> Result<()> {
        if p == 0 {
            return Ok(());
        }
        let mut st = self.lock();
        match st.live.remove(&p) {
            Some(Live::Small(c)) => {
                st.free[c].push(p);
                Ok(())
            }
            Some(Live::Large(bytes)) => {
                if st.cached_bytes + bytes <= CACHE_CAP {
                    st.cached_bytes += bytes;
                    st.cached.entry(bytes).or_default().push(p);
                    return Ok(());
                }
                drop(st);
                self.source.free(p, bytes)
            }
            None => Err(Error::invalid(format!(
                "page_locked_host_free: {p:#x} is not page-locked memory from page_locked_host_alloc"
            ))),
        }
    }

    /// Whether `p` is a live block of the pool.
    pub fn owns(&self, p: usize) -> bool {
        self.lock().live.contains_key(&p)
    }

    /// Bytes in the pool's chunks and large blocks (live or cached).
    pub fn footprint(&self) -> usize {
        let st = self.lock();
        st.chunks.len() * CHUNK
            + st.cached_bytes
            + st.live
                .values()
                .map(|l| match l {
                    Live::Large(b) => *b,
                    Live::Small(_) => 0,
                })
                .sum::<usize>()
    }

    /// Gives everything back to the source (device close), live blocks included: libgomp
    /// frees no pinned memory after the device is finalized. The pool is empty and
    /// usable afterwards. Returns the first error, after trying every block.
    pub fn destroy(&self) -> Result<()> {
        let st = std::mem::replace(
            &mut *self.lock(),
            State {
                free: vec![Vec::new(); NCLASSES],
                ..State::default()
            },
        );
        let live_small = st
            .live
            .values()
            .filter(|l| matches!(l, Live::Small(_)))
            .count();
        if !st.live.is_empty() {
            log::debug!(
                "pinned pool: {} block(s) still allocated at device close ({live_small} small)",
                st.live.len()
            );
        }
        let large = st.live.into_iter().filter_map(|(p, l)| match l {
            Live::Large(b) => Some((p, b)),
            Live::Small(_) => None,
        });
        let cached = st
            .cached
            .into_iter()
            .flat_map(|(b, ps)| ps.into_iter().map(move |p| (p, b)));
        let chunks = st.chunks.into_iter().map(|p| (p, CHUNK));
        let mut first = Ok(());
        for (p, b) in large.chain(cached).chain(chunks) {
            if let Err(e) = self.source.free(p, b) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::Layout;
    use std::sync::atomic::{AtomicUsize, Ordering};

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
        let pool = PinnedPool::new(Malloc::default());
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
        let pool = PinnedPool::new(Malloc::default());
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
        let pool = PinnedPool::new(Malloc::default());
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
        // Over the cache cap: given back at once.
        let r = pool.alloc(CACHE_CAP).unwrap().unwrap();
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
        let pool = PinnedPool::new(src);
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
        let pool = PinnedPool::new(Malloc::default());
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
        let pool = PinnedPool::new(Malloc::default());
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
        assert!(pool.footprint() <= 16 * CHUNK + CACHE_CAP);
        pool.destroy().unwrap();
        let (a, f) = pool.source.n();
        assert_eq!(a, f);
    }
}
