//! Agents: the iteration over the runtime's agents and the attribute queries the
//! plugin makes (device type, names, profile, compute units, queue size).
//!
//! Agents are not owned: their handles stay valid while the runtime is loaded (for
//! the process). The functions are plain queries, safe from any thread (HSA spec).

use crate::hsa::error::check;
use crate::hsa::sys::*;
use crate::hsa::table::Runtime;
use gomp_plugin::error::Result;
use std::ffi::c_void;

/// `HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT` (AMD extension attribute, a `uint32_t`).
pub const AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: hsa_agent_info_t = 0xA002;

unsafe extern "C" fn push(agent: hsa_agent_t, data: *mut c_void) -> hsa_status_t {
    // SAFETY: `data` is the `Vec` that `all` passes, live for the whole iteration and
    // used by this thread only.
    let out = unsafe { &mut *(data as *mut Vec<hsa_agent_t>) };
    out.push(agent);
    hsa_status_t_HSA_STATUS_SUCCESS
}

/// Every agent of the runtime, in its order (`hsa_iterate_agents`).
pub fn all(rt: &Runtime) -> Result<Vec<hsa_agent_t>> {
    let mut out: Vec<hsa_agent_t> = Vec::new();
    // SAFETY: `push` matches the callback type and uses `out` only during the call.
    let st =
        unsafe { (rt.hsa_iterate_agents)(Some(push), (&mut out as *mut Vec<hsa_agent_t>).cast()) };
    check(st, "hsa_iterate_agents")?;
    Ok(out)
}

/// Reads attribute `attr` of `agent` into a `T`; `what` names the call in the error.
///
/// # Safety
/// `T` must be the attribute's type (HSA spec), so that the runtime writes no more than
/// `size_of::<T>()` bytes.
unsafe fn get<T: Default>(
    rt: &Runtime,
    agent: hsa_agent_t,
    attr: hsa_agent_info_t,
    what: &'static str,
) -> Result<T> {
    let mut v = T::default();
    // SAFETY: out-pointer to a local of the attribute's type (caller).
    let st = unsafe { (rt.hsa_agent_get_info)(agent, attr, (&mut v as *mut T).cast()) };
    check(st, what)?;
    Ok(v)
}

/// A 64-byte NUL-padded string attribute (`HSA_AGENT_INFO_NAME`, `..._VENDOR_NAME`).
fn string64(
    rt: &Runtime,
    agent: hsa_agent_t,
    attr: hsa_agent_info_t,
    what: &'static str,
) -> Result<String> {
    let mut v = [0u8; 64];
    // SAFETY: both name attributes write at most 64 bytes.
    let st = unsafe { (rt.hsa_agent_get_info)(agent, attr, v.as_mut_ptr().cast()) };
    check(st, what)?;
    let n = v.iter().position(|&c| c == 0).unwrap_or(64);
    Ok(String::from_utf8_lossy(&v[..n]).into_owned())
}

/// `HSA_AGENT_INFO_DEVICE`: CPU, GPU or DSP.
pub fn device_type(rt: &Runtime, agent: hsa_agent_t) -> Result<hsa_device_type_t> {
    // SAFETY: the attribute is an `hsa_device_type_t`.
    unsafe {
        get(
            rt,
            agent,
            hsa_agent_info_t_HSA_AGENT_INFO_DEVICE,
            "hsa_agent_get_info(HSA_AGENT_INFO_DEVICE)",
        )
    }
}

/// `HSA_AGENT_INFO_NAME`, e.g. "gfx90a".
pub fn name(rt: &Runtime, agent: hsa_agent_t) -> Result<String> {
    string64(
        rt,
        agent,
        hsa_agent_info_t_HSA_AGENT_INFO_NAME,
        "hsa_agent_get_info(HSA_AGENT_INFO_NAME)",
    )
}

/// `HSA_AGENT_INFO_VENDOR_NAME`.
pub fn vendor_name(rt: &Runtime, agent: hsa_agent_t) -> Result<String> {
    string64(
        rt,
        agent,
        hsa_agent_info_t_HSA_AGENT_INFO_VENDOR_NAME,
        "hsa_agent_get_info(HSA_AGENT_INFO_VENDOR_NAME)",
    )
}

/// `HSA_AGENT_INFO_PROFILE`: base or full.
pub fn profile(rt: &Runtime, agent: hsa_agent_t) -> Result<hsa_profile_t> {
    // SAFETY: the attribute is an `hsa_profile_t`.
    unsafe {
        get(
            rt,
            agent,
            hsa_agent_info_t_HSA_AGENT_INFO_PROFILE,
            "hsa_agent_get_info(HSA_AGENT_INFO_PROFILE)",
        )
    }
}

/// `HSA_AGENT_INFO_QUEUE_MAX_SIZE`: the most packets a queue of the agent may have.
pub fn queue_max_size(rt: &Runtime, agent: hsa_agent_t) -> Result<u32> {
    // SAFETY: the attribute is a `uint32_t`.
    unsafe {
        get(
            rt,
            agent,
            hsa_agent_info_t_HSA_AGENT_INFO_QUEUE_MAX_SIZE,
            "hsa_agent_get_info(HSA_AGENT_INFO_QUEUE_MAX_SIZE)",
        )
    }
}

/// [`AMD_AGENT_INFO_COMPUTE_UNIT_COUNT`] (an error on a runtime without the AMD
/// extension).
pub fn compute_units(rt: &Runtime, agent: hsa_agent_t) -> Result<u32> {
    // SAFETY: the attribute is a `uint32_t`.
    unsafe {
        get(
            rt,
            agent,
            AMD_AGENT_INFO_COMPUTE_UNIT_COUNT,
            "hsa_agent_get_info(HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT)",
        )
    }
}
