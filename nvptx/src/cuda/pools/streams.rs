//! Pooled non-blocking CUDA streams, for the rare operations that must not go on the
//! calling thread's stream (`thread_streams`): the copy kernel that serves device-heap
//! memory during reverse offload takes one, works on it, waits for it and gives it
//! back.

use crate::cuda::pools::idle::{Handle, IdlePool};
use crate::cuda::safe::{OwnedStream, Stream};
use gomp_plugin::error::Result;

impl Handle for OwnedStream {
    fn create() -> Result<Self> {
        OwnedStream::non_blocking()
    }
}

/// Idle streams of one device (owned; destroyed when dropped).
pub type StreamPool = IdlePool<OwnedStream>;

impl StreamPool {
    /// Runs `f` on a pooled stream, then waits for the stream. The stream goes back to
    /// the pool only if it finished cleanly (a failed one is kept out of use).
    #[inline]
    pub fn on_stream<T>(&self, f: impl FnOnce(Stream) -> Result<T>) -> Result<T> {
        let s = self.acquire()?;
        let out = f(s.handle());
        let synced = s.handle().synchronize();
        match (out, synced) {
            (Ok(v), Ok(())) => {
                self.release(s);
                Ok(v)
            }
            (Err(e), Ok(())) => {
                self.release(s);
                Err(e)
            }
            (Err(e), Err(_)) => {
                s.leak();
                Err(e)
            }
            (Ok(_), Err(e)) => {
                s.leak();
                Err(e)
            }
        }
    }
}
