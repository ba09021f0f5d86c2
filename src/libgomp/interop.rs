//! OpenMP interop objects as libgomp hands them to a plugin (libgomp 15+): the object's
//! layout, the values of `omp_get_interop_{int,ptr,str}` and their return codes.
//! Vendor-neutral; a backend fills the object and answers the properties.

use std::ffi::{c_int, c_void, CStr};

/// libgomp's `struct interop_obj_t` (libgomp-plugin.h): allocated and freed by libgomp,
/// filled in by the plugin.
#[repr(C)]
pub struct InteropObj {
    /// The `targetsync` stream, or NULL.
    pub stream: *mut c_void,
    /// Plugin data (unused here).
    pub device_data: *mut c_void,
    /// The chosen foreign runtime (`omp_interop_fr_t`).
    pub fr: c_int,
    /// The OpenMP device number (set by libgomp).
    pub device_num: c_int,
}

/// `omp_irc_*` return codes.
pub const IRC_NO_VALUE: c_int = 1;
/// Success.
pub const IRC_SUCCESS: c_int = 0;
/// Property exists with an integer value.
pub const IRC_TYPE_INT: c_int = -3;
/// Property exists with a pointer value.
pub const IRC_TYPE_PTR: c_int = -4;
/// Property exists with a string value.
pub const IRC_TYPE_STR: c_int = -5;

/// The value of one property.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InteropValue {
    /// An integer property.
    Int(isize),
    /// A pointer property.
    Ptr(*mut c_void),
    /// A string property (static text).
    Str(&'static CStr),
    /// A property without a value for this object.
    None,
}

/// Converts a property value to what an `omp_get_interop_{int,ptr,str}` call of kind
/// `want` returns, and the return code.
pub fn as_kind(v: InteropValue, want: u8) -> (InteropValue, c_int) {
    match (v, want) {
        (InteropValue::None, _) => (InteropValue::None, IRC_NO_VALUE),
        (InteropValue::Int(_), b'i')
        | (InteropValue::Ptr(_), b'p')
        | (InteropValue::Str(_), b's') => (v, IRC_SUCCESS),
        (InteropValue::Int(_), _) => (InteropValue::None, IRC_TYPE_INT),
        (InteropValue::Ptr(_), _) => (InteropValue::None, IRC_TYPE_PTR),
        (InteropValue::Str(_), _) => (InteropValue::None, IRC_TYPE_STR),
    }
}
