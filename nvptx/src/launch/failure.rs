//! How a failed kernel is reported: a pure mapping of the driver's error, used by the
//! synchronous launch ([`super::run`]), the completion thread ([`super::async_queue`])
//! and OpenACC queues.

use crate::cuda::sys::*;
use gomp_plugin::error::Error;

/// Explains a failed kernel as GCC's plugin does: a trap (`abort()`, `stop` or
/// `error stop` in a target region) shows up as CUDA's "unspecified launch failure".
pub fn kernel_error(e: Error) -> Error {
    match e {
        Error::Driver(c) if c.code() == i64::from(CUDA_ERROR_LAUNCH_FAILED) => {
            Error::invalid(format!("{c} (perhaps abort was called)"))
        }
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traps_are_explained() {
        let trap = crate::cuda::error("cuStreamSynchronize", CUDA_ERROR_LAUNCH_FAILED);
        assert!(kernel_error(trap)
            .to_string()
            .ends_with("(perhaps abort was called)"));
        let oom = crate::cuda::error("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY);
        assert_eq!(kernel_error(oom.clone()), oom);
    }
}
