//! The HSA runtime as its errors read ([`HSA`]: `hsa_status_string`'s text, called only
//! when an error is displayed) and [`check`], which maps a status through the
//! framework's one mapping ([`gomp_plugin::error::check_with`]): a failed call is a
//! `gomp_plugin::Error::Driver` whose message is the stock plugin's "CALL error:
//! RUNTIME TEXT", made where it was called. The call is an [`Op`]: a fixed
//! `&'static str`, or a name and a closure that builds a detail (sizes, symbol names)
//! shown after it, run only when the call failed, so a successful call formats nothing.
//!
//! Plain data and functions; thread-safe (the runtime's `hsa_status_string` is a
//! query, safe from any thread).

use super::sys::*;
use super::table;
use gomp_plugin::error::{DriverText, Result};

/// The HSA runtime's statuses: `HSA_STATUS_SUCCESS` and the runtime's text.
pub static HSA: DriverText = DriverText {
    driver: "HSA",
    success: hsa_status_t_HSA_STATUS_SUCCESS as i64,
    text,
};

fn text(status: i64) -> String {
    match hsa_status_t::try_from(status) {
        Ok(s) => loaded_status_text(s),
        Err(_) => format!("HSA status {status:#x}"),
    }
}

/// A runtime call as an error names it: the entry point and, built only when it
/// failed, a detail shown right after the name. Implemented by `&'static str` (no
/// detail) and by `(&'static str, F)` with `F` a closure returning the detail.
/// A value of the caller's, used on the caller's thread.
pub trait Op {
    /// The entry point's name.
    fn call(&self) -> &'static str;
    /// The detail after the name, built now (`None`: none).
    fn detail(&self) -> Option<String>;
    /// The whole name, built now (name and detail).
    fn name(&self) -> String {
        format!("{}{}", self.call(), self.detail().unwrap_or_default())
    }
}

impl Op for &'static str {
    #[inline]
    fn call(&self) -> &'static str {
        self
    }
    #[inline]
    fn detail(&self) -> Option<String> {
        None
    }
}

impl<F: Fn() -> String> Op for (&'static str, F) {
    #[inline]
    fn call(&self) -> &'static str {
        self.0
    }
    #[inline]
    fn detail(&self) -> Option<String> {
        Some((self.1)())
    }
}

/// The loaded runtime's text for `status` ([`table::Runtime::status_text`]), or the number
/// when no runtime is loaded.
pub fn loaded_status_text(status: hsa_status_t) -> String {
    match table::loaded() {
        Some(rt) => rt.status_text(status),
        None => format!("HSA status {status:#x}"),
    }
}

/// `Ok(())` for `HSA_STATUS_SUCCESS`, else the error of `op` (its detail built only
/// then), made where the caller called this.
#[track_caller]
#[inline]
pub fn check(status: hsa_status_t, op: impl Op) -> Result<()> {
    gomp_plugin::error::check_with(&HSA, i64::from(status), op.call(), || op.detail())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn success_builds_no_detail() {
        let built = Cell::new(0);
        let op = || {
            built.set(built.get() + 1);
            "never".to_string()
        };
        assert_eq!(
            check(hsa_status_t_HSA_STATUS_SUCCESS, ("hsa_x", op)),
            Ok(())
        );
        assert_eq!(built.get(), 0);
    }

    #[test]
    fn failure_names_the_call_once() {
        let built = Cell::new(0);
        let n = 8;
        let op = || {
            built.set(built.get() + 1);
            format!(" (memset, {n} bytes)")
        };
        let e = check(hsa_status_t_HSA_STATUS_ERROR, ("hsa_memory_copy", op)).unwrap_err();
        assert_eq!(built.get(), 1);
        let d = e.driver().expect("a driver error");
        assert_eq!(d.call(), "hsa_memory_copy");
        assert_eq!(d.detail(), " (memset, 8 bytes)");
        assert_eq!(d.code(), i64::from(hsa_status_t_HSA_STATUS_ERROR));
        assert!(e.has_code(hsa_status_t_HSA_STATUS_ERROR));
        let s = check(
            hsa_status_t_HSA_STATUS_ERROR_INVALID_ARGUMENT,
            "hsa_signal_create",
        )
        .unwrap_err();
        assert_eq!(s.driver().map(|d| d.call()), Some("hsa_signal_create"));
    }

    #[test]
    fn the_framework_error_has_the_stock_shape() {
        // The text is the loaded runtime's, or the status number when none is loaded.
        let e = check(0x1001, "hsa_queue_destroy").unwrap_err();
        let d = e.driver().expect("a driver error");
        assert_eq!(d.call(), "hsa_queue_destroy");
        assert_eq!(d.code(), 0x1001);
        assert_eq!(d.location().file(), file!());
        let m = e.to_string();
        assert!(m.starts_with("hsa_queue_destroy error: "), "{m}");
        let m = check(0x1001, ("hsa_memory_copy", || " (heap size)".to_string()))
            .unwrap_err()
            .to_string();
        assert!(m.starts_with("hsa_memory_copy (heap size) error: "), "{m}");
    }
}
