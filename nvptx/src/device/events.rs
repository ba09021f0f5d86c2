//! CUDA events (timing disabled) used to observe the completion of stream-ordered work
//! without a host callback per launch; pooled per device.

use crate::cu;
use crate::cuda::sys::{CUevent, CU_EVENT_DISABLE_TIMING};
use crate::device::idle_pool::{Handle, IdlePool};
use gomp_plugin::error::Result;

/// A CUDA event handle; usable from any thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event(pub CUevent);
// SAFETY: CUDA event handles may be used from any host thread.
unsafe impl Send for Event {}

impl Handle for Event {
    fn create() -> Result<Self> {
        let mut e: CUevent = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the device's context is current (caller).
        unsafe { cu!(cuEventCreate(&mut e, CU_EVENT_DISABLE_TIMING as u32)) }?;
        Ok(Event(e))
    }

    fn destroy(self) {
        // SAFETY: the event is idle and owned by the pool.
        let _ = unsafe { cu!(cuEventDestroy(self.0)) };
    }
}

/// Idle events of one device.
pub type EventPool = IdlePool<Event>;
