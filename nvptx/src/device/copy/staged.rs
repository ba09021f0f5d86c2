//! Copy path: large pageable copies through the staging engine (`host::staging`),
//! complete when they return ([`Core::stage`] says which), after what they wait for
//! first on the host: a queue's work queued so far (the engine's streams are not
//! ordered after it, and the queue's later work comes after the copy) and every
//! deferred copy (rule 3 of `copy_order`). Not taken when the engine is busy. Sized by
//! `GOMP_NVPTX_STAGING` (a variable of its own, no `GOMP_NVPTX_TUNE` key).

use super::{CopyPath, Ended, Failed, HostCopy, Staged, Taken, Takes, Via};
use crate::config::Config;
use crate::device::Core;
use crate::host::staging::MIN_STAGED;
use crate::observe::profile::CopyDir;
use gomp_plugin::error::Result;

impl CopyPath for Staged {
    fn label(&self) -> &'static str {
        "staged"
    }

    fn takes(&self, _config: &Config) -> Takes {
        Takes::ANY.sized(MIN_STAGED, usize::MAX)
    }

    unsafe fn try_copy(&self, core: &Core, c: &HostCopy) -> Option<Taken> {
        if !core.stage(c.host, c.n, c.via) {
            return None;
        }
        c.taken(self);
        if let Err(e) = before_staging(core, c.via) {
            return Some(Err(e.into()));
        }
        let staging = &core.copies.staging;
        // SAFETY: `c.host` as the caller guarantees; `c.dev` checked.
        let r = unsafe {
            match c.dir {
                CopyDir::H2D => staging.host2dev(core.context(), c.dev, c.host, c.n),
                _ => staging.dev2host(core.context(), c.host, c.dev, c.n),
            }
        };
        r.map(|r| r.map(|()| Ended::Done).map_err(Failed::from))
    }
}

/// What a staged copy waits for.
fn before_staging(core: &Core, via: Via) -> Result<()> {
    if let Via::Queue(s) = via {
        // An event recorded on the queue's stream covers what CUDA orders that
        // stream after (work queued before on the legacy stream).
        let ev = core.events().acquire()?;
        // The event and stream belong to the device's context.
        let h = ev.handle();
        let r = h.record(s).and_then(|()| h.synchronize());
        core.events().release(ev);
        r?;
    }
    core.settle()
}
