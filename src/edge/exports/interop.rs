//! `GOMP_OFFLOAD_interop` and `GOMP_OFFLOAD_get_interop_*` (libgomp 15+ OpenMP interop
//! objects). Compiled into a product as a module whose parent defines `Backend`.
#![allow(non_snake_case)]
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use super::Backend;
use gomp_plugin::edge::guard;
use gomp_plugin::libgomp::interop::{self, InteropObj, Value};
use gomp_plugin::{Error, Plugin};
use std::ffi::{c_char, c_int, c_void};

/// Initialises (0), uses (1) or destroys (2) an OpenMP interop object. Errors are fatal.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_interop(
    obj: *mut InteropObj,
    ord: c_int,
    flag: u32,
    targetsync: bool,
    prefer_type: *const c_char,
) {
    guard::or_fatal("interop", || {
        // SAFETY: libgomp passes its live, calloc'd object.
        let obj = unsafe { obj.as_mut() }.ok_or_else(|| Error::invalid("interop: no object"))?;
        // SAFETY: `prefer_type` is NULL or the compiler's encoding.
        unsafe { Backend::interop(obj, ord, flag, targetsync, prefer_type) }
    })
}

fn query(obj: *mut InteropObj, prop: c_int, kind: u8, rc: *mut c_int) -> Value {
    let (v, code) = guard::result("get_interop", (Value::None, interop::IRC_NO_VALUE), || {
        // SAFETY: libgomp passes an object it initialised through us.
        let o = unsafe { obj.as_ref() }.ok_or_else(|| Error::invalid("interop: no object"))?;
        Ok(interop::as_kind(Backend::interop_property(o, prop)?, kind))
    });
    if !rc.is_null() {
        // SAFETY: checked non-NULL; libgomp passes the caller's return-code slot.
        unsafe { *rc = code };
    }
    v
}

/// Integer interop property; `*rc` says whether it exists and its type.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_interop_int(
    obj: *mut InteropObj,
    prop: c_int,
    rc: *mut c_int,
) -> isize {
    match query(obj, prop, b'i', rc) {
        Value::Int(v) => v,
        _ => 0,
    }
}

/// Pointer interop property.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_interop_ptr(
    obj: *mut InteropObj,
    prop: c_int,
    rc: *mut c_int,
) -> *mut c_void {
    match query(obj, prop, b'p', rc) {
        Value::Ptr(p) => p,
        _ => std::ptr::null_mut(),
    }
}

/// String interop property (static text).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_interop_str(
    obj: *mut InteropObj,
    prop: c_int,
    rc: *mut c_int,
) -> *const c_char {
    match query(obj, prop, b's', rc) {
        Value::Str(s) => s.as_ptr(),
        _ => std::ptr::null(),
    }
}

/// The C type of an interop property, or NULL.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_interop_type_desc(
    obj: *mut InteropObj,
    prop: c_int,
) -> *const c_char {
    guard::value("get_interop_type_desc", std::ptr::null(), || {
        // SAFETY: libgomp passes NULL or an object it initialised through us.
        let o = unsafe { obj.as_ref() };
        Backend::interop_type_desc(o, prop).map_or(std::ptr::null(), |s| s.as_ptr())
    })
}
