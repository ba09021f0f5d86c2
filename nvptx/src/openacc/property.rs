//! `openacc_get_property`: device memory, name, vendor and driver for `acc_get_property`.

use crate::cu;
use crate::cuda::{driver, sys::*};
use gomp_plugin::error::Result;
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
    let mut v = TEXTS.lock().unwrap_or_else(|e| e.into_inner());
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

fn free_memory(ord: i32, dev: CUdevice) -> Result<usize> {
    // Answer from the device's context: the opened one, else its primary context
    // held just for this call.
    if crate::plugin::device_if_open(ord).is_some() {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: out-pointers to locals; the device's context is current.
        unsafe { cu!(cuMemGetInfo(&mut free, &mut total)) }?;
        return Ok(free);
    }
    let mut prev: CUcontext = std::ptr::null_mut();
    let mut ctx: CUcontext = std::ptr::null_mut();
    // SAFETY: out-pointers to locals; the retain is balanced below, and the thread's
    // previous context is restored.
    unsafe {
        cu!(cuCtxGetCurrent(&mut prev))?;
        cu!(cuDevicePrimaryCtxRetain(&mut ctx, dev))?;
        let (mut free, mut total) = (0usize, 0usize);
        let r = cu!(cuCtxSetCurrent(ctx)).and_then(|()| cu!(cuMemGetInfo(&mut free, &mut total)));
        let _ = cu!(cuCtxSetCurrent(prev));
        let _ = cu!(cuDevicePrimaryCtxRelease(dev));
        r?;
        Ok(free)
    }
}

/// Property `prop` of CUDA device `ord`.
pub fn get(ord: i32, prop: u32) -> Result<Value> {
    driver::load().map_err(gomp_plugin::error::Error::invalid)?;
    let mut dev: CUdevice = 0;
    // SAFETY: out-pointer to a local.
    unsafe { cu!(cuDeviceGet(&mut dev, ord)) }?;
    Ok(match prop {
        MEMORY => {
            let mut total = 0usize;
            // SAFETY: out-pointer to a local.
            unsafe { cu!(cuDeviceTotalMem(&mut total, dev)) }?;
            Value::Size(total)
        }
        FREE_MEMORY => Value::Size(free_memory(ord, dev)?),
        NAME => {
            let mut name = [0 as c_char; 256];
            // SAFETY: the buffer holds 256 bytes.
            unsafe { cu!(cuDeviceGetName(name.as_mut_ptr(), 256, dev)) }?;
            // SAFETY: the driver NUL-terminates within the buffer.
            let n = unsafe { CStr::from_ptr(name.as_ptr()) };
            Value::Str(intern(n.to_string_lossy().into_owned()))
        }
        VENDOR => Value::Str(c"Nvidia"),
        DRIVER => {
            let mut v = 0;
            // SAFETY: out-pointer to a local.
            unsafe { cu!(cuDriverGetVersion(&mut v)) }?;
            Value::Str(intern(format!(
                "CUDA Driver {}.{}",
                v / 1000,
                v % 1000 / 10
            )))
        }
        _ => Value::None,
    })
}
