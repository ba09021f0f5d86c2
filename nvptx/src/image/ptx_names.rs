//! The identifiers a loaded image's PTX text mentions, so that the plugin asks the
//! driver for an optional symbol (`__gomp_additional_icvs`, `__nvptx_clocktick`, the
//! reverse-offload and indirect-function tables, constructor kernels) only when the
//! image can define it. A lookup of an absent name is a failed CUDA call, which
//! compute-sanitizer and driver API traces report as an error; skipping it keeps the
//! plugin's CUDA calls error-free on well-formed images.
//!
//! A symbol a module defines is spelled in its PTX, so "not mentioned" is a safe
//! "not defined"; a mentioned name is still looked up (it may only be referenced).

use std::collections::HashSet;
use std::ffi::CStr;

/// The set of PTX identifiers (`[A-Za-z_$%][A-Za-z0-9_$]*`) of an image. Owned; built
/// once at load, then read-only (`Send + Sync`).
#[derive(Debug, Default)]
pub struct PtxNames(HashSet<Box<[u8]>>);

fn is_follow(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

impl PtxNames {
    /// Collects the identifiers of every PTX object (NUL-terminated or not).
    pub fn from_ptx<T: AsRef<[u8]>>(objects: &[T]) -> PtxNames {
        let mut set = HashSet::new();
        for text in objects {
            let t = text.as_ref();
            let mut i = 0;
            while i < t.len() {
                let b = t[i];
                if b.is_ascii_alphabetic() || b == b'_' || b == b'$' || b == b'%' {
                    let start = i;
                    i += 1;
                    while i < t.len() && is_follow(t[i]) {
                        i += 1;
                    }
                    let name = &t[start..i];
                    if !set.contains(name) {
                        set.insert(name.into());
                    }
                } else if b.is_ascii_digit() {
                    // A number (or a suffix of one, e.g. 0f3F800000): not an identifier.
                    while i < t.len() && is_follow(t[i]) {
                        i += 1;
                    }
                } else {
                    i += 1;
                }
            }
        }
        PtxNames(set)
    }

    /// Whether the PTX mentions `name`.
    pub fn mentions(&self, name: &CStr) -> bool {
        self.0.contains(name.to_bytes())
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
            mov.f32 %f1, 0f3F800000;\n ld.u64 %rd1, [__nvptx_clocktick+8];\n ret;\n}\n\0";
        let n = PtxNames::from_ptx(&[&ptx[..]]);
        for yes in [
            c"__gomp_rev_offload_var",
            c"$offload_func_table",
            c"main$_omp_fn$0",
            c"__nvptx_clocktick",
        ] {
            assert!(n.mentions(yes), "{yes:?}");
        }
        for no in [
            c"__gomp_additional_icvs",
            c"main",
            c"__gomp_rev_offload",
            c"f3F800000",
            c"__do_global_ctors__entry",
        ] {
            assert!(!n.mentions(no), "{no:?}");
        }
    }

    #[test]
    fn several_objects_and_garbage() {
        let n = PtxNames::from_ptx(&[b"a_1 b\xff\xfe$c".to_vec(), b"".to_vec(), b"9x y".to_vec()]);
        assert!(n.mentions(c"a_1") && n.mentions(c"b") && n.mentions(c"$c") && n.mentions(c"y"));
        assert!(!n.mentions(c"9x") && !n.mentions(c"x"));
    }
}
