//! A failed CUDA driver call: which entry point, which code, and its text.

use super::sys::CUresult;
use std::ffi::CStr;
use std::fmt;

/// A driver call's outcome.
pub type CuResult<T> = Result<T, CudaError>;

/// A CUDA driver error. `func` is the entry point's API name (without `_v2`), as the
/// stock plugin prints it ("cuMemAlloc error: out of memory"). Plain data: `Send + Sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaError {
    /// The driver entry point that failed.
    pub func: &'static str,
    /// The `CUresult` it returned.
    pub code: CUresult,
}

impl CudaError {
    /// The driver's description of `code`, or a generic text when the driver has none.
    pub fn text(&self) -> String {
        if let Some(d) = super::table::loaded() {
            let mut s: *const std::os::raw::c_char = std::ptr::null();
            // SAFETY: cuGetErrorString only writes a pointer to a static string into `s`.
            let r = unsafe { (d.cuGetErrorString)(self.code, &mut s) };
            if r == 0 && !s.is_null() {
                // SAFETY: the driver returned a NUL-terminated static string.
                return unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned();
            }
        }
        format!("CUDA error {}", self.code)
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} error: {}", self.func, self.text())
    }
}

/// Turns a `CUresult` into `Ok(())` or a [`CudaError`] naming `func`.
pub fn check(code: CUresult, func: &'static str) -> Result<(), CudaError> {
    if code == 0 {
        Ok(())
    } else {
        Err(CudaError { func, code })
    }
}

impl From<CudaError> for gomp_plugin::Error {
    fn from(e: CudaError) -> Self {
        gomp_plugin::Error::Driver(gomp_plugin::error::DriverError {
            call: e.func.to_string(),
            code: i64::from(e.code),
            message: e.to_string(),
        })
    }
}
