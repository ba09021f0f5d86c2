//! Copy path: a synchronous copy the driver refused as "invalid argument", made again
//! by a kernel (`host::kernel_copy`): only while this thread serves a reverse-offload
//! request, and only for an address outside the plugin's own allocations — memory the
//! kernel allocated itself (device `malloc`), which the driver's copy functions do not
//! know. Takes no copy first-hand ([`CopyPath::retry`] only).

use super::host_copy::HostCopy;
use super::path::{CopyPath, Taken, Takes};
use crate::config::Config;
use crate::cuda::sys::CUdeviceptr;
use crate::device::parts::Parts;
use crate::device::serving;
use crate::observe::profile::CopyDir;
use gomp_plugin::error::{Error, Result};

/// The copy-by-kernel path (zero-sized, stateless, `Sync`; the kernel is the copy
/// buffers' `kernel_copy`).
pub struct ByKernel;

impl CopyPath for ByKernel {
    fn label(&self) -> &'static str {
        "kernel_copy"
    }

    /// None first-hand (retries only).
    fn takes(&self, _config: &Config) -> Takes {
        Takes::NONE
    }

    unsafe fn try_copy(&self, _d: &Parts, _c: &HostCopy) -> Option<Taken> {
        None
    }

    unsafe fn retry(&self, d: &Parts, c: &HostCopy, failed: &Error) -> Option<Result<()>> {
        if !device_heap_copy(d, failed, c.dev) {
            return None;
        }
        c.taken(self.label());
        let copy = || {
            d.launch.settle()?;
            let (kc, streams) = (&d.buffers.kernel_copy(), d.launch.streams());
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
fn device_heap_copy(d: &Parts, e: &Error, dev_addr: CUdeviceptr) -> bool {
    let retry = matches!(e, Error::Driver(c) if c.code() == i64::from(crate::cuda::sys::CUDA_ERROR_INVALID_VALUE))
        && serving::serving_request()
        && !d.memory.blocks().contains(dev_addr);
    log::debug!(
        "copy at device address {dev_addr:#x} failed ({e}){}",
        if retry { "; copying with a kernel" } else { "" }
    );
    retry
}
