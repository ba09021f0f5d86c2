//! Signals: [`Signal`], a completion signal the plugin creates for one dispatch and
//! destroys when dropped.

use crate::hsa::error::check;
use crate::hsa::sys::*;
use crate::hsa::table::Runtime;
use gomp_plugin::error::Result;

/// An HSA signal the plugin created (`hsa_signal_create`, no consumer list), destroyed
/// (`hsa_signal_destroy`) when dropped. `Send + Sync`: HSA signals may be used from any
/// thread; the runtime makes each operation atomic.
pub struct Signal {
    raw: hsa_signal_t,
    rt: &'static Runtime,
}

// SAFETY: HSA signal handles may be used from any thread (HSA spec).
unsafe impl Send for Signal {}
// SAFETY: as above; every operation is an atomic runtime call.
unsafe impl Sync for Signal {}

impl Signal {
    /// Creates a signal with value `initial`, any agent may wait on it.
    pub fn create(rt: &'static Runtime, initial: hsa_signal_value_t) -> Result<Signal> {
        let mut raw = hsa_signal_t { handle: 0 };
        // SAFETY: out-pointer to a local; no consumers list.
        let st = unsafe { (rt.hsa_signal_create)(initial, 0, std::ptr::null(), &mut raw) };
        check(st, "hsa_signal_create")?;
        Ok(Signal { raw, rt })
    }

    /// The runtime's handle (for a packet's `completion_signal`; valid while `self`
    /// lives).
    #[inline]
    pub fn raw(&self) -> hsa_signal_t {
        self.raw
    }

    /// Sets the value, relaxed order (`hsa_signal_store_relaxed`).
    #[inline]
    pub fn store_relaxed(&self, v: hsa_signal_value_t) {
        // SAFETY: a live signal of ours.
        unsafe { (self.rt.hsa_signal_store_relaxed)(self.raw, v) }
    }

    /// Waits, blocked, until the value is below `v` or `timeout_ticks` (timestamp
    /// ticks, a hint) passed; returns the value seen, with acquire order
    /// (`hsa_signal_wait_acquire` with `HSA_SIGNAL_CONDITION_LT`).
    #[inline]
    pub fn wait_below(&self, v: hsa_signal_value_t, timeout_ticks: u64) -> hsa_signal_value_t {
        // SAFETY: a live signal of ours.
        unsafe {
            (self.rt.hsa_signal_wait_acquire)(
                self.raw,
                hsa_signal_condition_t_HSA_SIGNAL_CONDITION_LT,
                v,
                timeout_ticks,
                hsa_wait_state_t_HSA_WAIT_STATE_BLOCKED,
            )
        }
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        // SAFETY: our signal, destroyed once; no packet uses it any more (its owner
        // drops it after the dispatch completed).
        let st = unsafe { (self.rt.hsa_signal_destroy)(self.raw) };
        if let Err(e) = check(st, "hsa_signal_destroy") {
            log::debug!("{e}");
        }
    }
}
