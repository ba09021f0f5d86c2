//! The key of a cache entry: a SHA-256 digest (the `sha2` crate, which uses the x86
//! SHA extensions when the CPU has them) of everything the entry was derived from, fed
//! as named, length-prefixed fields so that no two different sets of inputs encode to
//! the same bytes. Pure code.

use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// A 32-byte key. `Copy`, plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key(pub [u8; 32]);

impl Key {
    /// The key in lower-case hex (64 characters): the entry's file name.
    pub fn hex(&self) -> String {
        let mut s = String::with_capacity(64);
        for b in self.0 {
            let _ = write!(s, "{b:02x}");
        }
        s
    }
}

/// Builds a [`Key`] from a domain (what kind of derivation, with its format version)
/// and fields in a fixed order. Owned by the thread building the key.
pub struct KeyBuilder(Sha256);

impl KeyBuilder {
    /// Starts a key for `domain`, e.g. `"gomp-plugin-rs nvptx linked image 1"`.
    pub fn new(domain: &str) -> KeyBuilder {
        let mut b = KeyBuilder(Sha256::new());
        b.field("domain", domain.as_bytes());
        b
    }

    /// Adds the field `name` with bytes `value`.
    pub fn field(&mut self, name: &str, value: &[u8]) -> &mut Self {
        self.parts(name, &[value])
    }

    /// Adds the field `name` whose value is the concatenation of `parts` (hashed in
    /// place, not copied).
    pub fn parts(&mut self, name: &str, parts: &[&[u8]]) -> &mut Self {
        let len: u64 = parts.iter().map(|p| p.len() as u64).sum();
        self.0.update((name.len() as u64).to_le_bytes());
        self.0.update(name.as_bytes());
        self.0.update(len.to_le_bytes());
        for p in parts {
            self.0.update(p);
        }
        self
    }

    /// Adds the field `name` with an integer value.
    pub fn int(&mut self, name: &str, value: i64) -> &mut Self {
        self.field(name, &value.to_le_bytes())
    }

    /// The key.
    pub fn finish(self) -> Key {
        Key(self.0.finalize().into())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn key(f: impl FnOnce(&mut KeyBuilder)) -> Key {
        let mut b = KeyBuilder::new("test 1");
        f(&mut b);
        b.finish()
    }

    #[test]
    fn fields_are_unambiguous() {
        let a = key(|b| {
            b.field("x", b"ab").field("y", b"c");
        });
        let same = key(|b| {
            b.field("x", b"ab").field("y", b"c");
        });
        assert_eq!(a, same);
        // Moving a byte across a field boundary, renaming or reordering changes the key.
        for other in [
            key(|b| {
                b.field("x", b"a").field("y", b"bc");
            }),
            key(|b| {
                b.field("x", b"ab").field("z", b"c");
            }),
            key(|b| {
                b.field("y", b"c").field("x", b"ab");
            }),
            key(|b| {
                b.field("x", b"ab");
            }),
            key(|b| {
                b.field("x", b"ab").field("y", b"c").field("y", b"");
            }),
        ] {
            assert_ne!(a, other);
        }
        let mut b = KeyBuilder::new("test 2");
        b.field("x", b"ab").field("y", b"c");
        assert_ne!(a, b.finish(), "the domain is part of the key");
    }

    #[test]
    fn parts_hash_as_their_concatenation() {
        assert_eq!(
            key(|b| {
                b.parts("p", &[b"ab", b"", b"cd"]);
            }),
            key(|b| {
                b.field("p", b"abcd");
            })
        );
        assert_eq!(
            key(|b| {
                b.int("n", -2);
            }),
            key(|b| {
                b.field("n", &(-2i64).to_le_bytes());
            })
        );
    }

    #[test]
    fn key_is_sha256_of_the_encoding() {
        // What the hand-written SHA-256 this crate had until sha2 replaced it gave for
        // these fields, and Python's hashlib.sha256 over the same encoding (u64 LE name
        // length, name, u64 LE value length, value; per field): keys do not change, so
        // the entries written before stay valid.
        let k = key_of("gomp-plugin-rs test 1");
        assert_eq!(
            k.hex(),
            "61b18badea64e9d4f09ccf03e60dcecc1d637d2b0214b46fe119b43d2220adf2"
        );
    }

    /// A key over every kind of field.
    pub(crate) fn key_of(domain: &str) -> Key {
        let mut b = KeyBuilder::new(domain);
        b.field("ptx", b"abc")
            .int("n", -2)
            .parts("p", &[b"x", b"yz"]);
        b.finish()
    }

    #[test]
    fn hex_name() {
        let k = Key([0xab; 32]);
        assert_eq!(k.hex().len(), 64);
        assert!(k.hex().chars().all(|c| c == 'a' || c == 'b'));
        let mut k = Key([0; 32]);
        k.0[0] = 0x0f;
        k.0[31] = 0xf0;
        assert_eq!(k.hex(), format!("0f{}f0", "0".repeat(60)));
    }
}
