//! Free lists of blocks carved from chunks that come and go, by size class: the shape
//! both of the nvptx plugin's small-block caches share (page-locked host memory, device
//! memory). Each chunk holds a slot ([`FreeLists::open`]) with the caller's data about
//! it (`D`: its address, its live blocks, ...); each free block is an entry of its
//! class's list tagged with its chunk's slot and that slot's generation.
//!
//! Giving a chunk back ([`FreeLists::close`]) bumps its slot's generation, which makes
//! its entries stale without a scan: they are dropped when [`FreeLists::pop`] meets
//! them, and the lists are compacted when stale entries outnumber the live ones. A
//! closed slot is reused by the next chunk. Plain data: the owner locks it.

/// A free block: its address, its chunk's slot and that slot's generation.
#[derive(Clone, Copy)]
struct Entry<P> {
    p: P,
    slot: u32,
    gen: u32,
}

struct Slot<D> {
    data: D,
    /// Bumped when the chunk is given back: its entries are stale.
    gen: u32,
    in_use: bool,
}

/// The free lists of one cache and the slots of its chunks. `P` is a block's address,
/// `D` what the caller keeps per chunk. Not synchronised (the owner holds it under its
/// lock).
pub struct FreeLists<P, D> {
    lists: Vec<Vec<Entry<P>>>,
    slots: Vec<Slot<D>>,
    spare: Vec<u32>,
    /// Entries in the lists, and how many of them are stale.
    entries: usize,
    stale: usize,
}

impl<P, D> Default for FreeLists<P, D> {
    fn default() -> Self {
        FreeLists {
            lists: Vec::new(),
            slots: Vec::new(),
            spare: Vec::new(),
            entries: 0,
            stale: 0,
        }
    }
}

impl<P: Copy, D> FreeLists<P, D> {
    /// A slot for a new chunk described by `data`.
    pub fn open(&mut self, data: D) -> u32 {
        match self.spare.pop() {
            Some(i) => {
                let s = &mut self.slots[i as usize];
                s.data = data;
                s.in_use = true;
                i
            }
            None => {
                self.slots.push(Slot {
                    data,
                    gen: 0,
                    in_use: true,
                });
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Gives back the chunk of `slot`, whose `entries` free blocks are in the lists
    /// (all of its blocks, when none is live): they become stale. Returns the chunk's
    /// data.
    pub fn close(&mut self, slot: u32, entries: usize) -> &D {
        let s = &mut self.slots[slot as usize];
        s.in_use = false;
        s.gen = s.gen.wrapping_add(1);
        self.spare.push(slot);
        self.stale += entries;
        if self.stale > self.entries / 2 {
            let slots = &self.slots;
            for list in &mut self.lists {
                list.retain(|e| {
                    let s = &slots[e.slot as usize];
                    s.in_use && s.gen == e.gen
                });
            }
            self.entries -= self.stale;
            self.stale = 0;
        }
        &self.slots[slot as usize].data
    }

    /// Puts free block `p` of chunk `slot` in the list of `class`.
    #[inline]
    pub fn push(&mut self, class: usize, p: P, slot: u32) {
        let gen = self.slots[slot as usize].gen;
        if class >= self.lists.len() {
            self.lists.resize_with(class + 1, Vec::new);
        }
        self.lists[class].push(Entry { p, slot, gen });
        self.entries += 1;
    }

    /// The last free block of `class` that belongs to a chunk still held, and its
    /// slot; stale entries met on the way are dropped.
    #[inline]
    pub fn pop(&mut self, class: usize) -> Option<(P, u32)> {
        let list = self.lists.get_mut(class)?;
        while let Some(e) = list.pop() {
            self.entries -= 1;
            let s = &self.slots[e.slot as usize];
            if !s.in_use || s.gen != e.gen {
                self.stale -= 1;
                continue;
            }
            return Some((e.p, e.slot));
        }
        None
    }

    /// The data of chunk `slot`.
    #[inline]
    pub fn chunk(&self, slot: u32) -> &D {
        &self.slots[slot as usize].data
    }

    /// The data of chunk `slot`, to change.
    #[inline]
    pub fn chunk_mut(&mut self, slot: u32) -> &mut D {
        &mut self.slots[slot as usize].data
    }

    /// How many chunks are held.
    pub fn held(&self) -> usize {
        self.slots.len() - self.spare.len()
    }

    /// The slots of the chunks held whose data satisfies `f`.
    pub fn held_where(&self, f: impl Fn(&D) -> bool) -> Vec<u32> {
        (0..self.slots.len() as u32)
            .filter(|&i| {
                let s = &self.slots[i as usize];
                s.in_use && f(&s.data)
            })
            .collect()
    }

    /// The data of every chunk held, consuming the lists.
    pub fn into_held(self) -> impl Iterator<Item = D> {
        self.slots.into_iter().filter(|s| s.in_use).map(|s| s.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_come_back_last_in_first_out() {
        let mut f: FreeLists<u64, &str> = FreeLists::default();
        let a = f.open("a");
        assert_eq!(f.pop(3), None);
        f.push(3, 0x100, a);
        f.push(3, 0x200, a);
        f.push(0, 0x300, a);
        assert_eq!(f.pop(3), Some((0x200, a)));
        assert_eq!(f.pop(3), Some((0x100, a)));
        assert_eq!(f.pop(3), None);
        assert_eq!(f.pop(0), Some((0x300, a)));
        assert_eq!(*f.chunk(a), "a");
        *f.chunk_mut(a) = "A";
        assert_eq!(f.held_where(|d| *d == "A"), [a]);
    }

    #[test]
    fn a_closed_chunk_leaves_no_block_even_when_its_slot_is_reused() {
        let mut f: FreeLists<u64, u64> = FreeLists::default();
        let keep = f.open(0x1000);
        // Many live entries, so closing the next chunk does not compact.
        for i in 0..10 {
            f.push(0, 0x1000 + i * 0x10, keep);
        }
        let gone = f.open(0x8000);
        f.push(1, 0x8000, gone);
        f.push(1, 0x8100, gone);
        assert_eq!(*f.close(gone, 2), 0x8000);
        assert_eq!(f.held_where(|_| true), [keep]);
        assert_eq!(f.held(), 1);
        // The slot is reused for another chunk; the old entries are still stale.
        let again = f.open(0x9000);
        assert_eq!(again, gone);
        assert_eq!(f.pop(1), None, "stale entries are dropped, not handed out");
        f.push(1, 0x9000, again);
        assert_eq!(f.pop(1), Some((0x9000, again)));
        assert_eq!((f.entries, f.stale), (10, 0));
        assert_eq!(f.into_held().collect::<Vec<_>>(), [0x1000, 0x9000]);
    }

    #[test]
    fn stale_entries_are_compacted_once_they_outnumber_the_live_ones() {
        let mut f: FreeLists<u64, ()> = FreeLists::default();
        let live = f.open(());
        f.push(0, 1, live);
        let gone = f.open(());
        for p in 10..13 {
            f.push(0, p, gone);
        }
        f.close(gone, 3);
        // 3 stale of 4: compacted at once.
        assert_eq!((f.entries, f.stale), (1, 0));
        assert_eq!(f.lists[0].len(), 1);
        assert_eq!(f.pop(0), Some((1, live)));
        // Below the threshold the stale entries stay until met.
        for p in 0..4 {
            f.push(0, p, live);
        }
        let gone = f.open(());
        f.push(1, 9, gone);
        f.close(gone, 1);
        assert_eq!((f.entries, f.stale), (5, 1));
        assert_eq!(f.pop(1), None);
        assert_eq!((f.entries, f.stale), (4, 0));
    }
}
