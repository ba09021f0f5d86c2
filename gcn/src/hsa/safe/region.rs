//! Memory regions of an agent (`hsa_agent_iterate_regions`) and the attributes the
//! plugin reads from them. Regions are not owned: their handles stay valid while the
//! runtime is loaded. Plain queries, safe from any thread.

use crate::hsa::error::check;
use crate::hsa::sys::*;
use crate::hsa::table::Runtime;
use gomp_plugin::error::Result;
use std::ffi::c_void;

unsafe extern "C" fn push(r: hsa_region_t, data: *mut c_void) -> hsa_status_t {
    // SAFETY: `data` is the `Vec` that `all` passes, live for the whole iteration and
    // used by this thread only.
    let out = unsafe { &mut *(data as *mut Vec<hsa_region_t>) };
    out.push(r);
    hsa_status_t_HSA_STATUS_SUCCESS
}

/// Every region of `agent`, in the runtime's order.
pub fn all(rt: &Runtime, agent: hsa_agent_t) -> Result<Vec<hsa_region_t>> {
    let mut out: Vec<hsa_region_t> = Vec::new();
    // SAFETY: `push` matches the callback type and uses `out` only during the call.
    let st = unsafe {
        (rt.hsa_agent_iterate_regions)(
            agent,
            Some(push),
            (&mut out as *mut Vec<hsa_region_t>).cast(),
        )
    };
    check(st, "hsa_agent_iterate_regions")?;
    Ok(out)
}

/// Reads attribute `attr` of `r` into a `T`; `None` when the runtime refuses.
///
/// # Safety
/// `T` must be the attribute's type (HSA spec).
unsafe fn get<T: Default>(rt: &Runtime, r: hsa_region_t, attr: hsa_region_info_t) -> Option<T> {
    let mut v = T::default();
    // SAFETY: out-pointer to a local of the attribute's type (caller).
    let st = unsafe { (rt.hsa_region_get_info)(r, attr, (&mut v as *mut T).cast()) };
    (st == hsa_status_t_HSA_STATUS_SUCCESS).then_some(v)
}

/// The global-segment flags (`HSA_REGION_GLOBAL_FLAG_*`) of a region if it is global
/// and runtime-allocatable, else `None` (also when a query fails).
pub fn global_flags(rt: &Runtime, r: hsa_region_t) -> Option<u32> {
    // SAFETY: the segment is an enum, RUNTIME_ALLOC_ALLOWED a bool, the flags a u32
    // bit set.
    unsafe {
        let seg: hsa_region_segment_t = get(rt, r, hsa_region_info_t_HSA_REGION_INFO_SEGMENT)?;
        let alloc: bool = get(
            rt,
            r,
            hsa_region_info_t_HSA_REGION_INFO_RUNTIME_ALLOC_ALLOWED,
        )?;
        if seg != hsa_region_segment_t_HSA_REGION_SEGMENT_GLOBAL || !alloc {
            return None;
        }
        get(rt, r, hsa_region_info_t_HSA_REGION_INFO_GLOBAL_FLAGS)
    }
}

/// `HSA_REGION_INFO_SIZE`: the region's size in bytes.
pub fn size(rt: &Runtime, r: hsa_region_t) -> Result<usize> {
    let mut size: usize = 0;
    // SAFETY: the attribute is a `size_t`.
    let st = unsafe {
        (rt.hsa_region_get_info)(
            r,
            hsa_region_info_t_HSA_REGION_INFO_SIZE,
            (&mut size as *mut usize).cast(),
        )
    };
    check(st, "hsa_region_get_info(HSA_REGION_INFO_SIZE)")?;
    Ok(size)
}
