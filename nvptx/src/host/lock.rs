//! Page-locking user host memory (`gomp_nvptx_host_lock` / `gomp_nvptx_host_unlock`, the
//! plugin's own C API): `cuMemHostRegister` with `PORTABLE`, so copies from and to the
//! range take direct DMA on every device, bookkept in the host-range registry (nested
//! locks share a range, partial overlaps are refused, the last unlock unregisters).
//!
//! The registration is made in the device's primary context, retained for as long as
//! the range stays locked: it does not depend on libgomp having initialized the device
//! (the program may lock memory before its first target region) and survives the
//! device's finalization. The calling thread's current context is left as it was.

use crate::cuda::safe::{query, HostRegistration, PrimaryContext};
use crate::cuda::sys::*;
use crate::cuda::table;
use crate::host::ranges::{self as host_ranges, Origin};
use gomp_plugin::error::{Error, Result};

/// The CUDA device of ordinal `ord`, loading and initialising the driver if needed.
fn cu_device(ord: i32) -> Result<CUdevice> {
    table::load().map_err(|e| Error::invalid(format!("no CUDA driver: {e}")))?;
    // Idempotent.
    query::init()?;
    let n = query::device_count()?;
    if !(0..n).contains(&ord) {
        return Err(Error::invalid(format!(
            "no nvptx device {ord} (the driver reports {n})"
        )));
    }
    query::device(ord)
}

/// Registers `[start, start+bytes)` in `dev`'s primary context, keeping one reference
/// to the context while registered (given back by [`unregister`]).
fn register(dev: CUdevice, start: usize, bytes: usize) -> Result<()> {
    let ctx = PrimaryContext::retain(dev)?;
    ctx.with_current(|| {
        // SAFETY: the caller's range (page-rounded; whole pages are what the driver
        // locks), which the program keeps mapped until it unlocks it.
        unsafe { HostRegistration::register(start, bytes, CU_MEMHOSTREGISTER_PORTABLE as u32) }
            .map(|r| {
                // Owned from here on by the range registry, as the address.
                r.into_raw();
            })
            .map_err(|e| {
                if e.has_code(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
                    Error::invalid(format!(
                        "host range {start:#x}..{:#x} is already page-locked outside the plugin \
                         (cudaHostRegister, cudaMallocHost, ...): {e}",
                        start + bytes
                    ))
                } else {
                    e
                }
            })
    })?;
    // Registered: the reference stays held until `unregister`. (On an error `ctx` was
    // dropped above, releasing it.)
    ctx.keep();
    Ok(())
}

/// Unregisters a range [`register`] registered, and drops its context reference.
fn unregister(ord: i32, start: usize) -> Result<()> {
    let dev = cu_device(ord)?;
    let ctx = PrimaryContext::retain(dev)?;
    let r = ctx.with_current(|| {
        // SAFETY: `start` was registered by `register` (handed to the registry with
        // `into_raw`), in this context.
        unsafe { HostRegistration::from_raw(start) }.unregister()
    });
    let kept = (ctx.device(), ctx.handle());
    drop(ctx);
    // SAFETY: `register` kept one reference for this range.
    drop(unsafe { PrimaryContext::from_kept(kept.0, kept.1) });
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
