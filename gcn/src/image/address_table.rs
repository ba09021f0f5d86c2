//! The address table `load_image` returns for a gcn image (as nvptx's
//! `image/address_table.rs`; contract, ABI spec §2 and §5.3: one entry per offload function, one per global variable, then the ICV block,
//! funcs+vars+1 in all, in the host table's order; the framework writes the functions'
//! entries, this file the rest). Pure; thread-safe.
//!
//! What the gcn image contributes was measured on real images built by GCC 16
//! (tests/fixtures/gcn/README): mkoffload's kernel list is `_init_array`,
//! `_fini_array` (constructor/destructor kernels the host table does not have), then
//! the offload functions in the host table's order; the code object's dynamic symbol
//! `.offload_var_table` holds one `(address, size)` u64 pair per variable in the host
//! table's order, the addresses filled in when the runtime relocates the code object;
//! `__gomp_additional_icvs` is the 16-byte ICV block when the device code uses it (the
//! vadd images have it, the vars image not). Images with several kernels and
//! variables were only read, never loaded on a GPU.

use super::cdtors::CDTOR_KERNELS;
use super::descriptor::KernelEntry;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::abi::AddrPair;

/// The code object symbol holding the variables' `(address, size)` pairs.
pub const VAR_TABLE_SYMBOL: &str = ".offload_var_table";
/// The code object symbol holding the offload functions' device addresses, read into
/// `load_image`'s `rev_fn_table` for reverse offload.
pub const FUNC_TABLE_SYMBOL: &str = ".offload_func_table";
/// The device libgomp's ICV block (`GOMP_ADDITIONAL_ICVS`).
pub const ICVS_SYMBOL: &str = "__gomp_additional_icvs";
/// Bytes per `.offload_var_table` entry.
pub const VAR_ENTRY: usize = 16;

/// The descriptor's kernels that are offload functions, in order.
pub fn offload_kernels(kernels: &[KernelEntry]) -> Vec<&KernelEntry> {
    kernels
        .iter()
        .filter(|k| !CDTOR_KERNELS.contains(&k.name.as_str()))
        .collect()
}

/// The variables' entries from the bytes of `.offload_var_table` (`count` pairs).
pub fn var_pairs(bytes: &[u8], count: usize) -> Result<Vec<AddrPair>> {
    if bytes.len() != count * VAR_ENTRY {
        return Err(Error::invalid(format!(
            "gcn image: {VAR_TABLE_SYMBOL} has {} bytes, {count} variable(s) need {}",
            bytes.len(),
            count * VAR_ENTRY
        )));
    }
    bytes
        .chunks_exact(VAR_ENTRY)
        .enumerate()
        .map(|(i, e)| {
            let word = |o: usize| u64::from_le_bytes(e[o..o + 8].try_into().unwrap_or_default());
            let (addr, size) = (word(0), word(8));
            let end = addr.checked_add(size).filter(|_| addr != 0);
            match end {
                Some(end) => Ok(AddrPair {
                    start: addr as usize,
                    end: end as usize,
                }),
                None => Err(Error::invalid(format!(
                    "gcn image: {VAR_TABLE_SYMBOL} entry {i} is ({addr:#x}, {size:#x}), not a device address range"
                ))),
            }
        })
        .collect()
}

/// The table after the kernels' entries (which the framework writes first, one
/// `(handle, handle+1)` per kernel): the variables, then the ICV block (`(0, 0)` if
/// absent).
pub fn assemble(vars: &[AddrPair], icvs: Option<AddrPair>) -> Vec<AddrPair> {
    vars.iter()
        .copied()
        .chain([icvs.unwrap_or_default()])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::check::tests::fixture_file;
    use crate::image::code_object::CodeObject;

    fn kernel(name: &str) -> KernelEntry {
        KernelEntry {
            name: name.into(),
            oacc_dims: [0; 3],
            sgpr_count: 0,
            vgpr_count: 0,
        }
    }

    #[test]
    fn real_image_with_two_kernels_and_two_variables() {
        // mkoffload's kernel list for vars.c (tests/fixtures/gcn/README).
        let ks: Vec<KernelEntry> = [
            "_init_array",
            "_fini_array",
            "zfirst._omp_fn.0",
            "main._omp_fn.0",
        ]
        .map(kernel)
        .to_vec();
        let names: Vec<&str> = offload_kernels(&ks)
            .iter()
            .map(|k| k.name.as_str())
            .collect();
        assert_eq!(names, ["zfirst._omp_fn.0", "main._omp_fn.0"]);
        let b = fixture_file("vars-gfx90a.hsaco.xz");
        let co = CodeObject::parse(&b).unwrap();
        co.check_kernels(names.iter().copied()).unwrap();
        let t = co.symbol(VAR_TABLE_SYMBOL).unwrap();
        let raw = co.file_bytes(&b, t.value, 2 * VAR_ENTRY as u64).unwrap();
        // Before relocation the addresses are 0 (refused); the sizes are va's and vb's.
        assert_eq!(u64::from_le_bytes(raw[8..16].try_into().unwrap()), 20);
        assert_eq!(u64::from_le_bytes(raw[24..32].try_into().unwrap()), 8);
        assert!(var_pairs(raw, 2)
            .unwrap_err()
            .to_string()
            .contains("entry 0"));
        // As the loader leaves it: R_AMDGPU_RELATIVE64 base + va / vb's symbol values.
        let base = 0x7f00_0000_0000u64;
        let mut rel = raw.to_vec();
        for (i, v) in ["va", "vb"].iter().enumerate() {
            let a = base + co.symbol(v).unwrap().value;
            rel[i * 16..i * 16 + 8].copy_from_slice(&a.to_le_bytes());
        }
        let vars = var_pairs(&rel, 2).unwrap();
        let va = (base + co.symbol("va").unwrap().value) as usize;
        assert_eq!(
            vars[0],
            AddrPair {
                start: va,
                end: va + 20
            }
        );
        assert_eq!(vars[1].end - vars[1].start, 8);
        assert!(var_pairs(&rel, 3).is_err(), "count mismatch");
        // This image's device code never reads the ICVs: no block (the vadd images have
        // one, 16 bytes); the table then ends with (0, 0).
        assert!(co.symbol(ICVS_SYMBOL).is_none());
        let icvs = AddrPair {
            start: 0x500,
            end: 0x510,
        };
        let table = assemble(&vars, Some(icvs));
        assert_eq!(table.len(), 2 + 1);
        assert_eq!(table[0], vars[0]);
        assert_eq!(table[2], icvs);
        assert_eq!(assemble(&[], None), [AddrPair::default()]);
    }
}
