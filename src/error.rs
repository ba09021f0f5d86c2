//! The one error type of the plugins. Everything inside returns `Result`; only the
//! exported edge (`crate::edge`) turns an `Error` into libgomp's convention (an error
//! message plus a false/NULL/-1 return, or a fatal error). No vendor type appears
//! here: a backend turns its driver's failures into [`DriverError`].

use std::fmt;

/// A failed call into a vendor driver (CUDA, HSA): which entry point, its status code,
/// and the message to print (made by the backend, e.g. "cuMemAlloc error: out of
/// memory"). Plain data: `Send + Sync`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverError {
    /// The driver entry point that failed (API name, possibly with its argument).
    pub call: String,
    /// The status it returned (`CUresult`, `hsa_status_t`, ...).
    pub code: i64,
    /// The whole message, as the stock plugin words it.
    pub message: String,
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
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
