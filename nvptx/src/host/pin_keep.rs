//! One page-locked block kept while a device is open (`GOMP_NVPTX_TUNE=pinkeep`, on by
//! default), so that the program's first page-locked allocation does not pay the
//! driver's page-locked set-up.
//!
//! Measured on an H200 host (`cuda_floor`'s `floor_hostalloc_*` rows and a trace of
//! `offload_bench pinned_alloc`): a process's first `cuMemHostAlloc` costs about 1 ms
//! whatever its size; while an earlier page-locked block is alive, a 1 MiB one costs a
//! few microseconds; once every block has been freed, the next one pays the millisecond
//! again (so a block made and freed at open, the removed `pinwarm`, changed nothing).
//! The block is made on a thread of its own, by default once the device's first image is
//! loaded (`pinkeep=open`: at device open, beside the load), and freed at device close. Best effort: a failure only means the set-up is paid
//! later (a `GOMP_DEBUG` line says so).
//!
//! [`PinKeep`] owns the thread, and through it the block, until [`PinKeep::release`];
//! `Sync` (the handle is behind a lock).

use crate::cuda::safe::{context, HostAlloc};
use crate::cuda::sys::CUcontext;
use crate::observe::nvtx;
use gomp_plugin::sync::Lock;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Instant;

/// Bytes of the kept block (one page).
const BLOCK: usize = 4096;

/// The kept block of one device: the thread that makes it, which hands the block back
/// when joined (`None`: not started).
#[derive(Default)]
pub struct PinKeep(Mutex<Option<JoinHandle<Option<HostAlloc>>>>);

impl PinKeep {
    /// Starts making the block for device `ord` on a thread of its own, in context
    /// `ctx`, which must stay alive until [`PinKeep::release`]; nothing if started before.
    pub fn start(&self, ord: i32, ctx: CUcontext) {
        let mut thread = self.0.locked();
        if thread.is_some() {
            return;
        }
        // The context handle crosses to the thread as an address.
        let ctx = ctx as usize;
        let spawned = nvtx::spawn("gomp-nvptx-pinkeep".into(), move || {
            // SAFETY: the context lives until `release` has joined this thread.
            if let Err(e) = unsafe { context::set_current(ctx as CUcontext) } {
                log::debug!("device {ord}: kept page-locked block: {e}");
                return None;
            }
            let t0 = Instant::now();
            match HostAlloc::alloc(BLOCK, 0) {
                Ok(block) => {
                    log::debug!(
                        "device {ord}: kept page-locked block made on its own thread in {:.0} us",
                        t0.elapsed().as_secs_f64() * 1e6
                    );
                    Some(block)
                }
                Err(e) => {
                    log::debug!("device {ord}: kept page-locked block: {e}");
                    None
                }
            }
        });
        match spawned {
            Ok(h) => *thread = Some(h),
            Err(e) => log::debug!("device {ord}: kept page-locked block: no thread: {e}"),
        }
    }

    /// Waits for the thread (device close, before the context goes) and frees the block.
    pub fn release(&self) {
        let thread = self.0.locked().take();
        if let Some(b) = thread.and_then(|h| h.join().ok().flatten()) {
            if let Err(e) = b.free() {
                log::debug!("kept page-locked block: {e}");
            }
        }
    }
}
