//! The kernel metadata of an AMDGPU code object (v3 and later): the MessagePack map in
//! the `NT_AMDGPU_METADATA` note (owner "AMDGPU"), `amdhsa.kernels` entries with the keys
//! documented in LLVM's AMDGPUUsage ("Code Object V3 Metadata"), decoded with the `rmpv`
//! crate. Only the keys a dispatch needs are kept. GCC 16's images carry one such note
//! per kernel (checked on tests/fixtures/gcn); the code object reader
//! ([`super::code_object`]) finds the notes and passes each description here. Pure;
//! owned data; thread-safe.

use gomp_plugin::error::{Error, Result};
use rmpv::ValueRef;

/// `NT_AMDGPU_METADATA`.
pub const NT_AMDGPU_METADATA: u32 = 32;

/// Deepest nesting decoded (each map or array and each string or byte string within
/// counts as rmpv counts depth; the metadata is about 10 deep): a bound on the
/// decoder's recursion, so a hostile note cannot exhaust the stack.
pub const MAX_DEPTH: usize = 64;
/// What the metadata says about one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelMeta {
    /// `.name`, e.g. `main._omp_fn.0`.
    pub name: String,
    /// `.symbol`, the kernel descriptor, e.g. `main._omp_fn.0.kd`.
    pub symbol: String,
    /// `.kernarg_segment_size`: bytes of kernel arguments.
    pub kernarg_segment_size: u32,
    /// `.kernarg_segment_align`: their alignment (a power of two; 0 in GCC's images
    /// of kernels without arguments).
    pub kernarg_segment_align: u32,
    /// `.group_segment_fixed_size`: LDS bytes the kernel itself uses.
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size`: scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// `.wavefront_size` (32 or 64).
    pub wavefront_size: u32,
    /// `.max_flat_workgroup_size`.
    pub max_flat_workgroup_size: u32,
    /// `.sgpr_count`.
    pub sgpr_count: u32,
    /// `.vgpr_count`.
    pub vgpr_count: u32,
}

fn bad(what: impl std::fmt::Display) -> Error {
    Error::invalid(format!("invalid gcn code object: metadata note: {what}"))
}

/// The value of key `key` in `map`, if it is a map with such a string key.
fn get<'a, 'v>(map: &'v ValueRef<'a>, key: &str) -> Option<&'v ValueRef<'a>> {
    match map {
        ValueRef::Map(m) => m
            .iter()
            .find(|(k, _)| matches!(k, ValueRef::String(s) if s.as_str() == Some(key)))
            .map(|(_, v)| v),
        _ => None,
    }
}

fn text<'v>(v: &'v ValueRef<'_>) -> Option<&'v str> {
    match v {
        ValueRef::String(s) => s.as_str(),
        _ => None,
    }
}

/// What kind of value `v` is, in words.
fn kind(v: &ValueRef<'_>) -> &'static str {
    match v {
        ValueRef::Nil => "nil",
        ValueRef::Boolean(_) => "a boolean",
        ValueRef::Integer(_) => "an integer",
        ValueRef::F32(_) | ValueRef::F64(_) => "a float",
        ValueRef::String(_) => "a string",
        ValueRef::Binary(_) => "a byte string",
        ValueRef::Array(_) => "an array",
        ValueRef::Map(_) => "a map",
        ValueRef::Ext(..) => "an extension value",
    }
}

fn field(k: &ValueRef<'_>, key: &str, name: &str) -> Result<u32> {
    match get(k, key) {
        None => Ok(0),
        Some(v) => v
            .as_u64()
            .and_then(|x| u32::try_from(x).ok())
            .ok_or_else(|| bad(format!("kernel '{name}': {key} is not a 32-bit count"))),
    }
}

/// The kernels described by one metadata note's description (a msgpack map; nothing
/// may follow it).
pub fn kernels(desc: &[u8]) -> Result<Vec<KernelMeta>> {
    let mut rest = desc;
    let root = rmpv::decode::read_value_ref_with_max_depth(&mut rest, MAX_DEPTH)
        .map_err(|e| bad(format!("invalid msgpack: {e}")))?;
    if !rest.is_empty() {
        return Err(bad(format!(
            "invalid msgpack: {} bytes after the value",
            rest.len()
        )));
    }
    if !matches!(root, ValueRef::Map(_)) {
        return Err(bad(format!(
            "invalid msgpack: the value is {}, not a map",
            kind(&root)
        )));
    }
    let Some(list) = get(&root, "amdhsa.kernels") else {
        return Ok(Vec::new());
    };
    let ValueRef::Array(list) = list else {
        return Err(bad("amdhsa.kernels is not an array"));
    };
    list.iter()
        .map(|k| {
            let name = get(k, ".name")
                .and_then(text)
                .ok_or_else(|| bad("a kernel without .name"))?
                .to_string();
            let symbol = get(k, ".symbol")
                .and_then(text)
                .ok_or_else(|| bad(format!("kernel '{name}' without .symbol")))?
                .to_string();
            let f = |key| field(k, key, &name);
            Ok(KernelMeta {
                kernarg_segment_size: f(".kernarg_segment_size")?,
                kernarg_segment_align: f(".kernarg_segment_align")?,
                group_segment_fixed_size: f(".group_segment_fixed_size")?,
                private_segment_fixed_size: f(".private_segment_fixed_size")?,
                wavefront_size: f(".wavefront_size")?,
                max_flat_workgroup_size: f(".max_flat_workgroup_size")?,
                sgpr_count: f(".sgpr_count")?,
                vgpr_count: f(".vgpr_count")?,
                name,
                symbol,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(out: &mut Vec<u8>, t: &str) {
        out.push(0xa0 | t.len() as u8);
        out.extend_from_slice(t.as_bytes());
    }

    /// `{"amdhsa.version": [1, 2], "amdhsa.kernels": [{...one kernel...}]}` with
    /// `extra` appended to the kernel's map (its count included in `n_extra`).
    fn note(n_extra: u8, extra: &[u8]) -> Vec<u8> {
        let mut b = vec![0x82];
        s(&mut b, "amdhsa.version");
        b.extend_from_slice(&[0x92, 0x01, 0x02]);
        s(&mut b, "amdhsa.kernels");
        b.push(0x91);
        b.push(0x85 + n_extra);
        s(&mut b, ".name");
        s(&mut b, "main._omp_fn.0");
        s(&mut b, ".symbol");
        s(&mut b, "main._omp_fn.0.kd");
        s(&mut b, ".group_segment_fixed_size");
        b.extend_from_slice(&[0xcd, 0x06, 0x00]); // uint 16
        s(&mut b, ".wavefront_size");
        b.push(0x40);
        s(&mut b, ".sgpr_count");
        b.extend_from_slice(&[0xce, 0, 0, 0, 62]); // uint 32
        b.extend_from_slice(extra);
        b
    }

    #[test]
    fn one_kernel() {
        let k = kernels(&note(0, &[])).unwrap();
        assert_eq!(
            k,
            [KernelMeta {
                name: "main._omp_fn.0".into(),
                symbol: "main._omp_fn.0.kd".into(),
                kernarg_segment_size: 0,
                kernarg_segment_align: 0,
                group_segment_fixed_size: 0x600,
                private_segment_fixed_size: 0,
                wavefront_size: 64,
                max_flat_workgroup_size: 0,
                sgpr_count: 62,
                vgpr_count: 0,
            }]
        );
        // A map without amdhsa.kernels describes none.
        assert_eq!(kernels(&[0x80]).unwrap(), []);
    }

    fn err(b: &[u8]) -> String {
        kernels(b).unwrap_err().to_string()
    }

    #[test]
    fn bad_notes_are_errors() {
        let mut e = Vec::new();
        s(&mut e, ".vgpr_count");
        e.extend_from_slice(&[0xcf, 0, 0, 0, 1, 0, 0, 0, 0]); // 2^32
        assert!(err(&note(1, &e)).contains("'main._omp_fn.0': .vgpr_count is not a 32-bit count"));
        let mut e = Vec::new();
        s(&mut e, ".vgpr_count");
        e.push(0xff); // -1
        assert!(err(&note(1, &e)).contains(".vgpr_count is not a 32-bit count"));
        let mut b = note(0, &[]);
        b.push(0x00);
        assert!(err(&b).contains("1 bytes after the value"), "{}", err(&b));
        let b = note(0, &[]);
        assert!(err(&b[..b.len() - 1]).contains("invalid msgpack"));
        for (b, what) in [
            (&[0xc1][..], "nil"), // reserved: rmpv reads nil
            (&[0x91, 0x80], "an array"),
            (&[0xa1, b'x'], "a string"),
        ] {
            let e = err(b);
            assert!(
                e.contains(&format!("the value is {what}, not a map")),
                "{e}"
            );
            assert!(
                e.starts_with("invalid gcn code object: metadata note: "),
                "{e}"
            );
        }
        let mut b = vec![0x81];
        s(&mut b, "amdhsa.kernels");
        b.push(0x80);
        assert!(err(&b).contains("amdhsa.kernels is not an array"));
        // Nested deeper than MAX_DEPTH: an error, not a stack overflow.
        let mut b = vec![0x81];
        s(&mut b, "x");
        b.extend(std::iter::repeat_n(0x91, 10_000));
        b.push(0xc0);
        assert!(err(&b).contains("depth limit"), "{}", err(&b));
        // A count the input cannot hold: an error, not an allocation.
        assert!(err(&[0xdd, 0xff, 0xff, 0xff, 0xff]).contains("invalid msgpack"));
    }

    #[test]
    fn random_bytes_never_panic() {
        let good = note(0, &[]);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        for _ in 0..20_000 {
            let mut b = good.clone();
            let n = next() as usize % 4;
            for _ in 0..=n {
                let at = next() as usize % b.len();
                b[at] = next() as u8;
            }
            b.truncate(next() as usize % (good.len() + 1));
            let _ = kernels(&b);
        }
    }
}
