//! The kernel metadata of an AMDGPU code object (v3 and later): the msgpack map in the
//! `NT_AMDGPU_METADATA` note (owner "AMDGPU"), `amdhsa.kernels` entries with the keys
//! documented in LLVM's AMDGPUUsage ("Code Object V3 Metadata"). Only the keys a
//! dispatch needs are kept. GCC 16's images carry one such note per kernel (checked on
//! tests/fixtures/gcn); all notes are read. Pure; owned data; thread-safe.

use super::msgpack::{self, Value};
use gomp_plugin::error::{Error, Result};

/// `NT_AMDGPU_METADATA`.
pub const NT_AMDGPU_METADATA: u32 = 32;

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

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn pad4(n: usize) -> Option<usize> {
    n.checked_add(3).map(|x| x & !3)
}

/// One ELF note: owner name (without its NUL), type, description.
pub type Note<'a> = (&'a [u8], u32, &'a [u8]);

/// The notes of a `SHT_NOTE` section.
pub fn notes(sec: &[u8]) -> Result<Vec<Note<'_>>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < sec.len() {
        if sec.len() - at < 12 {
            return Err(bad(format!("truncated note header at offset {at}")));
        }
        let namesz = u32_at(sec, at) as usize;
        let descsz = u32_at(sec, at + 4) as usize;
        let kind = u32_at(sec, at + 8);
        let name_at = at + 12;
        let desc_at = pad4(namesz).and_then(|n| name_at.checked_add(n));
        let end = desc_at.and_then(|d| pad4(descsz).and_then(|n| d.checked_add(n)));
        let (Some(desc_at), Some(end)) = (desc_at, end) else {
            return Err(bad(format!("note sizes overflow at offset {at}")));
        };
        if desc_at + descsz > sec.len() {
            return Err(bad(format!(
                "note at offset {at} ({namesz}-byte name, {descsz}-byte description) runs past its {}-byte section",
                sec.len()
            )));
        }
        let name = &sec[name_at..name_at + namesz];
        let name = name.strip_suffix(&[0]).unwrap_or(name);
        out.push((name, kind, &sec[desc_at..desc_at + descsz]));
        at = end.min(sec.len());
    }
    Ok(out)
}

fn field(k: &Value, key: &str, name: &str) -> Result<u32> {
    match k.get(key) {
        None => Ok(0),
        Some(v) => v
            .as_u64()
            .and_then(|x| u32::try_from(x).ok())
            .ok_or_else(|| bad(format!("kernel '{name}': {key} is not a 32-bit count"))),
    }
}

/// The kernels described by one metadata note's description (a msgpack map).
pub fn kernels(desc: &[u8]) -> Result<Vec<KernelMeta>> {
    let root = msgpack::decode(desc).map_err(|e| bad(e.to_string()))?;
    let Some(list) = root.get("amdhsa.kernels") else {
        return Ok(Vec::new());
    };
    let Value::Array(list) = list else {
        return Err(bad("amdhsa.kernels is not an array"));
    };
    list.iter()
        .map(|k| {
            let name = k
                .get(".name")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("a kernel without .name"))?
                .to_string();
            let symbol = k
                .get(".symbol")
                .and_then(Value::as_str)
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

/// All kernels of the `NT_AMDGPU_METADATA` notes in a `SHT_NOTE` section (other notes
/// are skipped).
pub fn from_note_section(sec: &[u8]) -> Result<Vec<KernelMeta>> {
    let mut out = Vec::new();
    for (owner, kind, desc) in notes(sec)? {
        if owner == b"AMDGPU" && kind == NT_AMDGPU_METADATA {
            out.extend(kernels(desc)?);
        }
    }
    Ok(out)
}
