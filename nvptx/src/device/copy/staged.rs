//! Copy path: large pageable copies through the staging engine (`host::staging`),
//! complete when they return ([`Parts::stage`] says which), after what they wait for
//! first on the host: a queue's work queued so far (the engine's streams are not
//! ordered after it, and the queue's later work comes after the copy) and every
//! deferred copy (rule 3 of `copy_order`). Not taken when the engine is busy. Sized by
//! `GOMP_NVPTX_STAGING` (a variable of its own, no `GOMP_NVPTX_TUNE` key).

use super::host_copy::{HostCopy, Via};
use super::path::{CopyPath, Ended, Failed, Taken, Takes};
use crate::config::Config;
use crate::device::parts::Parts;
use crate::host::staging::MIN_STAGED;
use crate::observe::profile::CopyDir;
use gomp_plugin::error::Result;

/// The staging path (zero-sized, stateless, `Sync`; the engine is the copy buffers'
/// `staging`).
pub struct Staged;

impl CopyPath for Staged {
    fn label(&self) -> &'static str {
        "staged"
    }

    fn takes(&self, _config: &Config) -> Takes {
        Takes::ANY.sized(MIN_STAGED, usize::MAX)
    }

    unsafe fn try_copy(&self, d: &Parts, c: &HostCopy) -> Option<Taken> {
        if !d.stage(c.host, c.n, c.via == Via::Sync) {
            return None;
        }
        c.taken(self.label());
        if let Err(e) = before_staging(d, c.via) {
            return Some(Err(e.into()));
        }
        let staging = &d.buffers.staging();
        // SAFETY: `c.host` as the caller guarantees; `c.dev` checked.
        let r = unsafe {
            match c.dir {
                CopyDir::H2D => staging.host2dev(d.context.ctx(), c.dev, c.host, c.n),
                _ => staging.dev2host(d.context.ctx(), c.host, c.dev, c.n),
            }
        };
        r.map(|r| r.map(|()| Ended::Done).map_err(Failed::from))
    }
}

/// What a staged copy waits for.
fn before_staging(d: &Parts, via: Via) -> Result<()> {
    if let Via::Queue(s) = via {
        // An event recorded on the queue's stream covers what CUDA orders that
        // stream after (work queued before on the legacy stream).
        let ev = d.launch.events().acquire()?;
        // The event and stream belong to the device's context.
        let h = ev.handle();
        let r = h.record(s).and_then(|()| h.synchronize());
        d.launch.events().release(ev);
        r?;
    }
    d.launch.settle()
}
