//! Copy path: a synchronous copy the driver refused as "invalid argument", made again
//! by a kernel: the route ([`ByKernel`]) and the copy kernel ([`KernelCopy`], a
//! device's): only while this thread serves a reverse-offload request, and only for an address outside the plugin's own allocations — memory the
//! kernel allocated itself (device `malloc`), which the driver's copy functions do not
//! know. Takes no copy first-hand ([`CopyPath::retry`] only).
//!
//! The copies by kernel, for device memory the driver's copy functions refuse: memory a
//! kernel allocated with device-side `malloc` (Fortran allocatables allocated inside a
//! target region, for instance) is no driver allocation, so `cuMemcpy*` answers
//! "invalid argument" for it. Reverse offload maps such memory back to the host
//! (`libgomp.fortran/reverse-offload-5.f90`); there, a small kernel on its own stream
//! copies through a page-locked, device-mapped bounce buffer while the requesting
//! kernel waits. Kernel and buffer are prepared when an image with reverse offload is
//! loaded ([`KernelCopy::prepare`]), as neither can be created while a kernel waits.
//! Used only while a reverse-offload request is being served, where the device
//! runtime itself supplied the addresses: a kernel touching a wrong address
//! would fault and take the context with it, where the driver merely refuses.

use super::host_copy::HostCopy;
use super::path::{CopyPath, Route, Taken, Takes};
use crate::config::Config;
use crate::cuda::pools::streams::StreamPool;
use crate::cuda::pools::thread_streams::LaneData;
use crate::cuda::safe::{HostAlloc, Module};
use crate::cuda::sys::*;
use crate::device::parts::Parts;
use crate::device::serving;
use crate::observe::profile::CopyDir;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::sync::Lock;
use std::ffi::c_void;
use std::sync::Mutex;

/// The copy-by-kernel path (zero-sized, stateless, `Sync`; the kernel, [`KernelCopy`],
/// is the copy buffers' `kernel_copy`).
pub struct ByKernel;

impl Route for ByKernel {
    fn label(&self) -> &'static str {
        "kernel_copy"
    }

    /// None first-hand (retries only).
    fn takes(&self, _config: &Config) -> Takes {
        Takes::NONE
    }
}

impl<B: AsRef<KernelCopy>, T: LaneData> CopyPath<B, T> for ByKernel {
    unsafe fn try_copy(&self, _d: &Parts<B, T>, _c: &HostCopy) -> Option<Taken> {
        None
    }

    unsafe fn retry(&self, d: &Parts<B, T>, c: &HostCopy, failed: &Error) -> Option<Result<()>> {
        if !device_heap_copy(d, failed, c.dev) {
            return None;
        }
        c.taken(self.label());
        let copy = || {
            d.launch.settle()?;
            let (kc, streams): (&KernelCopy, _) = (d.buffers.as_ref(), d.launch.streams());
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
fn device_heap_copy<B, T>(d: &Parts<B, T>, e: &Error, dev_addr: CUdeviceptr) -> bool {
    let retry = matches!(e, Error::Driver(c) if c.code() == i64::from(crate::cuda::sys::CUDA_ERROR_INVALID_VALUE))
        && serving::serving_request()
        && !d.memory.blocks().contains(dev_addr);
    log::debug!(
        "copy at device address {dev_addr:#x} failed ({e}){}",
        if retry { "; copying with a kernel" } else { "" }
    );
    retry
}

/// Bytes of the bounce buffer (larger copies go in pieces).
const BOUNCE: usize = 1 << 20;
/// Threads per block of the copy kernel.
const THREADS: u32 = 256;

/// A grid-stride byte copy through generic addresses: `copy(dst, src, n)`.
const PTX: &str = "\
.version 6.0
.target sm_52
.address_size 64
.visible .entry gomp_rs_copy(.param .u64 dst, .param .u64 src, .param .u64 n)
{
\t.reg .u64 %rd<8>;
\t.reg .u32 %r<5>;
\t.reg .u16 %rs<2>;
\t.reg .pred %p<2>;
\tld.param.u64 %rd1, [dst];
\tld.param.u64 %rd2, [src];
\tld.param.u64 %rd3, [n];
\tmov.u32 %r1, %tid.x;
\tmov.u32 %r2, %ctaid.x;
\tmov.u32 %r3, %ntid.x;
\tmov.u32 %r4, %nctaid.x;
\tmul.wide.u32 %rd4, %r2, %r3;
\tcvt.u64.u32 %rd5, %r1;
\tadd.u64 %rd4, %rd4, %rd5;
\tmul.wide.u32 %rd6, %r3, %r4;
LOOP:
\tsetp.ge.u64 %p1, %rd4, %rd3;
\t@%p1 bra DONE;
\tadd.u64 %rd7, %rd2, %rd4;
\tld.u8 %rs1, [%rd7];
\tadd.u64 %rd7, %rd1, %rd4;
\tst.u8 [%rd7], %rs1;
\tadd.u64 %rd4, %rd4, %rd6;
\tbra LOOP;
DONE:
\tret;
}
\0";

/// The loaded copy kernel and its bounce buffer. Dropped in field order: the buffer
/// is freed, then the module unloaded.
struct Loaded {
    bounce: HostAlloc,
    /// Held for `func`; unloaded when dropped.
    _module: Module,
    func: CUfunction,
    bounce_dev: CUdeviceptr,
}

/// A device's kernel-copy state, created on first use. Thread-safe: one copy at a
/// time per device (they are rare: reverse-offload mappings of device-heap memory).
#[derive(Default)]
pub struct KernelCopy {
    slot: Mutex<Option<Loaded>>,
}

// SAFETY: the module, function and page-locked buffer are used only under the mutex.
unsafe impl Send for Loaded {}

impl Loaded {
    fn load() -> Result<Loaded> {
        // SAFETY: NUL-terminated PTX text; context current. On an error below, what
        // was created is dropped (freed) in reverse order: buffer, then module.
        let module = unsafe { Module::load_data(PTX.as_ptr().cast()) }?;
        let func = module
            .function(c"gomp_rs_copy")?
            .ok_or_else(|| crate::cuda::error("cuModuleGetFunction", CUDA_ERROR_NOT_FOUND))?;
        let bounce = HostAlloc::mapped(BOUNCE)?;
        let bounce_dev = bounce.device_pointer()?;
        Ok(Loaded {
            bounce,
            _module: module,
            func,
            bounce_dev,
        })
    }

    fn bounce(&self) -> *mut u8 {
        self.bounce.as_ptr().cast()
    }

    /// Runs `copy(dst, src, n)` on a stream of the device and waits for it.
    fn run(&self, streams: &StreamPool, dst: u64, src: u64, n: usize) -> Result<()> {
        let blocks = (n as u64).div_ceil(THREADS as u64).clamp(1, 1024) as u32;
        let (mut d, mut s, mut len) = (dst, src, n as u64);
        let mut params: [*mut c_void; 3] = [
            (&mut d as *mut u64).cast(),
            (&mut s as *mut u64).cast(),
            (&mut len as *mut u64).cast(),
        ];
        streams.on_stream(|st| {
            // SAFETY: the parameters match the entry's three u64s and live across
            // the call; the stream belongs to the device; waited for by on_stream.
            unsafe {
                st.launch(
                    self.func,
                    (blocks, 1, 1),
                    (THREADS, 1, 1),
                    0,
                    params.as_mut_ptr(),
                )
            }
        })
    }
}

impl KernelCopy {
    /// Loads the kernel, allocates the bounce buffer and runs the kernel once, so that
    /// nothing of it is left to load later. Called when an image with reverse offload
    /// is loaded, while no kernel of the program runs: page-locked allocation and
    /// module loading wait for the device to be idle, which a kernel spinning on its
    /// reverse-offload answer never is.
    pub fn prepare(&self, streams: &StreamPool) -> Result<()> {
        let mut slot = self.slot.locked();
        if slot.is_none() {
            let l = Loaded::load()?;
            l.run(streams, l.bounce_dev, l.bounce_dev, 0)?;
            *slot = Some(l);
            log::debug!("prepared the copy kernel for device-allocated memory");
        }
        Ok(())
    }

    fn with(&self, f: impl FnOnce(&Loaded) -> Result<()>) -> Result<()> {
        let slot = self.slot.locked();
        match slot.as_ref() {
            Some(l) => f(l),
            None => Err(Error::invalid(
                "the copy kernel for device-allocated memory is not loaded",
            )),
        }
    }

    /// Copies `n` bytes from device address `src` (any memory a kernel can read) to
    /// host `dst`. Context current (caller).
    ///
    /// # Safety
    /// `dst` must be writable for `n` bytes; `src` must be readable by a kernel.
    pub unsafe fn dev2host(
        &self,
        streams: &StreamPool,
        dst: *mut c_void,
        src: u64,
        n: usize,
    ) -> Result<()> {
        self.with(|l| {
            for off in (0..n).step_by(BOUNCE) {
                let len = BOUNCE.min(n - off);
                l.run(streams, l.bounce_dev, src + off as u64, len)?;
                // SAFETY: the kernel has finished writing `len` bounce bytes; `dst`
                // is writable for `n` (caller).
                unsafe {
                    std::ptr::copy_nonoverlapping(l.bounce(), dst.cast::<u8>().add(off), len)
                };
            }
            Ok(())
        })
    }

    /// Copies `n` bytes from host `src` to device address `dst` (any memory a kernel
    /// can write). Context current (caller).
    ///
    /// # Safety
    /// `src` must be readable for `n` bytes; `dst` must be writable by a kernel.
    pub unsafe fn host2dev(
        &self,
        streams: &StreamPool,
        dst: u64,
        src: *const c_void,
        n: usize,
    ) -> Result<()> {
        self.with(|l| {
            for off in (0..n).step_by(BOUNCE) {
                let len = BOUNCE.min(n - off);
                // SAFETY: `src` readable for `n` (caller); no kernel uses the bounce
                // buffer now (the mutex).
                unsafe {
                    std::ptr::copy_nonoverlapping(src.cast::<u8>().add(off), l.bounce(), len)
                };
                l.run(streams, dst + off as u64, l.bounce_dev, len)?;
            }
            Ok(())
        })
    }

    /// Unloads the kernel and frees the bounce buffer (device close).
    pub fn destroy(&self) {
        // Nothing runs the kernel or uses the buffer any more: dropped (buffer freed,
        // module unloaded).
        drop(self.slot.locked().take());
    }
}
