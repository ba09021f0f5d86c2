//! The device core's side of libgomp's memory entry points: `impl DeviceCore` for the
//! core [`Core`], which the exported shells call directly (`alloc`, `free`, the
//! synchronous copies, `memset`, `is_accessible_ptr`, managed memory), and activation,
//! which the registry runs on every lookup. `alloc` and `free` are reported to an
//! OpenACC profiler and recorded as entry spans when profiling or tracing.
//!
//! Threading: any host thread; each call makes the context current first (the
//! registry's lookup) and locks only the parts it touches.

use super::copy::Via;
use super::device_context::make_current;
#[cfg(doc)]
use super::memory::Memory;
use super::whole::Core;
use crate::cuda::safe::{cu_mem, query};
use crate::cuda::sys::*;
use crate::host::ranges as host_ranges;
use gomp_plugin::blocks::DevPtr;
use gomp_plugin::error::Result;
use gomp_plugin::libgomp::acc_prof;
use gomp_plugin::DeviceCore;
use std::ffi::{c_int, c_void};

/// Granularity of the driver's memory-type answers (`is_accessible`).
const PAGE: usize = 4096;

impl DeviceCore for Core {
    /// Makes this device's context current on the calling thread, if it is not already.
    /// Every entry point that touches the device calls this first, so any host thread
    /// (an OpenMP worker, say) may use the device.
    /// Counted for the thread's read-ahead (`device::copy::read_ahead`): what it read ahead
    /// serves only copies with no other call into the plugin since the run.
    fn activate(&self) -> Result<()> {
        crate::device::copy::read_ahead::entered();
        make_current(self.context())
    }

    /// [`Core::alloc`], reported to an OpenACC profiler (`acc_ev_alloc`) when one is
    /// set up for the calling thread. Only once OpenACC uses the device: a thread's
    /// OpenACC constructs run after libgomp has made its thread data there
    /// (`openacc_create_thread_data`), which says so.
    #[inline]
    fn alloc(&self, size: usize) -> Result<DevPtr> {
        self.entry("alloc", || {
            let p = Core::alloc(self, size)?;
            if !self.settings().openacc_in_use() {
                return Ok(p);
            }
            if let Some(prof) = acc_prof::current() {
                prof.data(acc_prof::EV_ALLOC, size, p as *const c_void);
            }
            Ok(p)
        })
    }

    /// Frees a block of [`Core::alloc`] ([`Memory::free_block`]) (within the caches' bound), reported as
    /// `acc_ev_free` (as in `alloc`).
    #[inline]
    fn free(&self, p: DevPtr) -> Result<()> {
        self.entry("free", || {
            self.memory()
                .free_block(p, self.settings(), self.launch(), self.observe())?;
            if p != 0 && self.settings().openacc_in_use() {
                if let Some(prof) = acc_prof::current() {
                    prof.data(acc_prof::EV_FREE, usize::MAX, p as *const c_void);
                }
            }
            Ok(())
        })
    }

    /// A synchronous copy of `n` bytes from device `src` to host `dst`.
    unsafe fn dev2host(&self, dst: *mut c_void, src: DevPtr, n: usize) -> Result<()> {
        // SAFETY: forwarded caller guarantee (`dst` writable for `n` bytes).
        unsafe { self.copies().dev2host(self.parts(), dst, src, n, Via::Sync) }
    }

    /// A synchronous copy of `n` bytes from host `src` to device `dst`.
    unsafe fn host2dev(&self, dst: DevPtr, src: *const c_void, n: usize) -> Result<()> {
        // SAFETY: forwarded caller guarantee (`src` readable for `n` bytes).
        unsafe { self.copies().host2dev(self.parts(), dst, src, n, Via::Sync) }
    }

    /// A synchronous copy of `n` bytes between two device buffers.
    fn dev2dev(&self, dst: DevPtr, src: DevPtr, n: usize) -> Result<()> {
        self.copies().dev2dev(self.parts(), dst, src, n, Via::Sync)
    }

    /// Sets `n` device bytes at `p` to the low byte of `val`.
    fn memset(&self, p: DevPtr, val: c_int, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        // Device address checked by the driver; waited for before returning.
        self.launch()
            .on_copy_stream(self.settings(), |s| s.memset_d8(p, val as u8, n))
    }

    /// Whether the device can access every page of `[p, p+size)`: device, managed or
    /// page-locked host memory known to the driver. Empty or NULL ranges are not.
    fn is_accessible(&self, p: usize, size: usize) -> bool {
        if p == 0 || size == 0 {
            return false;
        }
        let Some(end) = p.checked_add(size) else {
            return false;
        };
        if host_ranges::global().contains(p, size) {
            return true;
        }
        let mut at = p;
        while at < end {
            let kind = query::memory_type(at as CUdeviceptr);
            if !matches!(
                kind,
                Ok(CU_MEMORYTYPE_HOST | CU_MEMORYTYPE_DEVICE | CU_MEMORYTYPE_UNIFIED)
            ) {
                return false;
            }
            at = (at / PAGE + 1) * PAGE;
        }
        true
    }

    /// Managed memory (`cuMemAllocManaged`, attached globally).
    fn managed_alloc(&self, size: usize) -> Result<DevPtr> {
        // The stand-in reports NOT_SUPPORTED.
        cu_mem::alloc_managed(size.max(1))
    }

    /// Frees managed memory (after the deferred copies that may still use it).
    fn managed_free(&self, p: DevPtr) -> Result<()> {
        if p != 0 {
            self.launch().settle()?;
            // SAFETY: `p` came from a cuMemAlloc-family call (libgomp's contract).
            unsafe { cu_mem::free(p) }?;
        }
        Ok(())
    }
}
