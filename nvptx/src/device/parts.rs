//! The parts of a device ([`Parts`]): its context, settings, memory, copy buffers,
//! launch resources (streams, events, the order of deferred copies) and the profile's
//! recorder, held together by the device core beside its copy engine (`device::copy`),
//! which is given them (the copy paths take `&Parts`, never the core); with the
//! questions a copy asks of them (staged? pageable? deferred?). Each part's behaviour
//! is the part's own.
//!
//! The copy buffers (`B`) and what each thread keeps beside its stream (`T`) are the
//! copy paths' types, declared in the copy folder above this file (each path's engine
//! in the path's file); the core names them (`device/whole.rs`: `Parts<Buffers,
//! ThreadBuffers>`, the one instance), this file does not.

use crate::config::staging::MIN_STAGED;
use crate::cuda::pools::thread_streams::LaneData;
use crate::cuda::safe::{query, Stream};
use crate::cuda::sys::CUdeviceptr;
use crate::device::device_context::DeviceContext;
use crate::device::launch_resources::LaunchResources;
use crate::device::memory::Memory;
use crate::device::serving;
use crate::device::settings::Settings;
use crate::host::ranges as host_ranges;
use crate::observe::profile::CopyMem;
use crate::observe::DeviceObserve;
use gomp_plugin::error::Result;
use std::ffi::c_void;
use std::sync::Arc;

/// A device's parts, owned by its core (`device::Core`) and given to its copy engine;
/// `B`: the copy paths' buffers of the device, `T`: each host thread's. `Sync` through
/// the core (each part locks inside; the context handle may be used from any thread).
pub struct Parts<B, T> {
    /// Which device, its properties and its context.
    pub context: DeviceContext,
    /// Settings and run-time switches.
    pub settings: Settings,
    /// Device memory and page-locked host memory.
    pub memory: Memory,
    /// The copy paths' buffers.
    pub buffers: B,
    /// Streams, events and the order of deferred copies; each thread's stream with its
    /// `T`.
    pub launch: LaunchResources<T>,
    /// The profile's and trace's recorder (`None` unless `GOMP_NVPTX_PROFILE` or
    /// `GOMP_NVPTX_TRACE` is set: every hook is a check of this field).
    pub observe: Option<Arc<DeviceObserve>>,
}

impl<B, T: LaneData> Parts<B, T> {
    /// The profile's and trace's recorder, if either is on.
    #[inline]
    pub fn observe(&self) -> Option<&DeviceObserve> {
        self.observe.as_deref()
    }

    /// Whether a synchronous host-to-device copy of `n` bytes may return before its DMA
    /// has ended: small enough, not serving a reverse-offload request (the requesting
    /// kernel reads the bytes as soon as the request is answered) and no `targetsync`
    /// interop stream alive.
    #[inline]
    pub fn may_defer(&self, n: usize) -> bool {
        n <= self.settings.config().tune.defer
            && !self.settings.interop_stream_alive()
            && !serving::serving_request()
    }

    /// Records a deferred copy just queued on `s` (`copy_order`). If that fails, or a
    /// `targetsync` interop stream has come into being meanwhile (the program may use it
    /// at once), the copy is waited for instead.
    pub fn deferred_done(&self, s: Stream) -> Result<()> {
        let r = self.launch.copy_order().deferred(s, self.launch.events());
        if r.is_err() || self.settings.interop_stream_alive() {
            self.launch.on(s, |_| Ok(()))?;
        }
        r
    }

    /// Whether a copy of `n` bytes from or to host `p` goes through the staging engine:
    /// large, `p` pageable, and, for a synchronous copy (`sync`), OpenMP ordering (not
    /// OpenACC's legacy stream: the engine's streams are not ordered after the queues'
    /// work). Memory the plugin page-locked (its pinned pool, `gomp_nvptx_host_lock`) is
    /// known from the host-range registry; otherwise `p` is pageable when the driver
    /// knows nothing of it (page-locked and managed memory DMA directly).
    pub fn stage(&self, p: *const c_void, n: usize, sync: bool) -> bool {
        n >= MIN_STAGED && (!sync || !self.settings.openacc_in_use()) && self.pageable(p, n)
    }

    /// Whether host `p` (of a copy of `n` bytes) is pageable: not memory the plugin
    /// page-locked (the host-range registry) and unknown to the driver (page-locked and
    /// managed memory DMA directly).
    pub fn pageable(&self, p: *const c_void, n: usize) -> bool {
        if host_ranges::global().contains(p as usize, n) {
            return false;
        }
        // An unknown (pageable) address is an error return, not a fault.
        query::memory_type(p as CUdeviceptr).is_err()
    }

    /// How a copy of `n` bytes from or to host `p` (synchronous: `sync`) reaches the
    /// host memory (for the profile only: costs a driver query).
    pub fn copy_mem(&self, p: *const c_void, n: usize, sync: bool) -> CopyMem {
        if self.stage(p, n, sync) {
            CopyMem::Staged
        } else if host_ranges::global().contains(p as usize, n)
            || query::memory_type(p as CUdeviceptr).is_ok()
        {
            CopyMem::Pinned
        } else {
            CopyMem::Pageable
        }
    }
}
