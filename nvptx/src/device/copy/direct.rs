//! Copy path: the driver's copy from or to the program's memory, the one every copy no
//! earlier path took makes. Synchronous copies and a queue's copies to the host are
//! waited for (to pageable memory the driver would wait too); a queue's copies to the
//! device are queued.

use super::host_copy::{HostCopy, Via};
use super::path::{CopyPath, Ended, Failed, Route, Taken};
use crate::cuda::pools::thread_streams::LaneData;
use crate::device::parts::Parts;
use crate::observe::profile::CopyDir;

/// The direct path (zero-sized, stateless, `Sync`).
pub struct Direct;

impl Route for Direct {
    fn label(&self) -> &'static str {
        "direct"
    }
}

impl<B, T: LaneData> CopyPath<B, T> for Direct {
    unsafe fn try_copy(&self, d: &Parts<B, T>, c: &HostCopy) -> Option<Taken> {
        let (dev, host, n) = (c.dev, c.host, c.n);
        c.taken(self.label());
        Some(match (c.dir, c.via) {
            (CopyDir::H2D, Via::Sync) => d
                .launch
                .on_copy_stream(&d.settings, |s| {
                    // SAFETY: readable source (caller); the stream is waited for before
                    // returning.
                    unsafe { s.copy_htod(dev, host, n) }
                })
                .map(|()| Ended::Done)
                .map_err(Failed::copy),
            // SAFETY: the source stays readable until the queue's work has run (caller);
            // the driver checks `dev` again.
            (CopyDir::H2D, Via::Queue(s)) => unsafe { s.copy_htod(dev, host, n) }
                .map(|()| Ended::Queued)
                .map_err(|e| e.into()),
            _ => match c.stream(d) {
                Err(e) => Err(e.into()),
                Ok(s) => d
                    .launch
                    .on(s, |s| {
                        // SAFETY: writable destination (caller); waited for before returning.
                        unsafe { s.copy_dtoh(host, dev, n) }
                    })
                    .map(|()| Ended::Done)
                    .map_err(Failed::copy),
            },
        })
    }
}
