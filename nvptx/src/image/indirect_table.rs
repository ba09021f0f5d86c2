//! The indirect-function hash table that GCC 16's device runtime reads through
//! `__gomp_indirect_addr_hmap` (spec §5.2, §5.3 step 4, §10 item 8), built complete on
//! the host so that no kernel has to build it at start.
//!
//! The device only looks entries up, so the byte image must be the one libgomp's
//! `hashtab.h` describes, as laid out for nvptx64 (identical to x86-64, measured with
//! `offsetof` in a gcc-16 offload build):
//!
//! | offset | field |
//! |---|---|
//! | 0 | `size_t size`: number of slots, a prime of [`PRIMES`] |
//! | 8 | `size_t n_elements`: occupied slots |
//! | 16 | `size_t n_deleted`: always 0 here |
//! | 24 | `unsigned size_prime_index`: index of `size` in [`PRIMES`] |
//! | 28 | 4 bytes of padding (the entries are 16-byte aligned) |
//! | 32 + 16 i | slot i: `unsigned __int128`, low half (bytes 0..8) the host address, high half the device address |
//!
//! All fields are little-endian. An all-zero slot is empty; the value 1 (host address 1,
//! device address 0) marks a deleted slot, which this builder never writes.
//!
//! The device (`GOMP_target_map_indirect_ptr`) hashes a host pointer `p` to the 32 bits
//! `(p ^ (p >> 32))`, starts at slot `hash mod size` and, while the slot holds another
//! key, steps by `1 + hash mod (size - 2)`, wrapping at `size`. It stops at an empty slot
//! (the pointer is returned unchanged) or at a slot whose host address equals `p` (its
//! device address is returned). The reductions use the multiplicative inverses of
//! [`PRIMES`] read from the device's own copy of the table, indexed by
//! `size_prime_index`; [`mod_1`] computes exactly what the device computes.
//!
//! Unlike the stock plugin, whose host-side equality test compares an entry with itself
//! so that a key colliding at its first slot overwrites the entry there, insertion here
//! compares the stored host address with the new one and probes on.

use gomp_plugin::error::{Error, Result};

/// Bytes before the first slot.
pub const HEADER_BYTES: usize = 32;
/// Bytes per slot: a (host address, device address) pair of `u64`s.
pub const SLOT_BYTES: usize = 16;

/// One row of hashtab.h's prime table: a prime, the multiplicative inverses used to
/// reduce modulo it and modulo it minus 2, and the shift that goes with both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prime {
    /// The table size.
    pub prime: u32,
    /// Inverse of `prime` (bit 32 implied).
    pub inv: u32,
    /// Inverse of `prime - 2` (bit 32 implied).
    pub inv_m2: u32,
    /// Post-shift for both reductions.
    pub shift: u32,
}

const fn p(prime: u32, inv: u32, inv_m2: u32, shift: u32) -> Prime {
    Prime {
        prime,
        inv,
        inv_m2,
        shift,
    }
}

/// hashtab.h's table of sizes, in order; the device indexes its own copy of it by
/// `size_prime_index`, so the values must match it exactly.
pub const PRIMES: [Prime; 30] = [
    p(7, 0x24924925, 0x9999999b, 2),
    p(13, 0x3b13b13c, 0x745d1747, 3),
    p(31, 0x08421085, 0x1a7b9612, 4),
    p(61, 0x0c9714fc, 0x15b1e5f8, 5),
    p(127, 0x02040811, 0x0624dd30, 6),
    p(251, 0x05197f7e, 0x073260a5, 7),
    p(509, 0x01824366, 0x02864fc8, 8),
    p(1021, 0x00c0906d, 0x014191f7, 9),
    p(2039, 0x0121456f, 0x0161e69e, 10),
    p(4093, 0x00300902, 0x00501908, 11),
    p(8191, 0x00080041, 0x00180241, 12),
    p(16381, 0x000c0091, 0x00140191, 13),
    p(32749, 0x002605a5, 0x002a06e6, 14),
    p(65521, 0x000f00e2, 0x00110122, 15),
    p(131071, 0x00008001, 0x00018003, 16),
    p(262139, 0x00014002, 0x0001c004, 17),
    p(524287, 0x00002001, 0x00006001, 18),
    p(1048573, 0x00003001, 0x00005001, 19),
    p(2097143, 0x00004801, 0x00005801, 20),
    p(4194301, 0x00000c01, 0x00001401, 21),
    p(8388593, 0x00001e01, 0x00002201, 22),
    p(16777213, 0x00000301, 0x00000501, 23),
    p(33554393, 0x00001381, 0x00001481, 24),
    p(67108859, 0x00000141, 0x000001c1, 25),
    p(134217689, 0x000004e1, 0x00000521, 26),
    p(268435399, 0x00000391, 0x000003b1, 27),
    p(536870909, 0x00000019, 0x00000029, 28),
    p(1073741789, 0x0000008d, 0x00000095, 29),
    p(2147483647, 0x00000003, 0x00000007, 30),
    p(0xfffffffb, 0x00000006, 0x00000008, 31),
];

/// The device's hash of a host pointer: its two 32-bit halves xor-ed.
pub fn hash_pointer(p: u64) -> u32 {
    (p ^ (p >> 32)) as u32
}

/// `x mod y` the way the device computes it, from the inverse `inv` and `shift` of `y`
/// (a high multiply, no division). Equals `x % y` for the rows of [`PRIMES`].
pub fn mod_1(x: u32, y: u32, inv: u32, shift: u32) -> u32 {
    let t1 = ((u64::from(x) * u64::from(inv)) >> 32) as u32;
    let t4 = t1.wrapping_add(x.wrapping_sub(t1) >> 1);
    let q = t4 >> shift;
    x.wrapping_sub(q.wrapping_mul(y))
}

/// The first slot probed for `hash` in a table of row `row`.
fn first_slot(hash: u32, row: &Prime) -> u32 {
    mod_1(hash, row.prime, row.inv, row.shift)
}

/// The probe step for `hash` in a table of row `row`: in `1..=prime-2`, so coprime
/// with the prime size and every slot is visited.
fn step(hash: u32, row: &Prime) -> u32 {
    1 + mod_1(hash, row.prime - 2, row.inv_m2, row.shift)
}

/// The row of the smallest size that keeps `n` entries under three quarters full, the
/// occupancy hashtab.h keeps (so at least a quarter of the slots stay empty and every
/// probe sequence ends).
fn row_for(n: usize) -> Result<usize> {
    PRIMES
        .iter()
        .position(|r| (n as u128) * 4 < u128::from(r.prime) * 3)
        .ok_or_else(|| Error::invalid(format!("{n} indirect functions: too many to hash")))
}

/// A complete indirect-function hash table, built on the host. Owns its slots; plain
/// data, `Send` and `Sync`.
#[derive(Debug, Clone)]
pub struct IndirectTable {
    row: usize,
    /// (host, device) per slot; (0, 0) is empty.
    slots: Vec<(u64, u64)>,
    len: usize,
}

impl IndirectTable {
    /// Builds the table of `pairs` (host address, device address). Pairs whose host
    /// address is 0 or 1 are left out: those values mark empty and deleted slots, and
    /// the device maps NULL to NULL before looking. A host address given twice keeps
    /// its last device address. Fails only for more entries than the largest size
    /// holds.
    pub fn build(pairs: &[(u64, u64)]) -> Result<Self> {
        let wanted = pairs.iter().filter(|&&(h, _)| h > 1).count();
        let row = row_for(wanted)?;
        let mut t = IndirectTable {
            row,
            slots: vec![(0, 0); PRIMES[row].prime as usize],
            len: 0,
        };
        for &(h, d) in pairs.iter().filter(|&&(h, _)| h > 1) {
            t.insert(h, d);
        }
        Ok(t)
    }

    /// Puts (`host`, `dev`) into the slot the device's probe sequence for `host` ends
    /// at: the first empty one, or the one already holding `host`.
    fn insert(&mut self, host: u64, dev: u64) {
        let row = &PRIMES[self.row];
        let hash = hash_pointer(host);
        let size = self.slots.len();
        let mut i = first_slot(hash, row) as usize;
        let inc = step(hash, row) as usize;
        loop {
            let (h, _) = self.slots[i];
            if h == 0 {
                self.len += 1;
                break;
            }
            if h == host {
                break;
            }
            i += inc;
            if i >= size {
                i -= size;
            }
        }
        self.slots[i] = (host, dev);
    }

    /// Number of distinct entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the table holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of slots (a prime of [`PRIMES`]).
    pub fn size(&self) -> usize {
        self.slots.len()
    }

    /// The byte image the device reads ([`HEADER_BYTES`] + [`SLOT_BYTES`] per slot),
    /// to be copied to device memory whose address goes into
    /// `__gomp_indirect_addr_hmap`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER_BYTES + SLOT_BYTES * self.slots.len());
        b.extend_from_slice(&(self.slots.len() as u64).to_le_bytes());
        b.extend_from_slice(&(self.len as u64).to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&(self.row as u32).to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        for &(h, d) in &self.slots {
            b.extend_from_slice(&h.to_le_bytes());
            b.extend_from_slice(&d.to_le_bytes());
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u64_at(b: &[u8], off: usize) -> u64 {
        u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
    }

    /// The device's `GOMP_target_map_indirect_ptr` on a byte image, as its PTX does it
    /// (reading `size` and `size_prime_index` from the header, the slots from offset
    /// 32), but reducing with `%` so that it checks `mod_1` rather than reuses it.
    fn device_lookup(img: &[u8], ptr: u64) -> u64 {
        if ptr == 0 {
            return 0;
        }
        let size = u64_at(img, 0);
        let row = u32::from_le_bytes(img[24..28].try_into().unwrap()) as usize;
        let prime = PRIMES[row].prime;
        assert_eq!(u64::from(prime), size);
        let hash = hash_pointer(ptr);
        let mut i = hash % prime;
        let inc = 1 + hash % (prime - 2);
        for _ in 0..size {
            let (h, d) = (
                u64_at(img, 32 + 16 * i as usize),
                u64_at(img, 40 + 16 * i as usize),
            );
            if h == 0 && d == 0 {
                return ptr;
            }
            if !(h == 1 && d == 0) && h == ptr {
                return d;
            }
            i = i.wrapping_add(inc);
            if u64::from(i) >= size {
                i = i.wrapping_sub(size as u32);
            }
        }
        panic!("probe sequence for {ptr:#x} never ends");
    }

    fn check_all(pairs: &[(u64, u64)]) -> IndirectTable {
        let t = IndirectTable::build(pairs).unwrap();
        let img = t.to_bytes();
        for &(h, d) in pairs {
            assert_eq!(device_lookup(&img, h), d, "host {h:#x}");
        }
        t
    }

    #[test]
    fn mod_1_is_the_remainder() {
        let mut x: u32 = 0x1234_5678;
        for r in &PRIMES {
            for y in [r.prime, r.prime - 2] {
                let inv = if y == r.prime { r.inv } else { r.inv_m2 };
                let edges = [
                    0,
                    1,
                    y - 1,
                    y,
                    y + 1,
                    u32::MAX,
                    u32::MAX - 1,
                    u32::MAX / y * y,
                ];
                for v in edges {
                    assert_eq!(mod_1(v, y, inv, r.shift), v % y, "{v} mod {y}");
                }
                for _ in 0..20_000 {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    assert_eq!(mod_1(x, y, inv, r.shift), x % y, "{x} mod {y}");
                    let m = x / y * y;
                    for v in [m, m.wrapping_sub(1), m.wrapping_add(y - 1)] {
                        assert_eq!(mod_1(v, y, inv, r.shift), v % y, "{v} mod {y}");
                    }
                }
            }
        }
    }

    #[test]
    fn header_layout() {
        let pairs: Vec<(u64, u64)> = (1..=10).map(|i| (0x40_0000 + 16 * i, 0x7f00 + i)).collect();
        let t = IndirectTable::build(&pairs).unwrap();
        let img = t.to_bytes();
        assert_eq!(t.size(), 31);
        assert_eq!(img.len(), 32 + 16 * 31);
        assert_eq!(u64_at(&img, 0), 31);
        assert_eq!(u64_at(&img, 8), 10);
        assert_eq!(u64_at(&img, 16), 0);
        assert_eq!(&img[24..28], &2u32.to_le_bytes());
        assert_eq!(&img[28..32], &[0; 4]);
        // Every pair sits in one slot, host half first.
        for &(h, d) in &pairs {
            let found =
                (0..31).any(|i| u64_at(&img, 32 + 16 * i) == h && u64_at(&img, 40 + 16 * i) == d);
            assert!(found, "{h:#x} not stored");
        }
        let occupied = (0..31).filter(|&i| u64_at(&img, 32 + 16 * i) != 0).count();
        assert_eq!(occupied, 10);
    }

    #[test]
    fn size_keeps_a_quarter_empty() {
        for (n, size) in [
            (0, 7),
            (1, 7),
            (5, 7),
            (6, 13),
            (9, 13),
            (10, 31),
            (300, 509),
            (381, 509),
            (382, 1021),
        ] {
            assert_eq!(PRIMES[row_for(n).unwrap()].prime, size, "n = {n}");
        }
        assert!(row_for(usize::MAX / 2).is_err());
    }

    #[test]
    fn empty_table() {
        let t = check_all(&[]);
        assert!(t.is_empty());
        let img = t.to_bytes();
        assert_eq!(img.len(), 32 + 16 * 7);
        assert!(img[32..].iter().all(|&b| b == 0));
        assert_eq!(device_lookup(&img, 0x1234), 0x1234);
        assert_eq!(device_lookup(&img, 0), 0);
    }

    #[test]
    fn realistic_addresses_all_found() {
        // Functions a few dozen bytes apart in a PIE text segment, device addresses
        // in a separate range.
        let pairs: Vec<(u64, u64)> = (0..1000u64)
            .map(|i| {
                (
                    0x5555_5555_4000 + 48 * i + (i % 7) * 16,
                    0x7fff_0000_0000 + 64 * i,
                )
            })
            .collect();
        let t = check_all(&pairs);
        assert_eq!(t.len(), 1000);
        assert_eq!(t.size(), 2039);
        let img = t.to_bytes();
        // Pointers not in the table come back unchanged.
        for q in [1, 0x1000, 0x5555_5555_3ff0, 0xdead_beef_0000] {
            assert_eq!(device_lookup(&img, q), q);
        }
    }

    #[test]
    fn colliding_first_slots_are_all_found() {
        // Keys below 2^32 hash to themselves: multiples of the size apart, all 300
        // start at the same slot of the 509-slot table.
        let pairs: Vec<(u64, u64)> = (0..300u64).map(|i| (1000 + 509 * i, 0xd000 + i)).collect();
        let t = check_all(&pairs);
        assert_eq!((t.size(), t.len()), (509, 300));
        let row = &PRIMES[t.row];
        let first: std::collections::HashSet<u32> = pairs
            .iter()
            .map(|&(h, _)| first_slot(hash_pointer(h), row))
            .collect();
        assert_eq!(first.len(), 1);
    }

    #[test]
    fn identical_hashes_are_all_found() {
        // (a << 32) | (c ^ a) all hash to c: the same first slot and the same step.
        let c = 0x0bad_cafe_u64;
        let pairs: Vec<(u64, u64)> = (1..=200u64).map(|a| ((a << 32) | (c ^ a), a)).collect();
        assert!(pairs.iter().all(|&(h, _)| u64::from(hash_pointer(h)) == c));
        let t = check_all(&pairs);
        assert_eq!(t.len(), 200);
    }

    #[test]
    fn a_table_filled_by_collisions_is_still_terminated() {
        // 5 keys in 7 slots, all starting at slot 3: probe chains must still end at an
        // empty slot for keys that are absent.
        let pairs: Vec<(u64, u64)> = (0..5u64).map(|i| (3 + 7 * i, 100 + i)).collect();
        let t = check_all(&pairs);
        assert_eq!(t.size(), 7);
        let img = t.to_bytes();
        assert_eq!(device_lookup(&img, 3 + 7 * 9), 3 + 7 * 9);
    }

    #[test]
    fn duplicates_keep_the_last_address() {
        let pairs = [(0x4000, 1), (0x4010, 2), (0x4000, 3), (0x4000 + 7, 4)];
        let t = IndirectTable::build(&pairs).unwrap();
        assert_eq!(t.len(), 3);
        let img = t.to_bytes();
        assert_eq!(u64_at(&img, 8), 3);
        assert_eq!(device_lookup(&img, 0x4000), 3);
        assert_eq!(device_lookup(&img, 0x4010), 2);
        assert_eq!(device_lookup(&img, 0x4007), 4);
    }

    #[test]
    fn reserved_host_addresses_are_left_out() {
        let t = IndirectTable::build(&[(0, 5), (1, 0), (0x4000, 9)]).unwrap();
        assert_eq!(t.len(), 1);
        let img = t.to_bytes();
        assert_eq!(device_lookup(&img, 0x4000), 9);
        assert_eq!(device_lookup(&img, 0), 0);
    }
}
