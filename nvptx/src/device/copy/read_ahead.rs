//! Copy path: a synchronous device-to-host copy served from what the calling thread's
//! latest run read ahead (`host::read_ahead`, which learns the copy otherwise). Not
//! once OpenACC is in use (synchronous copies are then ordered after the OpenACC
//! queues' work). Sized by `readahead`.

use super::host_copy::HostCopy;
use super::path::{CopyPath, Ended, Knob, Taken, Takes};
use crate::config::Config;
use crate::device::parts::Parts;
use crate::observe::profile::CopyDir;

/// The read-ahead path (zero-sized, stateless, `Sync`; the read-ahead is the calling
/// thread's lane's).
pub struct ReadAhead;

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

    unsafe fn try_copy(&self, d: &Parts, c: &HostCopy) -> Option<Taken> {
        if d.settings.openacc_in_use() {
            return None;
        }
        let lane = d.launch.thread_streams().get().ok()?;
        // SAFETY: this thread's lane (`get`); `c.host` writable for `c.n` bytes and this
        // the first step of the copy (caller).
        let served = unsafe {
            lane.data.read_ahead.serve(
                c.host.cast(),
                c.dev,
                c.n,
                d.settings.config().tune.readahead,
            )
        };
        served.then(|| {
            // Served from what the run read ahead: the range marks it, near-instant.
            c.taken(self.label());
            Ok(Ended::Done)
        })
    }
}
