//! Byte counts as the environment writes them (`GOMP_NVPTX_*` sizes, the staging
//! shape). Plain functions, no state.

/// Parses a byte count: decimal or `0x` hex, optional `k`/`m`/`g` suffix (binary).
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mul) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1usize << 10),
        b'm' | b'M' => (&s[..s.len() - 1], 1 << 20),
        b'g' | b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let n = match num.strip_prefix("0x").or_else(|| num.strip_prefix("0X")) {
        Some(h) => usize::from_str_radix(h, 16).ok()?,
        None => num.parse::<usize>().ok()?,
    };
    n.checked_mul(mul)
}
