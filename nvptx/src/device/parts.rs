//! The parts of a device ([`Parts`]): its context, settings, memory, copy buffers,
//! launch resources (streams, events, the order of deferred copies) and the profile's
//! recorder, held together by the device core beside its copy engine (`device::copy`),
//! which is given them (the copy paths take `&Parts`, never the core); with the
//! questions a copy asks of them (staged? pageable? deferred?). Each part's behaviour
//! is the part's own.

use crate::cuda::safe::{query, Stream};
use crate::cuda::sys::CUdeviceptr;
use crate::device::context::DeviceContext;
use crate::device::copy_buffers::Buffers;
use crate::device::launch_resources::LaunchResources;
use crate::device::memory::Memory;
use crate::device::serving;
use crate::device::settings::Settings;
use crate::device::wait_choice;
use crate::host::ranges as host_ranges;
use crate::host::ring::Ring;
use crate::host::staging;
use crate::observe::profile::CopyMem;
use crate::observe::{info, DeviceObserve};
use gomp_plugin::error::Result;
use std::ffi::c_void;
use std::sync::Arc;

/// A device's parts, owned by its core (`device::Core`) and given to its copy engine.
/// `Sync` through the core (each part locks inside; the context handle may be used from
/// any thread).
pub struct Parts {
    /// Which device, its properties and its context.
    pub context: DeviceContext,
    /// Settings and run-time switches.
    pub settings: Settings,
    /// Device memory and page-locked host memory.
    pub memory: Memory,
    /// The copy paths' buffers and the interop-stream count.
    pub buffers: Buffers,
    /// Streams, events and the order of deferred copies.
    pub launch: LaunchResources,
    /// The profile's and trace's recorder (`None` unless `GOMP_NVPTX_PROFILE` or
    /// `GOMP_NVPTX_TRACE` is set: every hook is a check of this field).
    pub observe: Option<Arc<DeviceObserve>>,
}

impl Parts {
    /// The profile's and trace's recorder, if either is on.
    #[inline]
    pub fn observe(&self) -> Option<&DeviceObserve> {
        self.observe.as_deref()
    }

    /// [`LaunchResources::on_waited`] with the wait the device's settings choose for a
    /// kernel launch (`kernel`) or a copy; then, once per device under
    /// `GOMP_NVPTX_TUNE=syncwait=auto`, the ways of waiting measured on `s`
    /// ([`Parts::measure_waits`]).
    ///
    /// # Safety
    /// `ring` must be the calling thread's lane's and `s` that lane's stream.
    #[inline]
    pub unsafe fn on_waited<T>(
        &self,
        s: Stream,
        ring: &Ring,
        kernel: bool,
        f: impl FnOnce(Stream) -> Result<T>,
    ) -> Result<T> {
        let flag = self.settings.waits().by_flag(kernel);
        // SAFETY: forwarded caller guarantees.
        let r = unsafe { self.launch.on_waited(s, ring, flag, f) };
        if r.is_ok() {
            // SAFETY: forwarded caller guarantees; `s` has just run its work.
            unsafe { self.measure_waits(s, ring) };
        }
        r
    }

    /// Measures the ways of waiting on `s` (`device::wait_choice`) if the device still
    /// wants them measured and the calling thread's `ring` has its flag word; keeps the
    /// faster of each and says which (`GOMP_DEBUG`, `GOMP_NVPTX_INFO`, the profile).
    /// One relaxed load when nothing is to be done.
    ///
    /// # Safety
    /// `ring` must be the calling thread's lane's and `s` that lane's stream, with
    /// nothing queued on it that has not run.
    #[inline]
    pub unsafe fn measure_waits(&self, s: Stream, ring: &Ring) {
        // SAFETY: the calling thread's ring (caller).
        if self.settings.waits().wanted() && unsafe { ring.has_flag() } {
            // SAFETY: forwarded caller guarantees.
            unsafe { self.measure_waits_now(s, ring) }
        }
    }

    /// [`Parts::measure_waits`]' measurement, by the one thread that claims it.
    ///
    /// # Safety
    /// As [`Parts::measure_waits`].
    #[cold]
    #[inline(never)]
    unsafe fn measure_waits_now(&self, s: Stream, ring: &Ring) {
        let waits = self.settings.waits();
        if !waits.claim() {
            return;
        }
        // SAFETY: forwarded caller guarantees.
        match unsafe { wait_choice::measure(s, ring) } {
            Ok(Some(m)) => {
                waits.keep(&m);
                let text = m.describe();
                let ord = self.context.ord();
                log::debug!("device {ord}: {text}");
                info::device(&self.settings.config().observe, ord, &text);
                if let Some(o) = self.observe() {
                    o.note(&text);
                }
            }
            Ok(None) => waits.unclaim(),
            Err(e) => {
                log::debug!("device {}: waits not measured ({e}): the word for launches, cuStreamSynchronize for copies", self.context.ord());
                waits.give_up();
            }
        }
    }

    /// Whether a synchronous host-to-device copy of `n` bytes may return before its DMA
    /// has ended: small enough, not serving a reverse-offload request (the requesting
    /// kernel reads the bytes as soon as the request is answered) and no `targetsync`
    /// interop stream alive.
    #[inline]
    pub fn may_defer(&self, n: usize) -> bool {
        n <= self.settings.config().tune.defer
            && !self.buffers.interop_stream_alive()
            && !serving::serving_request()
    }

    /// Records a deferred copy just queued on `s` (`copy_order`). If that fails, or a
    /// `targetsync` interop stream has come into being meanwhile (the program may use it
    /// at once), the copy is waited for instead.
    pub fn deferred_done(&self, s: Stream) -> Result<()> {
        let r = self.launch.copy_order().deferred(s, self.launch.events());
        if r.is_err() || self.buffers.interop_stream_alive() {
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
        n >= staging::MIN_STAGED
            && (!sync || !self.settings.openacc_in_use())
            && self.pageable(p, n)
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
