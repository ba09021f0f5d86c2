//! Messages and memory through libgomp: `GOMP_PLUGIN_error`, `_fatal`, `_debug`,
//! `_malloc`, always with a `"%s"` format so no text is ever read as a format string.
//! Without a libgomp (unit tests) messages go to stderr in the same `libgomp: ` form.

use super::host::host;
use std::ffi::{c_void, CString};

fn cstring(msg: &str) -> CString {
    CString::new(msg.replace('\0', "\\0")).unwrap_or_default()
}

/// Prints `libgomp: <msg>` as a non-fatal error. Thread-safe.
pub fn error(msg: &str) {
    let m = cstring(msg);
    match host() {
        // SAFETY: "%s" with one valid C string matches the variadic contract.
        Some(h) => unsafe { (h.error)(c"%s".as_ptr(), m.as_ptr()) },
        None => eprintln!("libgomp: {msg}"),
    }
}

/// Prints `libgomp: <msg>` and ends the process with EXIT_FAILURE, as libgomp does.
pub fn fatal(msg: &str) -> ! {
    let m = cstring(msg);
    match host() {
        // SAFETY: as in `error`; GOMP_PLUGIN_fatal does not return.
        Some(h) => unsafe { (h.fatal)(c"%s".as_ptr(), m.as_ptr()) },
        None => {
            eprintln!("libgomp: {msg}");
            std::process::exit(1)
        }
    }
}

/// Writes a debug line (shown by libgomp only when `GOMP_DEBUG` is set).
pub fn debug(msg: &str) {
    let m = cstring(msg);
    match host() {
        // SAFETY: as in `error`.
        Some(h) => unsafe { (h.debug)(0, c"%s".as_ptr(), m.as_ptr()) },
        None => eprint!("{msg}"),
    }
}

extern "C" {
    #[link_name = "malloc"]
    fn libc_malloc(n: usize) -> *mut c_void;
}

/// Allocates `n` bytes that libgomp may later `free()`: `GOMP_PLUGIN_malloc`, which
/// never returns NULL (libgomp aborts on OOM), or libc malloc without a libgomp.
pub fn malloc(n: usize) -> *mut c_void {
    match host() {
        // SAFETY: plain allocation call.
        Some(h) => unsafe { (h.malloc)(n.max(1)) },
        // SAFETY: plain allocation call.
        None => unsafe { libc_malloc(n.max(1)) },
    }
}
