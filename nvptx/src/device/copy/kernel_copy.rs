//! Copy path: a synchronous copy the driver refused as "invalid argument", made again
//! by a kernel (`host::kernel_copy`): only while this thread serves a reverse-offload
//! request, and only for an address outside the plugin's own allocations — memory the
//! kernel allocated itself (device `malloc`), which the driver's copy functions do not
//! know. Takes no copy first-hand ([`CopyPath::retry`] only).

use super::{ByKernel, CopyPath, HostCopy, Taken, Takes};
use crate::config::Config;
use crate::cuda::sys::CUdeviceptr;
use crate::device::{serving, Core};
use crate::observe::profile::CopyDir;
use gomp_plugin::error::{Error, Result};

impl CopyPath for ByKernel {
    fn label(&self) -> &'static str {
        "kernel_copy"
    }

    /// None first-hand (retries only).
    fn takes(&self, _config: &Config) -> Takes {
        Takes::NONE
    }

    unsafe fn try_copy(&self, _core: &Core, _c: &HostCopy) -> Option<Taken> {
        None
    }

    unsafe fn retry(&self, core: &Core, c: &HostCopy, failed: &Error) -> Option<Result<()>> {
        if !device_heap_copy(core, failed, c.dev) {
            return None;
        }
        c.taken(self);
        let copy = || {
            core.settle()?;
            let (kc, streams) = (&core.copies.kernel_copy, core.streams());
            // SAFETY: `c.host` as the caller guarantees; `c.dev` comes from the device
            // runtime serving a reverse-offload request (see `device_heap_copy`).
            unsafe {
                match c.dir {
                    CopyDir::H2D => kc.host2dev(streams, c.dev, c.host, c.n),
                    _ => kc.dev2host(streams, c.host, c.dev, c.n),
                }
            }
        };
        Some(copy())
    }
}

/// Whether a copy the driver refused with `e` should be retried by a kernel (logged
/// either way).
fn device_heap_copy(core: &Core, e: &Error, dev_addr: CUdeviceptr) -> bool {
    let retry = matches!(e, Error::Driver(c) if c.code() == i64::from(crate::cuda::sys::CUDA_ERROR_INVALID_VALUE))
        && serving::serving_request()
        && !core.blocks().contains(dev_addr);
    log::debug!(
        "copy at device address {dev_addr:#x} failed ({e}){}",
        if retry { "; copying with a kernel" } else { "" }
    );
    retry
}
