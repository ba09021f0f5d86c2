//! The file format of one cache entry, so that a reader can tell a complete entry of
//! the key it asked for from a truncated, corrupt or misplaced file. Pure code.
//!
//! ```text
//! offset  size  what
//!      0     8  magic "GPRSENT2"
//!      8     8  payload length, little-endian
//!     16    32  the key (the file name says it too)
//!     48    16  the kind ("cubin", ...), ASCII, NUL-padded
//!     64     n  the payload (64-byte header: the payload starts 16-byte aligned in a
//!               buffer that is)
//!   64+n     8  checksum: XXH64 (seed 0) of bytes 0..64+n, little-endian
//! ```
//!
//! The checksum is for integrity, not authenticity, so a fast non-cryptographic hash
//! (XXH64, the `xxhash-rust` crate) is enough. What it must catch is damage: a write cut short (the
//! length field catches that first), a flipped or zeroed block, a file of another
//! format. A 64-bit hash misses random damage with probability 2^-64. Forgery is not
//! its job and no checksum could do it: the checksum has no secret, so whoever can
//! write an entry can write a matching checksum, a SHA-256 as well as this one. What
//! keeps foreign entries out is the store ([`super::store`]): a private directory, and
//! entries used only when owned by the user and writable by no one else. That an entry
//! belongs to its inputs is the key's job: a SHA-256 of every input ([`super::key`]),
//! in the file name and repeated in the header.

use super::key::Key;
use std::fmt;
use xxhash_rust::xxh64::xxh64;

/// The first bytes of every entry.
pub const MAGIC: [u8; 8] = *b"GPRSENT2";
/// Bytes before the payload.
pub const HEADER: usize = 64;
/// Bytes after the payload (the checksum).
pub const TRAILER: usize = 8;
/// The longest kind name.
pub const MAX_KIND: usize = 16;

/// Whether `kind` may name entries: 1 to [`MAX_KIND`] characters of `[a-z0-9-]`.
pub fn valid_kind(kind: &str) -> bool {
    !kind.is_empty()
        && kind.len() <= MAX_KIND
        && kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The entry file's bytes for `payload` under (`kind`, `key`). `kind` must be valid
/// ([`valid_kind`]).
pub fn encode(kind: &str, key: &Key, payload: &[u8]) -> Vec<u8> {
    debug_assert!(valid_kind(kind));
    let mut out = Vec::with_capacity(HEADER + payload.len() + TRAILER);
    out.extend_from_slice(&header(kind, key, payload.len() as u64));
    out.extend_from_slice(payload);
    let sum = xxh64(&out, 0);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

fn header(kind: &str, key: &Key, len: u64) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[0..8].copy_from_slice(&MAGIC);
    h[8..16].copy_from_slice(&len.to_le_bytes());
    h[16..48].copy_from_slice(&key.0);
    h[48..48 + kind.len()].copy_from_slice(kind.as_bytes());
    h
}

/// Why a file is not a usable entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Defect {
    /// Not an entry of this format (other magic, or shorter than a header).
    NotAnEntry,
    /// Fewer bytes than the header announces (an interrupted write, a full disk).
    Truncated {
        /// Bytes in the file.
        have: usize,
        /// Bytes a complete entry has.
        want: u64,
    },
    /// More bytes than the header announces.
    TrailingBytes {
        /// Bytes in the file.
        have: usize,
        /// Bytes a complete entry has.
        want: u64,
    },
    /// The checksum does not match the contents.
    Checksum,
    /// A complete entry, but of another key or kind (a renamed file).
    OtherKey,
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Defect::NotAnEntry => write!(f, "not a cache entry"),
            Defect::Truncated { have, want } => {
                write!(f, "truncated ({have} of {want} bytes)")
            }
            Defect::TrailingBytes { have, want } => {
                write!(f, "corrupt ({have} bytes where the header says {want})")
            }
            Defect::Checksum => write!(f, "corrupt (checksum mismatch)"),
            Defect::OtherKey => write!(f, "holds another key's entry"),
        }
    }
}

/// The payload of `bytes` if they are a complete, intact entry of (`kind`, `key`).
pub fn decode<'a>(bytes: &'a [u8], kind: &str, key: &Key) -> Result<&'a [u8], Defect> {
    if bytes.len() < HEADER || bytes[0..8] != MAGIC {
        return Err(Defect::NotAnEntry);
    }
    let len = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    let want = len.saturating_add((HEADER + TRAILER) as u64);
    if (bytes.len() as u64) < want {
        return Err(Defect::Truncated {
            have: bytes.len(),
            want,
        });
    }
    if bytes.len() as u64 > want {
        return Err(Defect::TrailingBytes {
            have: bytes.len(),
            want,
        });
    }
    let end = HEADER + len as usize;
    if xxh64(&bytes[..end], 0).to_le_bytes()[..] != bytes[end..] {
        return Err(Defect::Checksum);
    }
    if bytes[..HEADER] != header(kind, key, len) {
        return Err(Defect::OtherKey);
    }
    Ok(&bytes[HEADER..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: Key = Key([7; 32]);

    #[test]
    fn round_trip() {
        for payload in [&b""[..], b"x", &[0xa5; 1000]] {
            let e = encode("cubin", &K, payload);
            assert_eq!(e.len(), HEADER + payload.len() + TRAILER);
            assert_eq!(decode(&e, "cubin", &K), Ok(payload));
        }
    }

    #[test]
    fn every_truncation_is_seen() {
        let e = encode("cubin", &K, b"0123456789abcdef");
        for n in 0..e.len() {
            let d = decode(&e[..n], "cubin", &K).unwrap_err();
            if n < HEADER {
                assert_eq!(d, Defect::NotAnEntry, "{n} bytes");
            } else {
                assert_eq!(
                    d,
                    Defect::Truncated {
                        have: n,
                        want: e.len() as u64
                    },
                    "{n} bytes"
                );
            }
        }
        let mut longer = e.clone();
        longer.push(0);
        assert!(matches!(
            decode(&longer, "cubin", &K),
            Err(Defect::TrailingBytes { .. })
        ));
    }

    #[test]
    fn every_flipped_bit_is_seen() {
        let e = encode("cubin", &K, b"payload bytes");
        for i in 0..e.len() * 8 {
            let mut bad = e.clone();
            bad[i / 8] ^= 1 << (i % 8);
            assert!(decode(&bad, "cubin", &K).is_err(), "bit {i}");
        }
    }

    #[test]
    fn other_key_or_kind() {
        let e = encode("cubin", &K, b"p");
        assert_eq!(decode(&e, "cubin", &Key([8; 32])), Err(Defect::OtherKey));
        assert_eq!(decode(&e, "shape", &K), Err(Defect::OtherKey));
        assert_eq!(decode(b"ELF...", "cubin", &K), Err(Defect::NotAnEntry));
        // A length field near u64::MAX is a truncation, not an overflow.
        let mut huge = e.clone();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            decode(&huge, "cubin", &K),
            Err(Defect::Truncated { .. })
        ));
    }

    #[test]
    fn checksum_is_xxh64_as_before() {
        // The checksum the hand-written XXH64 this crate had until xxhash-rust
        // replaced it gave for this entry: entries written before stay valid.
        let key = crate::cache::key::tests::key_of("gomp-plugin-rs test 1");
        let payload: Vec<u8> = (0..1000u32).map(|i| (i * 31 + 7) as u8).collect();
        let e = encode("cubin", &key, &payload);
        assert_eq!(
            e[e.len() - 8..],
            [0x42, 0xf6, 0x1a, 0xee, 0xc2, 0x32, 0xc4, 0x03]
        );
        assert_eq!(decode(&e, "cubin", &key), Ok(&payload[..]));
        // The reference library's answers (libxxhash 0.8.1).
        for (s, want) in [
            (&b""[..], 0xef46db3751d8e999),
            (b"abc", 0x44bc2cf5ad770999),
            (b"abcdefghijklmnopqrstuvwxyz", 0xcfe1f278fa89835c),
        ] {
            assert_eq!(xxh64(s, 0), want);
        }
    }

    #[test]
    fn kinds() {
        assert!(valid_kind("cubin") && valid_kind("launch-shape") && valid_kind("a1"));
        for bad in ["", "Cubin", "a/b", "a.b", "seventeen-chars-x", "tmp "] {
            assert!(!valid_kind(bad), "{bad:?}");
        }
    }
}
