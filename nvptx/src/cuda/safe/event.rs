//! Events: [`Event`], a borrowed handle (record, query, wait), and [`OwnedEvent`],
//! which destroys its event when dropped.

use super::stream::Stream;
use crate::cu;
use crate::cuda::sys::*;
use gomp_plugin::error::Result;

/// A CUDA event handle, borrowed from its [`OwnedEvent`]. `Copy`, `Send + Sync`: the
/// driver allows any thread to use an event.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event(CUevent);

// SAFETY: CUDA event handles may be used from any host thread.
unsafe impl Send for Event {}
// SAFETY: as above; the handle is only passed to the driver.
unsafe impl Sync for Event {}

impl Event {
    /// The driver handle.
    #[inline]
    pub fn raw(self) -> CUevent {
        self.0
    }

    /// Records the event on `s` (`cuEventRecord`).
    #[inline]
    pub fn record(self, s: Stream) -> Result<()> {
        // SAFETY: live event and stream of the same context.
        unsafe { cu!(cuEventRecord(self.0, s.raw())) }
    }

    /// Makes future work on `s` wait for the event's last record (`cuStreamWaitEvent`).
    #[inline]
    pub fn wait_on(self, s: Stream) -> Result<()> {
        // SAFETY: live stream and event of the same context.
        unsafe { cu!(cuStreamWaitEvent(s.raw(), self.0, 0)) }
    }

    /// Whether the recorded work has completed (`CUDA_ERROR_NOT_READY` when not).
    #[inline]
    pub fn query(self) -> Result<()> {
        // SAFETY: a live event.
        unsafe { cu!(cuEventQuery(self.0)) }
    }

    /// Waits for the recorded work.
    #[inline]
    pub fn synchronize(self) -> Result<()> {
        // SAFETY: a live event.
        unsafe { cu!(cuEventSynchronize(self.0)) }
    }

    /// Milliseconds from `self` to `end` (`cuEventElapsedTime`; about 0.5 us
    /// resolution): both timing events of one context, both completed
    /// (`CUDA_ERROR_NOT_READY` otherwise).
    #[inline]
    pub fn elapsed_ms(self, end: Event) -> Result<f32> {
        let mut ms = 0f32;
        // SAFETY: out-pointer to a local; live events.
        unsafe { cu!(cuEventElapsedTime(&mut ms, self.0, end.0)) }?;
        Ok(ms)
    }
}

/// An event the plugin created (timing disabled), destroyed when dropped.
/// `Send + Sync` like [`Event`].
#[repr(transparent)]
#[derive(Debug)]
pub struct OwnedEvent(Event);

impl OwnedEvent {
    /// Creates an event without timing in the current context.
    #[inline]
    pub fn create() -> Result<OwnedEvent> {
        let mut e: CUevent = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; a context is current (caller).
        unsafe { cu!(cuEventCreate(&mut e, CU_EVENT_DISABLE_TIMING as u32)) }?;
        Ok(OwnedEvent(Event(e)))
    }

    /// Creates an event with timing (for [`Event::elapsed_ms`]) in the current
    /// context. Only the profiler and trace use these: recording one costs more.
    #[inline]
    pub fn create_timed() -> Result<OwnedEvent> {
        let mut e: CUevent = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; a context is current (caller).
        unsafe { cu!(cuEventCreate(&mut e, CU_EVENT_DEFAULT as u32)) }?;
        Ok(OwnedEvent(Event(e)))
    }

    /// The borrowed handle (valid while `self` lives).
    #[inline]
    pub fn handle(&self) -> Event {
        self.0
    }
}

impl Drop for OwnedEvent {
    fn drop(&mut self) {
        // SAFETY: created by `create`, destroyed once.
        if let Err(e) = unsafe { cu!(cuEventDestroy(self.0 .0)) } {
            log::debug!("event {:p}: {e}", self.0 .0);
        }
    }
}
