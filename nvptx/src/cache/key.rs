//! The key of a cache entry: a SHA-256 digest of everything the entry was derived
//! from, fed as named, length-prefixed fields so that no two different sets of inputs
//! encode to the same bytes. Pure code.

use super::sha256::{hex, Sha256};

/// A 32-byte key. `Copy`, plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key(pub [u8; 32]);

impl Key {
    /// The key in lower-case hex (64 characters): the entry's file name.
    pub fn hex(&self) -> String {
        hex(&self.0)
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
        self.0.update(&(name.len() as u64).to_le_bytes());
        self.0.update(name.as_bytes());
        self.0.update(&len.to_le_bytes());
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
        Key(self.0.finish())
    }
}

#[cfg(test)]
mod tests {
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
    fn hex_name() {
        let k = Key([0xab; 32]);
        assert_eq!(k.hex().len(), 64);
        assert!(k.hex().chars().all(|c| c == 'a' || c == 'b'));
    }
}
