//! Streams: [`Stream`], a borrowed handle with the operations the plugin queues, and
//! [`OwnedStream`], which destroys its stream when dropped.

use crate::cu;
use crate::cuda::sys::*;
use gomp_plugin::error::Result;
use std::ffi::c_void;

/// A CUDA stream handle, borrowed: valid while its owner (an [`OwnedStream`], the
/// program for a stream it handed over, or the context for the legacy default stream)
/// keeps it. `Copy`, `Send + Sync`: the driver allows any thread to use a stream.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream(CUstream);

// SAFETY: CUDA stream handles may be used from any host thread.
unsafe impl Send for Stream {}
// SAFETY: as above; the handle is only passed to the driver.
unsafe impl Sync for Stream {}

impl Stream {
    /// CUDA's legacy default stream of the current context.
    pub const LEGACY: Stream = Stream(std::ptr::null_mut());

    /// A stream the plugin does not own (the program's, or NULL for the legacy one).
    ///
    /// # Safety
    /// `s` must stay a live stream of the device's context while the handle is used.
    #[inline]
    pub unsafe fn from_raw(s: CUstream) -> Stream {
        Stream(s)
    }

    /// The driver handle.
    #[inline]
    pub fn raw(self) -> CUstream {
        self.0
    }

    /// Waits for the stream's work (`cuStreamSynchronize`).
    #[inline]
    pub fn synchronize(self) -> Result<()> {
        // SAFETY: a live stream (the type's invariant).
        unsafe { cu!(cuStreamSynchronize(self.0)) }
    }

    /// Whether the stream's work has completed (`cuStreamQuery`; `CUDA_ERROR_NOT_READY`
    /// when it has not).
    #[inline]
    pub fn query(self) -> Result<()> {
        // SAFETY: a live stream.
        unsafe { cu!(cuStreamQuery(self.0)) }
    }

    /// Queues a write of `value` to the 32-bit word at device address `addr` (mapped
    /// page-locked memory, say), after a system-wide fence: when the host sees it, the
    /// stream's earlier work has run and its writes to host memory are visible
    /// (`cuStreamWriteValue32_v2`, flags 0; `CUDA_ERROR_NOT_SUPPORTED` from drivers
    /// without it).
    ///
    /// # Safety
    /// `addr` must stay a writable word until the write has run.
    #[inline]
    pub unsafe fn write_value32(self, addr: CUdeviceptr, value: u32) -> Result<()> {
        // SAFETY: caller's guarantee on `addr`.
        unsafe { cu!(cuStreamWriteValue32(self.0, addr, value, 0)) }
    }

    /// Queues a copy of `n` bytes from host `src` to device `dst`.
    ///
    /// # Safety
    /// `src` must stay readable for `n` bytes until the copy has run.
    #[inline]
    pub unsafe fn copy_htod(self, dst: CUdeviceptr, src: *const c_void, n: usize) -> Result<()> {
        // SAFETY: caller's guarantee on `src`; the driver checks `dst`.
        unsafe { cu!(cuMemcpyHtoDAsync(dst, src, n, self.0)) }
    }

    /// Queues a copy of `n` bytes from device `src` to host `dst`.
    ///
    /// # Safety
    /// `dst` must stay writable for `n` bytes until the copy has run.
    #[inline]
    pub unsafe fn copy_dtoh(self, dst: *mut c_void, src: CUdeviceptr, n: usize) -> Result<()> {
        // SAFETY: caller's guarantee on `dst`; the driver checks `src`.
        unsafe { cu!(cuMemcpyDtoHAsync(dst, src, n, self.0)) }
    }

    /// Queues a copy of `n` bytes between device buffers (the driver checks both).
    #[inline]
    pub fn copy_dtod(self, dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> Result<()> {
        // SAFETY: device addresses only; the driver validates them.
        unsafe { cu!(cuMemcpyDtoDAsync(dst, src, n, self.0)) }
    }

    /// Queues setting `n` device bytes at `p` to `val`.
    #[inline]
    pub fn memset_d8(self, p: CUdeviceptr, val: u8, n: usize) -> Result<()> {
        // SAFETY: a device address; the driver validates it.
        unsafe { cu!(cuMemsetD8Async(p, val, n, self.0)) }
    }

    /// Queues a 2-D copy.
    ///
    /// # Safety
    /// The descriptor's host side(s) must stay valid for the whole block until it ran.
    #[inline]
    pub unsafe fn copy_2d(self, c: &CUDA_MEMCPY2D) -> Result<()> {
        // SAFETY: caller's guarantee.
        unsafe { cu!(cuMemcpy2DAsync(c, self.0)) }
    }

    /// Queues a 3-D copy.
    ///
    /// # Safety
    /// As [`Stream::copy_2d`].
    #[inline]
    pub unsafe fn copy_3d(self, c: &CUDA_MEMCPY3D) -> Result<()> {
        // SAFETY: caller's guarantee.
        unsafe { cu!(cuMemcpy3DAsync(c, self.0)) }
    }

    /// Queues kernel `f` on a `grid` of blocks of `block` threads with `smem` bytes of
    /// dynamic shared memory (`cuLaunchKernel`).
    ///
    /// # Safety
    /// `params` must be NULL or match the kernel's parameters, each pointing to a live
    /// value of the parameter's type (the driver copies them during the call); `f` must
    /// be a function of a loaded module of the stream's context.
    #[inline]
    pub unsafe fn launch(
        self,
        f: CUfunction,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        smem: u32,
        params: *mut *mut c_void,
    ) -> Result<()> {
        // SAFETY: caller's guarantees.
        unsafe {
            cu!(cuLaunchKernel(
                f,
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                smem,
                self.0,
                params,
                std::ptr::null_mut()
            ))
        }
    }
}

/// A stream the plugin created (`cuStreamCreate`), destroyed (`cuStreamDestroy`) when
/// dropped or by [`OwnedStream::destroy`]. `Send + Sync` like [`Stream`].
#[repr(transparent)]
#[derive(Debug)]
pub struct OwnedStream(Stream);

impl OwnedStream {
    /// Creates a stream with `flags` (`CU_STREAM_*`) in the current context.
    #[inline]
    pub fn create(flags: u32) -> Result<OwnedStream> {
        let mut s: CUstream = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; a context is current (caller).
        unsafe { cu!(cuStreamCreate(&mut s, flags)) }?;
        Ok(OwnedStream(Stream(s)))
    }

    /// Creates a non-blocking stream (no ordering with the legacy default stream).
    #[inline]
    pub fn non_blocking() -> Result<OwnedStream> {
        OwnedStream::create(CU_STREAM_NON_BLOCKING as u32)
    }

    /// The borrowed handle (valid while `self` lives).
    #[inline]
    pub fn handle(&self) -> Stream {
        self.0
    }

    /// Destroys the stream, returning the driver's error if any.
    #[inline]
    pub fn destroy(self) -> Result<()> {
        let s = self.0;
        std::mem::forget(self);
        // SAFETY: the stream was created by `create` and is destroyed once.
        unsafe { cu!(cuStreamDestroy(s.0)) }
    }

    /// Gives up ownership without destroying the stream (a stream whose work failed is
    /// kept out of use rather than destroyed).
    #[inline]
    pub fn leak(self) {
        std::mem::forget(self);
    }

    /// Takes ownership of a stream the plugin created and handed out raw.
    ///
    /// # Safety
    /// `s` must come from [`OwnedStream::into_raw`] and have no other owner.
    #[inline]
    pub unsafe fn from_raw(s: CUstream) -> OwnedStream {
        OwnedStream(Stream(s))
    }

    /// Hands the raw stream out without destroying it (see [`OwnedStream::from_raw`]).
    #[inline]
    pub fn into_raw(self) -> CUstream {
        let s = self.0;
        std::mem::forget(self);
        s.0
    }
}

impl Drop for OwnedStream {
    fn drop(&mut self) {
        // SAFETY: the stream was created by `create` and is destroyed once.
        if let Err(e) = unsafe { cu!(cuStreamDestroy(self.0 .0)) } {
            log::debug!("stream {:p}: {e}", self.0 .0);
        }
    }
}
