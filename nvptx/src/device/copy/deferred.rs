//! Copy path: a synchronous host-to-device copy that returns before its DMA has ended
//! (within `defer`, see [`Parts::may_defer`]), everything that can observe device
//! memory then ordered after it (`copy_order`). The source is safe to reuse when this
//! returns: pageable bytes below the bounce size are staged by the driver during
//! `cuMemcpyHtoDAsync` (CUDA's documented behaviour for pageable sources), the others
//! are first copied into a bounce buffer. Memory the program page-locked is never left
//! in flight. Not taken when the copy cannot be deferred so (the later paths wait).

use super::bounce::{self, Bounce, MIN_BYTES};
use super::host_copy::HostCopy;
use super::path::{CopyPath, Ended, Failed, Knob, Route, Taken, Takes};
use crate::config::Config;
use crate::cuda::pools::thread_streams::LaneData;
use crate::device::parts::Parts;
use crate::observe::profile::CopyDir;
use gomp_plugin::error::Result;

/// Largest copy from page-locked host memory that is deferred through a bounce buffer
/// (larger ones DMA directly from the program's memory and complete before returning:
/// copying them on the CPU would cost more than the DMA).
const PINNED_BOUNCE: usize = 64 << 10;

/// The deferred path (zero-sized, stateless, `Sync`; its bounce buffers are the copy
/// buffers' `bounce`).
pub struct Deferred;

impl Route for Deferred {
    fn label(&self) -> &'static str {
        "deferred"
    }

    fn knob(&self) -> Option<Knob> {
        Some(Knob::Shared("defer"))
    }

    fn takes(&self, _config: &Config) -> Takes {
        Takes::of(CopyDir::H2D, false)
    }
}

impl<B: AsRef<Bounce>, T: LaneData> CopyPath<B, T> for Deferred {
    unsafe fn try_copy(&self, d: &Parts<B, T>, c: &HostCopy) -> Option<Taken> {
        if !c.may_defer(d) {
            return None;
        }
        let pageable = c.pageable(d);
        let direct = pageable && c.n < MIN_BYTES;
        let b: &Bounce = d.buffers.as_ref();
        if !direct && !((pageable || c.n <= PINNED_BOUNCE) && b.fits(c.n)) {
            return None;
        }
        c.taken(self.label());
        let (dst, src, n) = (c.dev, c.host.cast_const(), c.n);
        let r = (|| -> Result<()> {
            let s = d.launch.deferred_stream(&d.settings)?;
            d.launch.order(s)?;
            if direct {
                // SAFETY: `src` is pageable and readable (caller): the driver has copied
                // it when the call returns.
                unsafe { s.copy_htod(dst, src, n) }?;
            } else {
                let buf = b.take()?;
                // SAFETY: forwarded caller guarantee; the buffer fits `n` (above).
                unsafe { bounce::host2dev(d, s, buf, dst, src, n) }?;
            }
            d.deferred_done(s)
        })();
        Some(r.map(|()| Ended::Deferred).map_err(Failed::from))
    }
}
