//! A small MessagePack reader, enough for the AMDGPU code object metadata note
//! (`NT_AMDGPU_METADATA`, code object v3+, a msgpack map). Decodes every msgpack type
//! (extension values are kept as raw bytes); refuses truncated or too deeply nested
//! input with an error and never reads out of bounds. Pure; owned data; thread-safe.
//! Format: the MessagePack specification (github.com/msgpack/msgpack, spec.md).

use gomp_plugin::error::{Error, Result};

/// A decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `nil`.
    Nil,
    /// `true` / `false`.
    Bool(bool),
    /// Any integer (all fit in an `i128`).
    Int(i128),
    /// `float 32` / `float 64`.
    Float(f64),
    /// `str` (invalid UTF-8 replaced).
    Str(String),
    /// `bin` and `ext` payloads.
    Bin(Vec<u8>),
    /// `array`.
    Array(Vec<Value>),
    /// `map`, in encoded order.
    Map(Vec<(Value, Value)>),
}

impl Value {
    /// The value of key `k` if `self` is a map with a string key `k`.
    pub fn get(&self, k: &str) -> Option<&Value> {
        match self {
            Value::Map(m) => m
                .iter()
                .find(|(key, _)| matches!(key, Value::Str(s) if s == k))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The integer, if `self` is one that fits in a `u64`.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        }
    }

    /// The string, if `self` is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Deepest nesting accepted (the metadata nests 4 levels).
pub const MAX_DEPTH: usize = 32;

fn bad(what: impl std::fmt::Display) -> Error {
    Error::invalid(format!("invalid msgpack: {what}"))
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| {
                bad(format!(
                    "{n} bytes wanted at offset {}, past the end",
                    self.at
                ))
            })?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn uint(&mut self, n: usize) -> Result<u64> {
        Ok(self.take(n)?.iter().fold(0u64, |a, &c| a << 8 | c as u64))
    }

    fn int(&mut self, n: usize) -> Result<i128> {
        let u = self.uint(n)?;
        let bits = 8 * n as u32;
        // Sign-extend from `bits`.
        Ok(((u as i128) << (128 - bits)) >> (128 - bits))
    }

    fn len_of(&mut self, n: usize) -> Result<usize> {
        let l = self.uint(n)? as usize;
        // Every element takes at least one byte: refuse counts the input cannot hold
        // before allocating for them.
        if l > self.b.len() - self.at {
            return Err(bad(format!(
                "length {l} at offset {} exceeds the input",
                self.at
            )));
        }
        Ok(l)
    }

    fn str(&mut self, n: usize) -> Result<Value> {
        Ok(Value::Str(
            String::from_utf8_lossy(self.take(n)?).into_owned(),
        ))
    }

    fn array(&mut self, n: usize, depth: usize) -> Result<Value> {
        (0..n)
            .map(|_| self.value(depth + 1))
            .collect::<Result<_>>()
            .map(Value::Array)
    }

    fn map(&mut self, n: usize, depth: usize) -> Result<Value> {
        (0..n)
            .map(|_| Ok((self.value(depth + 1)?, self.value(depth + 1)?)))
            .collect::<Result<_>>()
            .map(Value::Map)
    }

    fn value(&mut self, depth: usize) -> Result<Value> {
        if depth > MAX_DEPTH {
            return Err(bad(format!("nested deeper than {MAX_DEPTH}")));
        }
        let c = self.take(1)?[0];
        Ok(match c {
            0x00..=0x7f => Value::Int(c as i128),
            0x80..=0x8f => self.map((c & 0xf) as usize, depth)?,
            0x90..=0x9f => self.array((c & 0xf) as usize, depth)?,
            0xa0..=0xbf => self.str((c & 0x1f) as usize)?,
            0xc0 => Value::Nil,
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4..=0xc6 => {
                let n = self.len_of(1 << (c - 0xc4))?;
                Value::Bin(self.take(n)?.to_vec())
            }
            0xc7..=0xc9 => {
                let n = self.len_of(1 << (c - 0xc7))?;
                Value::Bin(self.take(n + 1)?.to_vec())
            }
            0xca => Value::Float(f32::from_bits(self.uint(4)? as u32) as f64),
            0xcb => Value::Float(f64::from_bits(self.uint(8)?)),
            0xcc..=0xcf => Value::Int(self.uint(1 << (c - 0xcc))? as i128),
            0xd0..=0xd3 => Value::Int(self.int(1 << (c - 0xd0))?),
            0xd4..=0xd8 => Value::Bin(self.take(1 + (1 << (c - 0xd4)))?.to_vec()),
            0xd9..=0xdb => {
                let n = self.len_of(1 << (c - 0xd9))?;
                self.str(n)?
            }
            0xdc | 0xdd => {
                let n = self.len_of(2 << (c - 0xdc))?;
                self.array(n, depth)?
            }
            0xde | 0xdf => {
                let n = self.len_of(2 << (c - 0xde))?;
                self.map(n, depth)?
            }
            0xe0..=0xff => Value::Int((c as i8) as i128),
            0xc1 => return Err(bad(format!("reserved byte 0xc1 at offset {}", self.at - 1))),
        })
    }
}

/// Decodes the one value `b` holds; trailing bytes are an error.
pub fn decode(b: &[u8]) -> Result<Value> {
    let mut r = Reader { b, at: 0 };
    let v = r.value(0)?;
    if r.at != b.len() {
        return Err(bad(format!("{} trailing bytes", b.len() - r.at)));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_and_containers() {
        assert_eq!(decode(&[0x05]).unwrap(), Value::Int(5));
        assert_eq!(decode(&[0xff]).unwrap(), Value::Int(-1));
        assert_eq!(decode(&[0xcd, 0x06, 0x00]).unwrap(), Value::Int(0x600));
        assert_eq!(decode(&[0xce, 0, 1, 0, 0]).unwrap(), Value::Int(0x10000));
        assert_eq!(decode(&[0xd1, 0xff, 0xfe]).unwrap(), Value::Int(-2));
        assert_eq!(decode(&[0xc3]).unwrap(), Value::Bool(true));
        assert_eq!(
            decode(&[0xa2, b'h', b'i']).unwrap(),
            Value::Str("hi".into())
        );
        assert_eq!(
            decode(&[0x92, 0x01, 0xc0]).unwrap(),
            Value::Array(vec![Value::Int(1), Value::Nil])
        );
        let m = decode(&[0x81, 0xa1, b'k', 0x07]).unwrap();
        assert_eq!(m.get("k").and_then(Value::as_u64), Some(7));
        assert_eq!(m.get("x"), None);
        assert_eq!(
            decode(&[0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0]).unwrap(),
            Value::Float(1.0)
        );
    }

    #[test]
    fn bad_input_is_an_error() {
        for b in [
            &[][..],
            &[0xc1],
            &[0xa3, b'a'],
            &[0xdd, 0xff, 0xff, 0xff, 0xff],
            &[0x01, 0x02],
        ] {
            assert!(decode(b).is_err(), "{b:x?}");
        }
        // Random bytes (a fixed LCG): errors or values, never a panic.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let b: Vec<u8> = (0..(x % 24) as usize)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 56) as u8
                })
                .collect();
            let _ = decode(&b);
        }
        let deep = vec![0x91u8; MAX_DEPTH + 2];
        assert!(decode(&deep).unwrap_err().to_string().contains("nested"));
    }
}
