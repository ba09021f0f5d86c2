//! The one mapping of a failed HSA call to the framework's error: [`check`] turns a
//! status into `Ok(())` or an [`HsaError`] (which call, which status), and
//! `From<HsaError> for gomp_plugin::Error` makes it a `DriverError` whose message is
//! the stock plugin's "CALL error: RUNTIME TEXT". The call's name is an [`Op`]: a
//! fixed `&'static str`, or a closure that builds a name with details (sizes, symbol
//! names) and is run only when the call failed, so a successful call formats nothing.
//!
//! Plain data and functions; thread-safe (the runtime's `hsa_status_string` is a
//! query, safe from any thread).

use super::sys::*;
use super::table;
use std::borrow::Cow;
use std::fmt;

/// The name of a runtime call as an error shows it. Implemented by `&'static str`
/// (nothing is built) and by closures returning a `String`, run only on failure.
pub trait Op {
    /// The name; for a closure, built now.
    fn name(&self) -> Cow<'static, str>;
}

impl Op for &'static str {
    #[inline]
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(self)
    }
}

impl<F: Fn() -> String> Op for F {
    #[inline]
    fn name(&self) -> Cow<'static, str> {
        Cow::Owned(self())
    }
}

/// A failed HSA call: its name (with the caller's details) and the status it returned.
/// Plain data: `Send + Sync`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HsaError {
    /// The call that failed, e.g. "hsa_memory_copy (host to device, 8 bytes)".
    pub call: Cow<'static, str>,
    /// The status it returned.
    pub status: hsa_status_t,
}

/// The loaded runtime's text for `status` ([`table::Runtime::status_text`]), or the number
/// when no runtime is loaded.
pub fn loaded_status_text(status: hsa_status_t) -> String {
    match table::loaded() {
        Some(rt) => rt.status_text(status),
        None => format!("HSA status {status:#x}"),
    }
}

impl HsaError {
    /// The runtime's text for the status ([`loaded_status_text`]).
    pub fn text(&self) -> String {
        loaded_status_text(self.status)
    }
}

impl fmt::Display for HsaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} error: {}", self.call, self.text())
    }
}

/// `Ok(())` for `HSA_STATUS_SUCCESS`, else an [`HsaError`] naming `op` (a closure `op`
/// runs only then).
#[inline]
pub fn check(status: hsa_status_t, op: impl Op) -> Result<(), HsaError> {
    if status == hsa_status_t_HSA_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(HsaError {
            call: op.name(),
            status,
        })
    }
}

impl From<HsaError> for gomp_plugin::Error {
    fn from(e: HsaError) -> Self {
        let message = e.to_string();
        gomp_plugin::Error::Driver(gomp_plugin::error::DriverError {
            call: e.call.into_owned(),
            code: i64::from(e.status),
            message,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn success_builds_no_name() {
        let built = Cell::new(0);
        let op = || {
            built.set(built.get() + 1);
            "never".to_string()
        };
        assert_eq!(check(hsa_status_t_HSA_STATUS_SUCCESS, op), Ok(()));
        assert_eq!(built.get(), 0);
    }

    #[test]
    fn failure_names_the_call_once() {
        let built = Cell::new(0);
        let n = 8;
        let op = || {
            built.set(built.get() + 1);
            format!("hsa_memory_copy (memset, {n} bytes)")
        };
        let e = check(hsa_status_t_HSA_STATUS_ERROR, op).unwrap_err();
        assert_eq!(built.get(), 1);
        assert_eq!(e.call, "hsa_memory_copy (memset, 8 bytes)");
        assert_eq!(e.status, hsa_status_t_HSA_STATUS_ERROR);
        let s = check(
            hsa_status_t_HSA_STATUS_ERROR_INVALID_ARGUMENT,
            "hsa_signal_create",
        )
        .unwrap_err();
        assert_eq!(s.call, "hsa_signal_create");
    }

    #[test]
    fn the_framework_error_has_the_stock_shape() {
        // The text is the loaded runtime's, or the status number when none is loaded.
        let e: gomp_plugin::Error = check(0x1001, "hsa_queue_destroy").unwrap_err().into();
        match e {
            gomp_plugin::Error::Driver(d) => {
                assert_eq!(d.call, "hsa_queue_destroy");
                assert_eq!(d.code, 0x1001);
                assert!(
                    d.message.starts_with("hsa_queue_destroy error: "),
                    "{}",
                    d.message
                );
            }
            other => panic!("not a driver error: {other:?}"),
        }
    }
}
