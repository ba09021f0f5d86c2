//! Copy path: an OpenACC queue's device-to-host copy to page-locked memory, queued on
//! the queue's stream as it is (the program waits for the queue before it reads the
//! bytes). A queue's copy to pageable memory goes on to the later paths, waited for.

use super::host_copy::{HostCopy, Via};
use super::path::{CopyPath, Ended, Route, Taken, Takes};
use crate::config::Config;
use crate::cuda::pools::thread_streams::LaneData;
use crate::device::parts::Parts;
use crate::observe::profile::CopyDir;

/// The queued path (zero-sized, stateless, `Sync`).
pub struct Queued;

impl Route for Queued {
    fn label(&self) -> &'static str {
        "queued"
    }

    fn takes(&self, _config: &Config) -> Takes {
        Takes::of(CopyDir::D2H, true)
    }
}

impl<B, T: LaneData> CopyPath<B, T> for Queued {
    unsafe fn try_copy(&self, d: &Parts<B, T>, c: &HostCopy) -> Option<Taken> {
        let Via::Queue(s) = c.via else { return None };
        if c.pageable(d) {
            return None;
        }
        c.taken(self.label());
        // SAFETY: the destination stays writable until the queue's work has run
        // (caller); the driver checks `c.dev` again.
        let r = unsafe { s.copy_dtoh(c.host, c.dev, c.n) };
        Some(r.map(|()| Ended::Queued).map_err(|e| e.into()))
    }
}
