//! The page-locked warm-up of an opened device (`GOMP_NVPTX_TUNE=pinwarm`): one
//! page-locked block made and freed, so that the driver's one-time set-up of
//! page-locked memory (about 1 ms on the H100 hosts) is not paid by the program's
//! first page-locked allocation or staged copy. Best effort: a failure only means the
//! set-up is paid later (a `GOMP_DEBUG` line says so).
//!
//! [`PinWarmUp`] owns the warm-up's thread (`pinwarm=bg`) until [`PinWarmUp::join`];
//! `Sync` (the handle is behind a lock).

use crate::cuda::safe::{context, HostAlloc};
use crate::cuda::sys::CUcontext;
use gomp_plugin::sync::Lock;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Instant;

/// Bytes of the warm-up's block (one page).
const BLOCK: usize = 4096;

/// The warm-up of one device: nothing, done, or running on its own thread.
#[derive(Default)]
pub struct PinWarmUp(Mutex<Option<JoinHandle<()>>>);

impl PinWarmUp {
    /// Runs the warm-up for device `ord`, whose context `ctx` is current on the calling
    /// thread: there, or (`background`) on a thread of its own; `ctx` must then stay
    /// alive until [`PinWarmUp::join`].
    pub fn start(&self, background: bool, ord: i32, ctx: CUcontext) {
        match background {
            false => warm(ord, "in open"),
            true => {
                // The context handle crosses to the thread as an address.
                let ctx = ctx as usize;
                let spawned = std::thread::Builder::new()
                    .name("gomp-nvptx-pinwarm".into())
                    .spawn(move || {
                        // SAFETY: the context lives until `join` has joined this thread.
                        match unsafe { context::set_current(ctx as CUcontext) } {
                            Ok(()) => warm(ord, "on its own thread"),
                            Err(e) => log::debug!("device {ord}: page-locked warm-up: {e}"),
                        }
                    });
                match spawned {
                    Ok(h) => *self.0.locked() = Some(h),
                    Err(e) => log::debug!("device {ord}: page-locked warm-up: no thread: {e}"),
                }
            }
        }
    }

    /// Waits for a warm-up thread to end (device close, before the context goes).
    pub fn join(&self) {
        if let Some(h) = self.0.locked().take() {
            let _ = h.join();
        }
    }
}

/// Makes and frees the block with the device's context current.
fn warm(ord: i32, how: &str) {
    let t0 = Instant::now();
    match HostAlloc::mapped(BLOCK) {
        // Freed as it is dropped.
        Ok(_block) => log::debug!(
            "device {ord}: page-locked warm-up {how}: {:.0} us",
            t0.elapsed().as_secs_f64() * 1e6
        ),
        Err(e) => log::debug!("device {ord}: page-locked warm-up {how}: {e}"),
    }
}
