//! Settings as the environment writes them, shared by every backend: byte counts with
//! binary suffixes. A backend reads its variables through these, reports a bad value with
//! a `libgomp:` message and keeps its default. Plain functions, no state.

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

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8192"), Some(8192));
        assert_eq!(parse_size(" 64k"), Some(65536));
        assert_eq!(parse_size(" 2k "), Some(2048));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("0x100"), Some(256));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        for bad in [
            "",
            "k",
            "-1",
            "12q",
            "0x",
            "99999999999999999999",
            "99999999999g",
            "18446744073709551615g",
        ] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }
}
