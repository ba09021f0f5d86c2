//! Page-locking user host memory (`gomp_nvptx_host_lock` / `gomp_nvptx_host_unlock`, the
//! plugin's own C API): `cuMemHostRegister` with `PORTABLE`, so copies from and to the
//! range take direct DMA on every device, bookkept in the host-range registry (nested
//! locks share a range, partial overlaps are refused, the last unlock unregisters).
//!
//! The registration is made in the device's primary context, retained for as long as
//! the range stays locked: it does not depend on libgomp having initialized the device
//! (the program may lock memory before its first target region) and survives the
//! device's finalization. The calling thread's current context is left as it was.

use crate::cu;
use crate::cuda::driver;
use crate::cuda::sys::*;
use crate::host::ranges::{self as host_ranges, Origin};
use gomp_plugin::error::{Error, Result};
use std::ffi::c_void;

/// The CUDA device of ordinal `ord`, loading and initialising the driver if needed.
fn cu_device(ord: i32) -> Result<CUdevice> {
    driver::load().map_err(|e| Error::invalid(format!("no CUDA driver: {e}")))?;
    // SAFETY: plain initialisation call (idempotent).
    unsafe { cu!(cuInit(0)) }?;
    let mut n = 0;
    // SAFETY: out-pointer to a local.
    unsafe { cu!(cuDeviceGetCount(&mut n)) }?;
    if !(0..n).contains(&ord) {
        return Err(Error::invalid(format!(
            "no nvptx device {ord} (the driver reports {n})"
        )));
    }
    let mut dev = 0;
    // SAFETY: out-pointer to a local.
    unsafe { cu!(cuDeviceGet(&mut dev, ord)) }?;
    Ok(dev)
}

/// Runs `f` with `ctx` current on this thread, then makes the previous context current
/// again.
fn in_context<T>(ctx: CUcontext, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let mut prev: CUcontext = std::ptr::null_mut();
    // SAFETY: out-pointer to a local.
    unsafe { cu!(cuCtxGetCurrent(&mut prev)) }?;
    if prev != ctx {
        // SAFETY: `ctx` is a retained primary context.
        unsafe { cu!(cuCtxSetCurrent(ctx)) }?;
    }
    let r = f();
    if prev != ctx {
        // SAFETY: restoring what was current (possibly none).
        let _ = unsafe { cu!(cuCtxSetCurrent(prev)) };
    }
    r
}

/// Retains `dev`'s primary context (one reference, released by the caller).
fn retain(dev: CUdevice) -> Result<CUcontext> {
    let mut ctx: CUcontext = std::ptr::null_mut();
    // SAFETY: out-pointer to a local; balanced by `release`.
    unsafe { cu!(cuDevicePrimaryCtxRetain(&mut ctx, dev)) }?;
    Ok(ctx)
}

fn release(dev: CUdevice) {
    // SAFETY: balances one `retain`.
    let _ = unsafe { cu!(cuDevicePrimaryCtxRelease(dev)) };
}

/// Registers `[start, start+bytes)` in `dev`'s primary context, keeping one reference
/// to the context while registered.
fn register(dev: CUdevice, start: usize, bytes: usize) -> Result<()> {
    let ctx = retain(dev)?;
    let r = in_context(ctx, || {
        // SAFETY: the caller's range (page-rounded; whole pages are what the driver
        // locks); the driver validates it and fails rather than faulting.
        unsafe {
            cu!(cuMemHostRegister(
                start as *mut c_void,
                bytes,
                CU_MEMHOSTREGISTER_PORTABLE as u32
            ))
        }
        .map_err(|e| match e.code {
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => Error::invalid(format!(
                "host range {start:#x}..{:#x} is already page-locked outside the plugin \
                 (cudaHostRegister, cudaMallocHost, ...): {e}",
                start + bytes
            )),
            _ => e.into(),
        })
    });
    if r.is_err() {
        release(dev);
    }
    r
}

/// Unregisters a range [`register`] registered, and drops its context reference.
fn unregister(ord: i32, start: usize) -> Result<()> {
    let dev = cu_device(ord)?;
    let ctx = retain(dev)?;
    let r = in_context(ctx, || {
        // SAFETY: `start` was registered by `register` in this context.
        unsafe { cu!(cuMemHostUnregister(start as *mut c_void)) }.map_err(Error::from)
    });
    release(dev);
    release(dev);
    r
}

/// `gomp_nvptx_host_lock(p, size, ord)`: page-locks `[p, p+size)`, or shares the locked
/// range it lies in. Thread-safe.
pub fn lock(p: usize, size: usize, ord: i32) -> Result<()> {
    let what = |e: Error| Error::invalid(format!("gomp_nvptx_host_lock: {e}"));
    if p == 0 || size == 0 {
        return Err(what(Error::invalid(format!(
            "nothing to lock ({p:#x}, {size} bytes)"
        ))));
    }
    let dev = cu_device(ord).map_err(what)?;
    let locked = host_ranges::global()
        .lock(p, size, Origin::User(ord), |s, n| register(dev, s, n))
        .map_err(what)?;
    log::debug!("host range {p:#x} + {size} locked for device {ord}: {locked:?}");
    Ok(())
}

/// `gomp_nvptx_host_unlock(p, ord)`: releases one lock made at `p`; the range is
/// unregistered with its last lock. `ord` must name a device. Thread-safe.
pub fn unlock(p: usize, ord: i32) -> Result<()> {
    let what = |e: Error| Error::invalid(format!("gomp_nvptx_host_unlock: {e}"));
    cu_device(ord).map_err(what)?;
    host_ranges::global()
        .unlock(p, |s, _, origin| match origin {
            Origin::User(o) => unregister(o, s),
            Origin::Pool(_) => Ok(()),
        })
        .map_err(what)
}
