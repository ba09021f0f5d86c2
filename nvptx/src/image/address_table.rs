//! The address table `load_image` returns for an nvptx image (as gcn's
//! `image/address_table.rs`; contract, ABI spec §5.3: one entry per kernel, one per
//! `declare target` variable, then the last entry, in the host table's order; the
//! framework writes the kernels' entries, this file the rest): the variables' device
//! ranges looked up by name ([`var_pairs`]) and the table after the kernels' entries
//! ([`assemble`]: the variables, then the ICV block, or under libgomp 12 the device
//! number's word, [`ICVS_SYMBOL`], [`DEVICE_NUM_SYMBOL`]). The lookups are the image's
//! (`Image::global`, passed in). Pure; thread-safe.

use crate::cuda::sys::CUdeviceptr;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::abi::AddrPair;
use std::ffi::{CStr, CString};

/// The device libgomp's ICV block (`GOMP_ADDITIONAL_ICVS`): the table's last entry
/// under libgomp 13 and later, which writes the ICVs into it.
pub const ICVS_SYMBOL: &CStr = c"__gomp_additional_icvs";
/// The device number's word: the table's last entry under libgomp 12, which writes the
/// device number into it.
pub const DEVICE_NUM_SYMBOL: &CStr = c"__gomp_device_num";

/// A device global's `(address, bytes)` as a table entry.
pub fn pair((p, n): (CUdeviceptr, usize)) -> AddrPair {
    AddrPair {
        start: p as usize,
        end: p as usize + n,
    }
}

/// The variables' entries: each of `vars`, in order, looked up with `global` (the
/// image's device global of that name, `None` if it has none, which fails the load).
pub fn var_pairs(
    vars: &[CString],
    global: impl Fn(&CStr) -> Result<Option<(CUdeviceptr, usize)>>,
) -> Result<Vec<AddrPair>> {
    vars.iter()
        .map(|v| {
            let g = global(v)?.ok_or_else(|| {
                Error::invalid(format!(
                    "offload image lacks variable '{}'",
                    v.to_string_lossy()
                ))
            })?;
            Ok(pair(g))
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

    #[test]
    fn variables_in_order_then_the_last_entry() {
        let names = [CString::new("va").unwrap(), CString::new("vb").unwrap()];
        let global = |n: &CStr| {
            Ok(match n.to_bytes() {
                b"va" => Some((0x1000, 20)),
                b"vb" => Some((0x2000, 8)),
                _ => None,
            })
        };
        let vars = var_pairs(&names, global).unwrap();
        assert_eq!(vars, [pair((0x1000, 20)), pair((0x2000, 8))]);
        let icvs = pair((0x500, 16));
        assert_eq!(assemble(&vars, Some(icvs)), [vars[0], vars[1], icvs]);
        assert_eq!(assemble(&[], None), [AddrPair::default()]);
        let missing = [CString::new("vc").unwrap()];
        let e = var_pairs(&missing, global).unwrap_err().to_string();
        assert!(e.contains("offload image lacks variable 'vc'"), "{e}");
    }
}
