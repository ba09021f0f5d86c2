//! Copy path: pageable copies within the bounce size (`bounce`) through a page-locked
//! bounce buffer (`host::bounce`). A synchronous or device-to-host copy takes a buffer
//! (waiting for one) and is waited for; a queue's host-to-device copy only one free
//! without waiting for earlier work (else it goes on to `direct`), queued.

use super::host_copy::{HostCopy, Via};
use super::path::{CopyPath, Ended, Failed, Knob, Taken};
pub(super) use crate::config::tune::BOUNCE as KNOB;
use crate::cuda::safe::Stream;
use crate::cuda::sys::CUdeviceptr;
use crate::device::parts::Parts;
use crate::host::bounce::Buffer;
use crate::observe::profile::CopyDir;
use gomp_plugin::error::Result;
use std::ffi::c_void;

/// The bounce path (zero-sized, stateless, `Sync`; the buffers are the copy buffers'
/// `bounce`).
pub struct Bounced;

impl CopyPath for Bounced {
    fn label(&self) -> &'static str {
        "bounce"
    }

    fn knob(&self) -> Option<Knob> {
        Some(Knob::Own(&KNOB))
    }

    unsafe fn try_copy(&self, d: &Parts, c: &HostCopy) -> Option<Taken> {
        let bounce = &d.buffers.bounce();
        if !bounce.takes(c.n) || !c.pageable(d) {
            return None;
        }
        c.taken(self.label());
        let (dev, n) = (c.dev, c.n);
        match (c.dir, c.via) {
            (CopyDir::H2D, Via::Sync) => {
                let b = match bounce.take() {
                    Ok(b) => b,
                    Err(e) => return Some(Err(e.into())),
                };
                // SAFETY: `c.host` readable for `n` bytes (caller); the stream is waited
                // for.
                let r = d.launch.on_copy_stream(&d.settings, |s| unsafe {
                    host2dev(d, s, b, dev, c.host, n)
                });
                Some(r.map(|()| Ended::Done).map_err(Failed::copy))
            }
            (CopyDir::H2D, Via::Queue(s)) => {
                // A bounce buffer only if one is free without waiting for earlier work.
                let b = match bounce.try_take()? {
                    Ok(b) => b,
                    Err(e) => return Some(Err(e.into())),
                };
                // SAFETY: `c.host` readable for `n` bytes (caller); `dev` checked.
                let r = unsafe { host2dev(d, s, b, dev, c.host, n) };
                Some(r.map(|()| Ended::Queued).map_err(Failed::from))
            }
            _ => {
                let s = match c.stream(d) {
                    Ok(s) => s,
                    Err(e) => return Some(Err(e.into())),
                };
                let b = match bounce.take() {
                    Ok(b) => b,
                    Err(e) => return Some(Err(e.into())),
                };
                let r = d.launch.on(s, |s| {
                    // SAFETY: the buffer is page-locked, holds at least `n` bytes, no copy
                    // reads it (`take`), and it is alive until the copy, waited for here, has
                    // completed.
                    unsafe { s.copy_dtoh(b.ptr().cast(), dev, n) }
                });
                if r.is_ok() {
                    // SAFETY: `c.host` is writable for `n` bytes (caller); distinct
                    // buffers.
                    unsafe { std::ptr::copy_nonoverlapping(b.ptr(), c.host.cast::<u8>(), n) };
                }
                bounce.give(b);
                Some(r.map(|()| Ended::Done).map_err(Failed::copy))
            }
        }
    }
}

/// Queues on `s` a copy of `n` bytes from `src` through bounce buffer `b` (taken by
/// the caller, given back here): the bytes are copied into the buffer first, so
/// `src` is free when this returns; the buffer is handed out again only after the
/// event recorded after the copy (`Bounce`).
///
/// # Safety
/// `src` readable for `n` bytes (`n` within the bounce size); `dst` checked by
/// `check_host_copy`; `s` a stream of the device.
pub(super) unsafe fn host2dev(
    d: &Parts,
    s: Stream,
    b: Buffer,
    dst: CUdeviceptr,
    src: *const c_void,
    n: usize,
) -> Result<()> {
    // SAFETY: `src` is readable for `n` bytes (caller), the buffer holds at least
    // `n` (caller: `fits`) and no copy reads it (`take`); they do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>(), b.ptr(), n) };
    // SAFETY: the buffer stays allocated and unwritten until the event recorded
    // after the copy has completed (`Bounce`).
    let r = unsafe { s.copy_htod(dst, b.ptr().cast(), n) }.and_then(|()| b.read_by(s));
    d.buffers.bounce().give(b);
    r
}
