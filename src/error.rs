//! The one error type of the plugins. Everything inside returns `Result`; only the
//! exported edge (`crate::edge`) turns an `Error` into libgomp's convention (an error
//! message plus a false/NULL/-1 return, or a fatal error). No vendor type appears
//! here: a backend describes its driver once as a [`DriverText`] and maps every driver
//! call's status through [`check`] (or [`check_with`]), the one mapping of a failed
//! driver call to an [`Error::Driver`] in both backends.
//!
//! Building a driver error is cheap (IREE's status macros as the model: which call,
//! which status, where it was made): a `&'static str` name, the status, the caller's
//! [`Location`] and a pointer to the backend's [`DriverText`]; nothing is allocated or
//! formatted until the error is displayed (a backend's optional detail, built by a
//! closure, only when the call failed). Hot paths that poll (`cuStreamQuery`,
//! `cuEventQuery` answering `CUDA_ERROR_NOT_READY`) test the code with
//! [`Error::has_code`].

use std::fmt;
use std::panic::Location;

/// How a vendor driver's statuses read: its success status and the function giving the
/// driver's own text for a failed one (e.g. `cuGetErrorString`'s), called only when an
/// error is displayed. A backend declares one as a `static`. Plain data: `Send + Sync`.
pub struct DriverText {
    /// The driver's name, for `Debug` output ("CUDA", "HSA").
    pub driver: &'static str,
    /// The status of a successful call (`CUDA_SUCCESS`, `HSA_STATUS_SUCCESS`).
    pub success: i64,
    /// The driver's text for a failed status; a generic text (the number) when the
    /// driver is not loaded or has none.
    pub text: fn(i64) -> String,
}

impl fmt::Debug for DriverText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.driver)
    }
}

/// A failed call into a vendor driver (CUDA, HSA): which entry point, the status it
/// returned, where the plugin called it, and optionally a detail the backend added
/// (sizes, symbol names). It displays as the stock plugins word it:
/// "CALL[DETAIL] error: DRIVER TEXT" (e.g. "cuMemAlloc error: out of memory"), the
/// driver's text built at display time. Owned plain data: `Send + Sync`, cheap to move;
/// no allocation unless a detail was added. Two errors are equal when call, detail and
/// code are (not where they were made).
#[derive(Clone)]
pub struct DriverError {
    call: &'static str,
    detail: Option<Box<str>>,
    code: i64,
    at: &'static Location<'static>,
    driver: &'static DriverText,
}

impl DriverError {
    /// The error of `call` returning `code` under `driver`, made where the caller was
    /// called from (`#[track_caller]`). Allocates nothing.
    #[track_caller]
    #[inline]
    pub fn new(driver: &'static DriverText, call: &'static str, code: i64) -> Self {
        DriverError {
            call,
            detail: None,
            code,
            at: Location::caller(),
            driver,
        }
    }

    /// The same error with `detail` shown right after the call's name (the backend's
    /// words, e.g. " (host to device, 8 bytes)" or "('main._omp_fn.0.kd')").
    pub fn with_detail(mut self, detail: impl Into<Box<str>>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// The driver entry point that failed (its API name).
    #[inline]
    pub fn call(&self) -> &'static str {
        self.call
    }

    /// The detail shown after the call's name ("" when none).
    pub fn detail(&self) -> &str {
        self.detail.as_deref().unwrap_or("")
    }

    /// The status it returned (`CUresult`, `hsa_status_t`, ...).
    #[inline]
    pub fn code(&self) -> i64 {
        self.code
    }

    /// Where in the plugin the driver was called.
    pub fn location(&self) -> &'static Location<'static> {
        self.at
    }

    /// The driver's text for the status (built now).
    pub fn text(&self) -> String {
        (self.driver.text)(self.code)
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{} error: {}", self.call, self.detail(), self.text())
    }
}

impl fmt::Debug for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DriverError")
            .field("driver", self.driver)
            .field("call", &self.call)
            .field("detail", &self.detail())
            .field("code", &self.code)
            .field("at", &format_args!("{}", self.at))
            .finish()
    }
}

impl PartialEq for DriverError {
    fn eq(&self, other: &Self) -> bool {
        self.call == other.call && self.code == other.code && self.detail == other.detail
    }
}

impl Eq for DriverError {}

/// The one mapping of a driver call's status: `Ok(())` for `driver.success`, else an
/// [`Error::Driver`] naming `call`, made where the caller was called from. Allocates
/// and formats nothing. Thread-safe (a pure function).
#[track_caller]
#[inline]
pub fn check(driver: &'static DriverText, code: i64, call: &'static str) -> Result<()> {
    if code == driver.success {
        Ok(())
    } else {
        Err(failed(driver, code, call))
    }
}

/// [`check`] with a detail after the call's name, built by `detail` only when the call
/// failed (`None`: no detail).
#[track_caller]
#[inline]
pub fn check_with(
    driver: &'static DriverText,
    code: i64,
    call: &'static str,
    detail: impl FnOnce() -> Option<String>,
) -> Result<()> {
    if code == driver.success {
        Ok(())
    } else {
        let e = DriverError::new(driver, call, code);
        Err(Error::Driver(match detail() {
            Some(d) => e.with_detail(d),
            None => e,
        }))
    }
}

#[cold]
#[track_caller]
fn failed(driver: &'static DriverText, code: i64, call: &'static str) -> Error {
    Error::Driver(DriverError::new(driver, call, code))
}

/// An error of the plugin. Owned, `Send + Sync`, cheap to move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A driver call failed.
    Driver(DriverError),
    /// A part of the contract this backend does not implement; the text names it.
    NotImplemented(String),
    /// Input from libgomp or the user that the plugin refuses (bad image, bad pointer, ...).
    Invalid(String),
}

/// Result of every fallible operation inside the plugins.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Builds an [`Error::Invalid`] from anything printable.
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::Invalid(msg.into())
    }

    /// The error of an entry point (or a part of one) that product `plugin` does not
    /// implement: `GOMP_OFFLOAD_<entry>: <what> is not implemented in ...`.
    pub fn not_implemented(plugin: &str, entry: &str, what: &str) -> Self {
        Error::NotImplemented(format!(
            "GOMP_OFFLOAD_{entry}: {what} is not implemented in gomp-plugin-rs's {plugin} plugin"
        ))
    }

    /// The failed driver call, if this is one.
    #[inline]
    pub fn driver(&self) -> Option<&DriverError> {
        match self {
            Error::Driver(d) => Some(d),
            _ => None,
        }
    }

    /// Whether this is a driver call that returned `code` (e.g. `CUDA_ERROR_NOT_READY`).
    #[inline]
    pub fn has_code(&self, code: impl Into<i64>) -> bool {
        matches!(self, Error::Driver(d) if d.code == code.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Driver(d) => d.fmt(f),
            Error::NotImplemented(m) | Error::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

impl From<DriverError> for Error {
    fn from(e: DriverError) -> Self {
        Error::Driver(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(code: i64) -> String {
        format!("status {code}")
    }
    static FAKE: DriverText = DriverText {
        driver: "fake",
        success: 0,
        text,
    };

    #[test]
    fn success_is_ok_and_failure_names_call_code_and_place() {
        assert_eq!(check(&FAKE, 0, "fakeCall"), Ok(()));
        let line = line!() + 1;
        let e = check(&FAKE, 7, "fakeCall").unwrap_err();
        let d = e.driver().expect("a driver error");
        assert_eq!((d.call(), d.code(), d.detail()), ("fakeCall", 7, ""));
        assert_eq!(d.location().file(), file!());
        assert_eq!(d.location().line(), line);
        assert!(e.has_code(7) && !e.has_code(8));
        assert_eq!(e.to_string(), "fakeCall error: status 7");
    }

    #[test]
    fn a_detail_is_built_only_on_failure() {
        let mut built = 0;
        assert_eq!(
            check_with(&FAKE, 0, "fakeCopy", || {
                built += 1;
                None
            }),
            Ok(())
        );
        assert_eq!(built, 0);
        let e = check_with(&FAKE, 3, "fakeCopy", || Some(" (8 bytes)".into())).unwrap_err();
        assert_eq!(e.to_string(), "fakeCopy (8 bytes) error: status 3");
        assert_ne!(e, check(&FAKE, 3, "fakeCopy").unwrap_err());
    }

    #[test]
    fn a_driver_error_stays_small() {
        assert!(std::mem::size_of::<Error>() <= 64);
    }
}
