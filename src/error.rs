//! The crate's one error type. Everything inside returns `Result`; only the exported
//! edge (`crate::edge`) turns an `Error` into libgomp's convention (an error message
//! plus a false/NULL/-1 return, or a fatal error).

#[cfg(not(feature = "gcn"))]
use crate::cuda::CudaError;
use std::fmt;

/// An error of the plugin. Owned, `Send + Sync`, cheap to move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A CUDA driver call failed; carries the function name and the code (nvptx build).
    #[cfg(not(feature = "gcn"))]
    Cuda(CudaError),
    /// An HSA runtime call failed: the function name, the status and its text (gcn build).
    #[cfg(feature = "gcn")]
    Hsa(String),
    /// A part of the contract this build does not implement (the gcn plugin's HSA-side
    /// work, which could not be written and verified without AMD hardware); the text
    /// names what is missing.
    NotImplemented(String),
    /// Input from libgomp or the user that the plugin refuses (bad image, bad pointer, ...).
    Invalid(String),
}

/// Result of every fallible operation inside the plugin.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Builds an [`Error::Invalid`] from anything printable.
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::Invalid(msg.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(not(feature = "gcn"))]
            Error::Cuda(e) => e.fmt(f),
            #[cfg(feature = "gcn")]
            Error::Hsa(m) => f.write_str(m),
            Error::NotImplemented(m) => f.write_str(m),
            Error::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(not(feature = "gcn"))]
impl From<CudaError> for Error {
    fn from(e: CudaError) -> Self {
        Error::Cuda(e)
    }
}
