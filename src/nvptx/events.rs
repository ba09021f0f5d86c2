//! A per-device pool of CUDA events (timing disabled) used to observe the completion of
//! stream-ordered work without a host callback per launch.

use crate::cu;
use crate::cuda::sys::{CUevent, CU_EVENT_DISABLE_TIMING};
use crate::error::Result;
use std::sync::Mutex;

/// A CUDA event handle; usable from any thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event(pub CUevent);
// SAFETY: CUDA event handles may be used from any host thread.
unsafe impl Send for Event {}

/// Idle events of one device. Thread-safe; owns the events and destroys them in
/// [`EventPool::destroy_all`].
#[derive(Default)]
pub struct EventPool {
    idle: Mutex<Vec<Event>>,
}

impl EventPool {
    /// Takes an idle event or creates one (device context current, caller).
    pub fn acquire(&self) -> Result<Event> {
        if let Some(e) = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Ok(e);
        }
        let mut e: CUevent = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        unsafe { cu!(cuEventCreate(&mut e, CU_EVENT_DISABLE_TIMING as u32)) }?;
        Ok(Event(e))
    }

    /// Returns an event whose recorded work has completed.
    pub fn release(&self, e: Event) {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(e);
    }

    /// Destroys every idle event (teardown; errors ignored).
    pub fn destroy_all(&self) {
        for e in self
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            // SAFETY: idle and owned by the pool.
            let _ = unsafe { cu!(cuEventDestroy(e.0)) };
        }
    }
}
