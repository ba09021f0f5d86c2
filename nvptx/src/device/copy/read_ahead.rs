//! Copy path: a synchronous device-to-host copy served from what the calling thread's
//! latest run read ahead (`host::read_ahead`, which learns the copy otherwise). Not
//! once OpenACC is in use (synchronous copies are then ordered after the OpenACC
//! queues' work). Sized by `readahead`.

use super::{CopyPath, Ended, HostCopy, Knob, ReadAhead, Taken, Takes};
use crate::config::Config;
use crate::device::Core;
use crate::observe::profile::CopyDir;

impl CopyPath for ReadAhead {
    fn label(&self) -> &'static str {
        "read_ahead"
    }

    fn knob(&self) -> Option<Knob> {
        Some(Knob::Shared("readahead"))
    }

    fn takes(&self, _config: &Config) -> Takes {
        Takes::of(CopyDir::D2H, false)
    }

    unsafe fn try_copy(&self, core: &Core, c: &HostCopy) -> Option<Taken> {
        if core.openacc_in_use() {
            return None;
        }
        let lane = core.launch.thread_streams.get().ok()?;
        // SAFETY: this thread's lane (`get`); `c.host` writable for `c.n` bytes and this
        // the first step of the copy (caller).
        let served = unsafe {
            lane.data
                .read_ahead
                .serve(c.host.cast(), c.dev, c.n, core.config().tune.readahead)
        };
        served.then(|| {
            // Served from what the run read ahead: the range marks it, near-instant.
            c.taken(self);
            Ok(Ended::Done)
        })
    }
}
