//! `openacc_get_property`: device memory, name, vendor and driver for `acc_get_property`.

use crate::cuda::safe::{query, PrimaryContext};
use crate::cuda::{sys::*, table};
use gomp_plugin::error::Result;
use gomp_plugin::sync::Lock;
use std::ffi::{c_char, CStr, CString};
use std::sync::Mutex;

/// `GOACC_PROPERTY_MEMORY`: total device memory in bytes.
pub const MEMORY: u32 = 1;
/// `GOACC_PROPERTY_FREE_MEMORY`: free device memory in bytes.
pub const FREE_MEMORY: u32 = 2;
/// `GOACC_PROPERTY_NAME`.
pub const NAME: u32 = 0x10001;
/// `GOACC_PROPERTY_VENDOR`.
pub const VENDOR: u32 = 0x10002;
/// `GOACC_PROPERTY_DRIVER`.
pub const DRIVER: u32 = 0x10003;

/// A property value as libgomp's `union goacc_property_value` carries it: a size or a
/// string that stays valid for the life of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    /// A byte count.
    Size(usize),
    /// A static C string.
    Str(&'static CStr),
    /// Unknown property or no answer (libgomp sees 0 / NULL).
    None,
}

/// Strings handed out once per distinct text and kept for the life of the process
/// (libgomp does not free them).
fn intern(s: String) -> &'static CStr {
    static TEXTS: Mutex<Vec<&'static CStr>> = Mutex::new(Vec::new());
    let mut v = TEXTS.locked();
    if let Some(t) = v.iter().find(|t| t.to_bytes() == s.as_bytes()) {
        return t;
    }
    let c: &'static CStr = Box::leak(
        CString::new(s)
            .unwrap_or_else(|_| CString::from(c"?"))
            .into_boxed_c_str(),
    );
    v.push(c);
    c
}

fn free_memory(dev: CUdevice, held_by_open: impl FnOnce() -> Option<usize>) -> Result<usize> {
    // Answer from the device's context: the opened one, else its primary context
    // held just for this call.
    if let Some(held) = held_by_open() {
        // The device's context is current.
        return Ok(query::mem_info()?.0.saturating_add(held));
    }
    // The retain is released when `ctx` is dropped; the thread's previous context is
    // restored.
    let ctx = PrimaryContext::retain(dev)?;

    ctx.with_current(|| query::mem_info().map(|(free, _)| free))
}

/// Property `prop` of CUDA device `ord`. `held_by_open` makes the device's context
/// current if libgomp has the device open and then says how many bytes the plugin holds
/// there without the program using them (asked only for the free memory, which is
/// the driver's free memory plus those: what the program can still allocate, as with
/// the stock plugin, and the query gives nothing back itself).
pub fn get(ord: i32, prop: u32, held_by_open: impl FnOnce() -> Option<usize>) -> Result<Value> {
    table::load().map_err(gomp_plugin::error::Error::invalid)?;
    let dev: CUdevice = query::device(ord)?;
    Ok(match prop {
        MEMORY => Value::Size(query::total_mem(dev)?),
        FREE_MEMORY => Value::Size(free_memory(dev, held_by_open)?),
        NAME => {
            let name: [c_char; 256] = query::name(dev)?;
            // SAFETY: the driver NUL-terminates within the buffer.
            let n = unsafe { CStr::from_ptr(name.as_ptr()) };
            Value::Str(intern(n.to_string_lossy().into_owned()))
        }
        VENDOR => Value::Str(c"Nvidia"),
        DRIVER => {
            let v = query::driver_version()?;
            Value::Str(intern(format!(
                "CUDA Driver {}.{}",
                v / 1000,
                v % 1000 / 10
            )))
        }
        _ => Value::None,
    })
}
