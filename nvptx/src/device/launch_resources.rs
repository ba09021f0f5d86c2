//! The device core's launch-resources part: the pools of idle streams and events
//! (from [`crate::cuda::pools`]) and each host thread's stream with what the thread
//! keeps beside it ([`crate::host::ThreadHost`]), which launches, copies and OpenACC
//! queues borrow.
//!
//! Owned by [`super::Core`]; `Sync` (each pool locks inside, a thread's lane is its
//! own).

use crate::config::tune::ThreadStream;
use crate::cuda::pools::events::EventPool;
use crate::cuda::pools::streams::StreamPool;
use crate::cuda::pools::thread_streams::ThreadStreams;
use crate::cuda::sys::{CU_STREAM_DEFAULT, CU_STREAM_NON_BLOCKING};
use crate::host::ThreadHost;
use crate::observe::nvtx;

/// Streams and events of one device. Owned by the core; `Sync`.
pub struct LaunchResources {
    /// Idle streams (copies by kernel during reverse offload).
    pub(super) streams: StreamPool,
    /// Each host thread's stream (its synchronous copies and launches), its ring for
    /// small copies and its read-ahead of regions' results.
    pub(super) thread_streams: ThreadStreams<ThreadHost>,
    /// Idle events (completion of `nowait` launches, OpenACC queue callbacks and
    /// serialisation).
    pub(super) events: EventPool,
}

impl LaunchResources {
    /// Empty pools; the threads' streams made as `tstream` says.
    pub(super) fn new(tstream: ThreadStream) -> LaunchResources {
        LaunchResources {
            streams: StreamPool::default(),
            thread_streams: ThreadStreams::new(match tstream {
                ThreadStream::Blocking => CU_STREAM_DEFAULT as u32,
                ThreadStream::NonBlocking | ThreadStream::Legacy => CU_STREAM_NON_BLOCKING as u32,
            })
            .on_new_lane(|s, n| {
                nvtx::name_stream(s.raw().cast(), || format!("thread lane {n}").into())
            }),
            events: EventPool::default(),
        }
    }

    /// Destroys the idle streams and every thread's stream (device close).
    pub(super) fn destroy(&self) {
        self.streams.destroy_all();
        self.thread_streams.destroy();
    }
}
