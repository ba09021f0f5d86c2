//! Contexts: the device's primary context ([`PrimaryContext`], retained while owned) and
//! the calling thread's current context.
//!
//! Thread-safety: the current context is per host thread; a context handle itself may
//! be made current on any thread.

use crate::cu;
use crate::cuda::sys::{CUcontext, CUdevice, CUlimit};
use gomp_plugin::error::Result;

/// One reference to a device's primary context (`cuDevicePrimaryCtxRetain`), released
/// (`cuDevicePrimaryCtxRelease`) when dropped or by [`PrimaryContext::release`].
/// `Send + Sync`: the handle may be made current on any thread, and the release may
/// happen on any thread.
#[derive(Debug)]
pub struct PrimaryContext {
    dev: CUdevice,
    ctx: CUcontext,
}

// SAFETY: context handles may be used from any host thread (see the type's doc).
unsafe impl Send for PrimaryContext {}
// SAFETY: as above; `&self` methods only read the handle.
unsafe impl Sync for PrimaryContext {}

impl PrimaryContext {
    /// Retains `dev`'s primary context (creating it if needed).
    #[inline]
    pub fn retain(dev: CUdevice) -> Result<PrimaryContext> {
        let mut ctx: CUcontext = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; balanced by `Drop` or `release`.
        unsafe { cu!(cuDevicePrimaryCtxRetain(&mut ctx, dev)) }?;
        Ok(PrimaryContext { dev, ctx })
    }

    /// The context handle (alive while `self` is).
    #[inline]
    pub fn handle(&self) -> CUcontext {
        self.ctx
    }

    /// The device whose primary context this is.
    #[inline]
    pub fn device(&self) -> CUdevice {
        self.dev
    }

    /// Releases the reference, returning the driver's error if any.
    #[inline]
    pub fn release(self) -> Result<()> {
        let dev = self.dev;
        std::mem::forget(self);
        // SAFETY: balances the retain of the value just consumed.
        unsafe { cu!(cuDevicePrimaryCtxRelease(dev)) }
    }

    /// Keeps the reference without an owner (a reference held for as long as some
    /// other resource, like a host registration, lives); see [`PrimaryContext::from_kept`].
    #[inline]
    pub fn keep(self) {
        std::mem::forget(self);
    }

    /// Takes back a reference given up by [`PrimaryContext::keep`].
    ///
    /// # Safety
    /// One reference to `dev`'s primary context (`ctx`) must have been kept and not be
    /// taken back yet.
    #[inline]
    pub unsafe fn from_kept(dev: CUdevice, ctx: CUcontext) -> PrimaryContext {
        PrimaryContext { dev, ctx }
    }

    /// Runs `f` with this context current on the calling thread, then makes the
    /// previous context (possibly none) current again.
    pub fn with_current<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let prev = current()?;
        if prev != self.ctx {
            // SAFETY: the context is retained by `self`.
            unsafe { set_current(self.ctx) }?;
        }
        let r = f();
        if prev != self.ctx {
            // SAFETY: restoring what was current before (a context the thread had
            // current, or none).
            let _ = unsafe { set_current(prev) };
        }
        r
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // SAFETY: balances the retain made when `self` was created.
        if let Err(e) = unsafe { cu!(cuDevicePrimaryCtxRelease(self.dev)) } {
            log::debug!("primary context of CUDA device {}: {e}", self.dev);
        }
    }
}

/// The calling thread's current context (NULL when none).
#[inline]
pub fn current() -> Result<CUcontext> {
    let mut cur: CUcontext = std::ptr::null_mut();
    // SAFETY: out-pointer to a local.
    unsafe { cu!(cuCtxGetCurrent(&mut cur)) }?;
    Ok(cur)
}

/// Makes `ctx` (or none, for NULL) current on the calling thread.
///
/// # Safety
/// `ctx` must be NULL or a context that is alive (retained or created, not destroyed).
#[inline]
pub unsafe fn set_current(ctx: CUcontext) -> Result<()> {
    // SAFETY: caller's guarantee.
    unsafe { cu!(cuCtxSetCurrent(ctx)) }
}

/// The device of the calling thread's current context (an error when none is current
/// or it is stale).
#[inline]
pub fn current_device() -> Result<CUdevice> {
    let mut dev: CUdevice = -1;
    // SAFETY: out-pointer to a local.
    unsafe { cu!(cuCtxGetDevice(&mut dev)) }?;
    Ok(dev)
}

/// Sets a limit of the current context (`cuCtxSetLimit`).
#[inline]
pub fn set_limit(limit: CUlimit, value: usize) -> Result<()> {
    // SAFETY: plain limit setting in the current context.
    unsafe { cu!(cuCtxSetLimit(limit, value)) }
}
