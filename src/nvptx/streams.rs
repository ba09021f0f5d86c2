//! A per-device pool of non-blocking CUDA streams. Each synchronous operation takes a
//! stream, works on it, waits for it and gives it back, so host threads never share a
//! stream and never touch the legacy default stream (no device-wide serialisation).

use crate::cu;
use crate::cuda::sys::{CUstream, CU_STREAM_NON_BLOCKING};
use crate::error::Result;
use std::sync::Mutex;

/// Idle streams of one device. Thread-safe; owns the streams and destroys them in
/// [`StreamPool::destroy_all`] (called at device finalisation).
#[derive(Default)]
pub struct StreamPool {
    idle: Mutex<Vec<Stream>>,
}

/// A CUDA stream handle. Usable from any thread (the driver allows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream(pub CUstream);
// SAFETY: CUDA stream handles may be used from any host thread.
unsafe impl Send for Stream {}

impl StreamPool {
    /// Takes an idle stream or creates one (in the calling thread's current context).
    pub fn acquire(&self) -> Result<Stream> {
        if let Some(s) = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Ok(s);
        }
        let mut s: CUstream = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the device's context is current (caller).
        unsafe { cu!(cuStreamCreate(&mut s, CU_STREAM_NON_BLOCKING as u32)) }?;
        Ok(Stream(s))
    }

    /// Returns an idle stream (one with no pending work) to the pool.
    pub fn release(&self, s: Stream) {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(s);
    }

    /// Destroys every idle stream. Errors are ignored: this runs at teardown.
    pub fn destroy_all(&self) {
        for s in self
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            // SAFETY: the stream is idle and owned by the pool.
            let _ = unsafe { cu!(cuStreamDestroy(s.0)) };
        }
    }
}
