//! System-wide attributes (`hsa_system_get_info`): the timestamp frequency and the
//! runtime's version. Plain queries, safe from any thread.

use crate::hsa::error::check;
use crate::hsa::sys::*;
use crate::hsa::table::Runtime;
use gomp_plugin::error::Result;

/// Reads system attribute `attr` into a `T`; `what` names the call in the error.
///
/// # Safety
/// `T` must be the attribute's type (HSA spec).
unsafe fn get<T: Default>(rt: &Runtime, attr: hsa_system_info_t, what: &'static str) -> Result<T> {
    let mut v = T::default();
    // SAFETY: out-pointer to a local of the attribute's type (caller).
    let st = unsafe { (rt.hsa_system_get_info)(attr, (&mut v as *mut T).cast()) };
    check(st, what)?;
    Ok(v)
}

/// `HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY`: timestamp ticks per second (the unit of
/// signal wait timeouts).
pub fn timestamp_frequency(rt: &Runtime) -> Result<u64> {
    // SAFETY: the attribute is a `uint64_t`.
    unsafe {
        get(
            rt,
            hsa_system_info_t_HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY,
            "hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY)",
        )
    }
}

/// `HSA_SYSTEM_INFO_VERSION_MAJOR` and `_MINOR`: the HSA version the runtime implements.
pub fn version(rt: &Runtime) -> Result<(u16, u16)> {
    let what = "hsa_system_get_info(HSA_SYSTEM_INFO_VERSION)";
    // SAFETY: both version attributes are `uint16_t`.
    unsafe {
        Ok((
            get(rt, hsa_system_info_t_HSA_SYSTEM_INFO_VERSION_MAJOR, what)?,
            get(rt, hsa_system_info_t_HSA_SYSTEM_INFO_VERSION_MINOR, what)?,
        ))
    }
}
