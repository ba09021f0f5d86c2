//! Which optional symbols a loaded image's PTX text mentions, so that the plugin asks
//! the driver for an optional symbol (`__gomp_additional_icvs`, `__nvptx_clocktick`,
//! the reverse-offload and indirect-function tables, constructor kernels: [`OPTIONAL`])
//! only when the image can define it. A lookup of an absent name is a failed CUDA
//! call, which compute-sanitizer and driver API traces report as an error; skipping it
//! keeps the plugin's CUDA calls error-free on well-formed images.
//!
//! A symbol a module defines is spelled in its PTX, so "not mentioned" is a safe
//! "not defined"; a mentioned name is still looked up (it may only be referenced).
//! Any other name (the image's kernels and variables, which it must define) counts as
//! mentioned: it is always looked up.
//!
//! The scan runs at every image load over all of the image's PTX (hundreds of KiB:
//! GCC links libgomp's device code into every image), so it only stops where `__` or
//! `$o` stands (every optional symbol starts with one of them), found eight bytes at a
//! time, and tells most identifiers there apart by their length alone.

use std::ffi::CStr;

/// The optional symbols, each answered by the scan.
pub const OPTIONAL: [&CStr; 11] = [
    c"__gomp_additional_icvs",
    c"__nvptx_clocktick",
    c"__do_global_ctors__entry",
    c"__do_global_ctors__entry__mgomp",
    c"__do_global_dtors__entry",
    c"__do_global_dtors__entry__mgomp",
    c"__gomp_indirect_addr_hmap",
    c"__gomp_indirect_addr_map",
    c"$offload_ind_func_table",
    c"$offload_func_table",
    c"__gomp_rev_offload_var",
];

/// Which of [`OPTIONAL`] an image's PTX mentions (bit i: `OPTIONAL[i]`). `Copy`, plain
/// data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtxNames(u32);

/// Characters that continue an identifier (`[A-Za-z0-9_$]`).
fn is_follow(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// The two bytes every [`OPTIONAL`] symbol starts with, one pair or the other.
const STARTS: [[u8; 2]; 2] = [*b"__", *b"$o"];

/// Whether the bytes of `t` at `j` are one of [`STARTS`].
#[inline]
fn starts_at(t: &[u8], j: usize) -> bool {
    j + 1 < t.len() && STARTS.iter().any(|p| t[j] == p[0] && t[j + 1] == p[1])
}

/// The index of the first `__` or `$o` in `t` at or after `i`.
#[inline]
fn next_candidate(t: &[u8], mut i: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let word = |at: usize| u64::from_le_bytes(t[at..at + 8].try_into().expect("8 bytes"));
    // A zero byte in w ^ c*ONES is a byte equal to c. The flags are exact up to the
    // lowest true one (a borrow only reaches the bytes above it), so a flag of the
    // combined mask may be false: each is checked.
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let splat = |c: u8| ONES * c as u64;
    while i + 9 <= t.len() {
        // Bytes i..i+8, and the byte after each.
        let (w, next) = (word(i), word(i + 1));
        let mut m = 0;
        for p in STARTS {
            m |= zero(w ^ splat(p[0])) & zero(next ^ splat(p[1]));
        }
        if m == 0 {
            i += 8;
            continue;
        }
        let j = i + (m.trailing_zeros() / 8) as usize;
        if starts_at(t, j) {
            return Some(j);
        }
        i = j + 1;
    }
    (i..t.len()).find(|&j| starts_at(t, j))
}

impl PtxNames {
    /// Scans every PTX object (NUL-terminated or not) for the optional symbols.
    pub fn from_ptx<T: AsRef<[u8]>>(objects: &[T]) -> PtxNames {
        let names = OPTIONAL.map(CStr::to_bytes);
        // Most identifiers with a `_` or `$` (labels, locals, libgomp's own symbols)
        // are shorter or longer than every optional symbol: told apart by length alone.
        let shortest = names.iter().map(|n| n.len()).min().unwrap_or(0);
        let longest = names.iter().map(|n| n.len()).max().unwrap_or(0);
        let mut found = 0u32;
        let all = (1u32 << OPTIONAL.len()) - 1;
        for text in objects {
            let t = text.as_ref();
            let mut i = 0;
            while found != all {
                let Some(start) = next_candidate(t, i) else {
                    break;
                };
                // The identifier this character belongs to: where it starts (an
                // identifier may begin with a letter, `_`, `$` or `%`) and ends.
                let mut s = start;
                while s > 0 && (is_follow(t[s - 1]) || t[s - 1] == b'%') {
                    s -= 1;
                }
                let mut end = start + 1;
                while end < t.len() && is_follow(t[end]) {
                    end += 1;
                }
                i = end;
                // The whole token must be the name (a longer identifier, a `%` register
                // or a number containing it is not).
                let id = &t[s..end];
                if id.len() < shortest || id.len() > longest {
                    continue;
                }
                if let Some(k) = names.iter().position(|n| *n == id) {
                    found |= 1 << k;
                }
            }
        }
        PtxNames(found)
    }

    /// Whether the PTX mentions `name`: for an [`OPTIONAL`] symbol, what the scan found;
    /// any other name counts as mentioned.
    pub fn mentions(&self, name: &CStr) -> bool {
        match OPTIONAL.iter().position(|n| *n == name) {
            Some(k) => self.0 & (1 << k) != 0,
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_declared_names_only() {
        let ptx = b".version 7.0\n.target sm_70\n.address_size 64\n\
            .visible .global .align 8 .u64 __gomp_rev_offload_var;\n\
            .global .align 8 .u64 $offload_func_table[2] = {main$_omp_fn$0, 0};\n\
            .visible .entry main$_omp_fn$0(.param .u64 %in_ar0)\n{\n\
            mov.f32 %f1, 0f3F800000;\n ld.u64 %rd1, [__nvptx_clocktick+8];\n\
            $L__gomp_additional_icvs: x__do_global_ctors__entry\n\
            %__do_global_dtors__entry 0__gomp_indirect_addr_map\n\
            __gomp_indirect_addr_hmap_x ret;\n}\n\0";
        let n = PtxNames::from_ptx(&[&ptx[..]]);
        for yes in [
            c"__gomp_rev_offload_var",
            c"$offload_func_table",
            c"__nvptx_clocktick",
            // Not optional: always looked up.
            c"main$_omp_fn$0",
            c"main",
        ] {
            assert!(n.mentions(yes), "{yes:?}");
        }
        // Only inside other identifiers or numbers, or absent.
        for no in [
            c"__gomp_additional_icvs",
            c"__do_global_ctors__entry",
            c"__do_global_dtors__entry",
            c"__gomp_indirect_addr_map",
            c"__gomp_indirect_addr_hmap",
            c"__do_global_ctors__entry__mgomp",
            c"$offload_ind_func_table",
        ] {
            assert!(!n.mentions(no), "{no:?}");
        }
    }

    #[test]
    fn every_optional_symbol_starts_as_the_scan_expects() {
        for n in OPTIONAL {
            assert!(starts_at(n.to_bytes(), 0), "{n:?}");
        }
    }

    #[test]
    fn candidates_against_a_plain_search() {
        // Pairs at every offset, near misses (`_$`, `$_`, `_o`, `$O`), runs of `_`
        // and the last byte of the text.
        let text = b"a__b$oc_$d$_e_of$O__$o___x$$o_ $ _";
        for start in 0..=text.len() {
            let t = &text[start..];
            let mut got = Vec::new();
            let mut i = 0;
            while let Some(j) = next_candidate(t, i) {
                got.push(j);
                i = j + 1;
            }
            let want: Vec<usize> = (0..t.len()).filter(|&j| starts_at(t, j)).collect();
            assert_eq!(got, want, "from {start}");
            assert!(want
                .iter()
                .all(|&j| t[j..].starts_with(b"__") || t[j..].starts_with(b"$o")));
        }
    }

    #[test]
    fn every_symbol_at_every_alignment() {
        for (k, name) in OPTIONAL.iter().enumerate() {
            for pad in 0..9 {
                let text = format!("{}{} x", " ".repeat(pad), name.to_str().unwrap());
                let n = PtxNames::from_ptx(&[text.as_bytes()]);
                assert_eq!(n, PtxNames(1 << k), "{name:?} after {pad} spaces");
                // At the very end of the text, and before a NUL.
                let n = PtxNames::from_ptx(&[format!(
                    "{}{}\0",
                    " ".repeat(pad),
                    name.to_str().unwrap()
                )]);
                assert_eq!(n, PtxNames(1 << k), "{name:?} at the end");
            }
        }
    }

    #[test]
    fn several_objects_and_garbage() {
        let n = PtxNames::from_ptx(&[
            b"a_1 b\xff\xfe$offload_func_table".to_vec(),
            b"".to_vec(),
            b"__nvptx_clocktick".to_vec(),
            b"_".to_vec(),
            b"$".to_vec(),
        ]);
        assert_eq!(n, PtxNames(1 << 9 | 1 << 1));
        assert_eq!(PtxNames::from_ptx::<&[u8]>(&[]), PtxNames(0));
    }
}
