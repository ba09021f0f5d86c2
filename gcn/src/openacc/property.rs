//! `openacc_get_property`: device memory, name, vendor and driver for
//! `acc_get_property` (as the stock plugin: free memory is not reported). The strings
//! are computed once per device and kept for the process (libgomp hands the pointer to
//! the program); the cache is behind a mutex.

use crate::hsa::safe::{agent, region, system};
use crate::hsa::sys::*;
use crate::hsa::table;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::openacc::AccProperty;
use gomp_plugin::sync::Lock;
use std::ffi::{c_int, CStr, CString};
use std::sync::Mutex;

/// `GOACC_PROPERTY_MEMORY`.
pub const MEMORY: u32 = 1;
/// `GOACC_PROPERTY_FREE_MEMORY`.
pub const FREE_MEMORY: u32 = 2;
/// `GOACC_PROPERTY_NAME`.
pub const NAME: u32 = 0x10001;
/// `GOACC_PROPERTY_VENDOR`.
pub const VENDOR: u32 = 0x10002;
/// `GOACC_PROPERTY_DRIVER`.
pub const DRIVER: u32 = 0x10003;

/// MEMORY: the size of the device's coarse-grained region; NAME: the agent's name;
/// VENDOR: the agent's vendor; DRIVER: "HSA Runtime <major>.<minor>"; FREE_MEMORY
/// and anything else: 0 (as the stock plugin).
pub fn get(ord: c_int, prop: u32) -> Result<AccProperty> {
    let Ok(a) = crate::discovery::agent(ord) else {
        return Ok(AccProperty::None);
    };
    let rt = table::loaded().ok_or_else(|| Error::invalid("the HSA runtime is not loaded"))?;
    let agent = hsa_agent_t { handle: a.handle };
    Ok(match prop {
        MEMORY => {
            let r = crate::device::find_regions(rt, agent)?.device;
            AccProperty::Size(region::size(rt, r)?)
        }
        NAME => AccProperty::Str(cached(ord, prop, || Ok(a.name.clone()))?),
        VENDOR => AccProperty::Str(cached(ord, prop, || agent::vendor_name(rt, agent))?),
        DRIVER => AccProperty::Str(cached(ord, prop, || {
            let (major, minor) = system::version(rt)?;
            Ok(format!("HSA Runtime {major}.{minor}"))
        })?),
        FREE_MEMORY => AccProperty::None,
        _ => AccProperty::None,
    })
}

/// The string property `prop` of device `ord`, computed once and kept for the process
/// (libgomp hands the pointer to the program).
fn cached(ord: i32, prop: u32, make: impl FnOnce() -> Result<String>) -> Result<&'static CStr> {
    static CACHE: Mutex<Vec<(i32, u32, &'static CStr)>> = Mutex::new(Vec::new());
    let mut c = CACHE.locked();
    if let Some(&(_, _, s)) = c.iter().find(|(o, p, _)| *o == ord && *p == prop) {
        return Ok(s);
    }
    let s = make()?.replace('\0', "");
    let s: &'static CStr = Box::leak(CString::new(s).unwrap_or_default().into_boxed_c_str());
    c.push((ord, prop, s));
    Ok(s)
}
