//! The pinned pool's memory source: page-locked host chunks (`cuMemHostAlloc`) for
//! libgomp 16's pinned allocator, served by the device's [`PinnedPool`].

use crate::cuda::safe::HostAlloc;
use crate::cuda::sys::*;
use crate::host::numa;
use crate::host::pinned_pool::{ChunkSource, PinnedPool};
use crate::host::ranges::{self as host_ranges, Origin};
use gomp_plugin::error::Result;
use std::ffi::c_void;

/// The pinned pool's memory source for one device: `cuMemHostAlloc` (PORTABLE |
/// DEVICEMAP, so every context can use it for DMA) in the device's context, on the
/// device's NUMA node where it has one (`host::numa`), each piece recorded in the
/// host-range registry so copies from it are known to be page-locked. Plain data; the
/// caller makes the device's context current.
pub struct HostChunks {
    /// The device whose context allocates.
    pub ord: i32,
    /// The NUMA node the pieces are asked on (`None`: where the thread's policy puts
    /// them).
    pub node: Option<i32>,
}

impl ChunkSource for HostChunks {
    fn alloc(&self, bytes: usize) -> Result<Option<usize>> {
        // The device's context is current (Core methods activate it before using the
        // pool). The pool owns the chunk from here on, as an address.
        let p = match numa::prefer(self.node, || HostAlloc::mapped(bytes)) {
            Ok(h) => h.into_raw(),
            Err(e) if e.has_code(CUDA_ERROR_OUT_OF_MEMORY) => return Ok(None),
            Err(e) => return Err(e),
        };
        if let Err(e) =
            host_ranges::global().insert_owned(p as usize, bytes, Origin::Pool(self.ord))
        {
            log::debug!("pinned chunk {p:p} not registered: {e}");
        }
        if log::log_enabled!(log::Level::Debug) {
            let last = p as usize + bytes - 4096;
            log::debug!(
                "page-locked {bytes} bytes at {p:p} for device {}: first page on NUMA node {}, last on {} (asked: {})",
                self.ord,
                numa::node_of(p as usize).map_or("?".into(), |n| n.to_string()),
                numa::node_of(last).map_or("?".into(), |n| n.to_string()),
                self.node.map_or("any".into(), |n| n.to_string()),
            );
        }
        Ok(Some(p as usize))
    }

    fn free(&self, p: usize, _bytes: usize) -> Result<()> {
        host_ranges::global().remove_owned(p);
        // SAFETY: `p` came from `HostAlloc::into_raw` above; the pool hands it back once.
        if let Some(h) = unsafe { HostAlloc::from_raw(p as *mut c_void) } {
            h.free()?;
        }
        Ok(())
    }
}

/// A device's pinned pool.
pub type HostPool = PinnedPool<HostChunks>;
