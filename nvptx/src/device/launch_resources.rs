//! The device core's launch-resources part: the pools of idle streams and events
//! (from [`crate::cuda::pools`]), each host thread's stream with what the thread keeps
//! beside it (its lane's data, `T`: the copy paths' per-thread buffers, named by the
//! core, `device::copy::buffers::ThreadBuffers`; this part does not name them, as
//! the copy paths above it use it), which launches, copies and OpenACC queues borrow, and the order between those streams ([`CopyOrder`]: the deferred copies in
//! flight, which work on any other stream waits for). Its methods run work on a stream
//! after the deferred copies and wait for it.
//!
//! Owned by the device core (`device::Core`); `Sync` (each pool locks inside, a
//! thread's lane is its own, the order locks inside).

use crate::config::tune::ThreadStream;
use crate::cuda::pools::events::EventPool;
use crate::cuda::pools::streams::StreamPool;
use crate::cuda::pools::thread_streams::{LaneData, ThreadStreams};
use crate::cuda::safe::Stream;
use crate::cuda::sys::{CU_STREAM_DEFAULT, CU_STREAM_NON_BLOCKING};
use crate::device::copy_order::{CopyOrder, Waited};
use crate::device::settings::Settings;
use crate::observe::nvtx;
use gomp_plugin::error::Result;

/// Streams and events of one device, and the order of deferred copies between the
/// streams; `T` is what each host thread keeps beside its stream (its lane's data).
/// Owned by the core; `Sync`.
pub struct LaunchResources<T> {
    /// Idle streams (copies by kernel during reverse offload).
    streams: StreamPool,
    /// Each host thread's stream (its synchronous copies and launches) and its data
    /// (the ring for small copies and the read-ahead of regions' results).
    thread_streams: ThreadStreams<T>,
    /// Idle events (completion of `nowait` launches, OpenACC queue callbacks and
    /// serialisation).
    events: EventPool,
    /// Streams with deferred host-to-device copies in flight, and the rule that orders
    /// everything else after them.
    order: CopyOrder,
}

impl<T: LaneData> LaunchResources<T> {
    /// Empty pools; the threads' streams made as `tstream` says.
    pub(super) fn new(tstream: ThreadStream) -> LaunchResources<T> {
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
            order: CopyOrder::default(),
        }
    }

    /// Idle events (completion of `nowait` launches, OpenACC queue callbacks and
    /// serialisation).
    #[inline]
    pub fn events(&self) -> &EventPool {
        &self.events
    }

    /// Idle streams (copies by kernel during reverse offload).
    #[inline]
    pub fn streams(&self) -> &StreamPool {
        &self.streams
    }

    /// Each host thread's stream and what the thread keeps beside it.
    #[inline]
    pub fn thread_streams(&self) -> &ThreadStreams<T> {
        &self.thread_streams
    }

    /// Streams with deferred host-to-device copies in flight, and the rule that orders
    /// everything else after them.
    #[inline]
    pub fn copy_order(&self) -> &CopyOrder {
        &self.order
    }

    /// Runs `f` on the calling thread's stream, ordered after deferred copies on other
    /// streams, then waits for the stream (see [`LaunchResources::on`]).
    #[inline]
    pub fn on_stream<R>(&self, f: impl FnOnce(Stream) -> Result<R>) -> Result<R> {
        self.on(self.thread_streams.stream()?, f)
    }

    /// Runs `f` on `s` (a stream of the device), after making `s` wait for the deferred
    /// copies of other streams, then waits for `s`; the error of `f` comes first, then
    /// the synchronisation's. Whatever `s` waited for is then known complete.
    #[inline]
    pub fn on<R>(&self, s: Stream, f: impl FnOnce(Stream) -> Result<R>) -> Result<R> {
        // A stream of the device's context (caller).
        self.on_with(s, f, |s| s.synchronize())
    }

    /// [`LaunchResources::on`] with the stream waited for by `wait` (which returns once
    /// the stream's work has run, or with its error): also the calling thread's ring's
    /// waits (`device::copy::ring`'s `on_waited`).
    pub fn on_with<R>(
        &self,
        s: Stream,
        f: impl FnOnce(Stream) -> Result<R>,
        wait: impl FnOnce(Stream) -> Result<()>,
    ) -> Result<R> {
        let w = self.order(s)?;
        let out = f(s);
        let synced = wait(s);
        self.order.synced(&w, &self.events);
        let v = out?;
        synced?;
        Ok(v)
    }

    /// Makes future work on `s` (a stream of the device) wait for every deferred copy
    /// queued on another stream (rule 2 of `copy_order`); returns what it waits for.
    #[inline]
    pub fn order(&self, s: Stream) -> Result<Waited> {
        if self.order.is_clear() {
            return Ok(Waited::default());
        }
        self.order.order(s, self.after_legacy(s), &self.events)
    }

    /// Waits on the host for every deferred copy (rule 3 of `copy_order`).
    #[inline]
    pub fn settle(&self) -> Result<()> {
        self.order.settle(&self.events)
    }

    /// Whether CUDA itself orders work on `s` after CUDA's legacy default stream: the
    /// legacy stream itself and blocking thread streams. (OpenACC queue streams are
    /// blocking too; `AccQueue` says so itself.)
    #[inline]
    fn after_legacy(&self, s: Stream) -> bool {
        let ts = &self.thread_streams;
        s == Stream::LEGACY || (ts.blocking() && ts.is_mine(s))
    }

    /// The stream a synchronous copy of the calling thread goes on
    /// ([`Settings::copy_stream_or`] with the thread's own stream).
    #[inline]
    pub fn copy_stream(&self, settings: &Settings) -> Result<Stream> {
        settings.copy_stream_or(|| self.thread_streams.stream())
    }

    /// The stream a deferred host-to-device copy of the calling thread goes on
    /// ([`Settings::deferred_stream_or`] with the thread's own stream).
    #[inline]
    pub fn deferred_stream(&self, settings: &Settings) -> Result<Stream> {
        settings.deferred_stream_or(|| self.thread_streams.stream())
    }

    /// Runs a synchronous copy `f` on the calling thread's copy stream
    /// ([`LaunchResources::copy_stream`]) and waits for it.
    pub fn on_copy_stream(
        &self,
        settings: &Settings,
        f: impl FnOnce(Stream) -> Result<()>,
    ) -> Result<()> {
        self.on(self.copy_stream(settings)?, f)
    }

    /// Destroys the idle streams and every thread's stream (device close).
    pub(super) fn destroy(&self) {
        self.streams.destroy_all();
        self.thread_streams.destroy();
    }
}
