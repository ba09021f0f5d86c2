//! Non-blocking CUDA streams. Each synchronous operation takes a pooled stream, works
//! on it, waits for it and gives it back, so host threads never share a stream and
//! never touch the legacy default stream (no device-wide serialisation).

use crate::cu;
use crate::cuda::sys::{CUstream, CU_STREAM_NON_BLOCKING};
use crate::device::idle_pool::{Handle, IdlePool};
use gomp_plugin::error::Result;

/// A CUDA stream handle. Usable from any thread (the driver allows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream(pub CUstream);
// SAFETY: CUDA stream handles may be used from any host thread.
unsafe impl Send for Stream {}

impl Handle for Stream {
    fn create() -> Result<Self> {
        let mut s: CUstream = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the device's context is current (caller).
        unsafe { cu!(cuStreamCreate(&mut s, CU_STREAM_NON_BLOCKING as u32)) }?;
        Ok(Stream(s))
    }

    fn destroy(self) {
        // SAFETY: the stream is idle and owned by the pool.
        let _ = unsafe { cu!(cuStreamDestroy(self.0)) };
    }
}

/// Idle streams of one device.
pub type StreamPool = IdlePool<Stream>;
