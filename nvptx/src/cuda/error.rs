//! The CUDA driver as its errors read ([`CUDA`]: `cuGetErrorString`'s text, called
//! only when an error is displayed) and [`check`], which maps a `CUresult` through the
//! framework's one mapping ([`gomp_plugin::error::check`]): a failed call is a
//! `gomp_plugin::Error::Driver` naming the entry point (its API name, without `_v2`, as
//! the stock plugin prints it: "cuMemAlloc error: out of memory") and where it was
//! called. Plain data and functions; thread-safe.

use super::sys::CUresult;
use gomp_plugin::error::{DriverError, DriverText, Error, Result};
use std::ffi::CStr;

/// The CUDA driver's statuses: `CUDA_SUCCESS` (0) and `cuGetErrorString`'s text.
pub static CUDA: DriverText = DriverText {
    driver: "CUDA",
    success: 0,
    text,
};

/// The driver's description of `code`, or a generic text when the driver has none.
fn text(code: i64) -> String {
    if let (Some(d), Ok(c)) = (super::table::loaded(), CUresult::try_from(code)) {
        let mut s: *const std::os::raw::c_char = std::ptr::null();
        // SAFETY: cuGetErrorString only writes a pointer to a static string into `s`.
        let r = unsafe { (d.cuGetErrorString)(c, &mut s) };
        if r == 0 && !s.is_null() {
            // SAFETY: the driver returned a NUL-terminated static string.
            return unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned();
        }
    }
    format!("CUDA error {code}")
}

/// `Ok(())` for `CUDA_SUCCESS`, else the error of `call` returning `code`, made where
/// the caller called this (the `cu!` macro's site).
#[track_caller]
#[inline]
pub fn check(code: CUresult, call: &'static str) -> Result<()> {
    gomp_plugin::error::check(&CUDA, i64::from(code), call)
}

/// The error of `call` as if it had returned `code` (a call whose success the plugin
/// refuses, e.g. a NULL allocation).
#[track_caller]
pub fn error(call: &'static str, code: CUresult) -> Error {
    Error::Driver(DriverError::new(&CUDA, call, i64::from(code)))
}
