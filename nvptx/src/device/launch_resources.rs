//! The device core's launch-resources part: the pools of idle streams and events
//! (from [`crate::cuda::pools`]), each host thread's stream with what the thread keeps
//! beside it ([`crate::host::ThreadHost`]), which launches, copies and OpenACC queues
//! borrow, and the order between those streams ([`CopyOrder`]: the deferred copies in
//! flight, which work on any other stream waits for). Its methods run work on a stream
//! after the deferred copies and wait for it.
//!
//! Owned by the device core (`device::Core`); `Sync` (each pool locks inside, a
//! thread's lane is its own, the order locks inside).

use crate::config::tune::ThreadStream;
use crate::cuda::pools::events::EventPool;
use crate::cuda::pools::streams::StreamPool;
use crate::cuda::pools::thread_streams::ThreadStreams;
use crate::cuda::safe::Stream;
use crate::cuda::sys::{CU_STREAM_DEFAULT, CU_STREAM_NON_BLOCKING};
use crate::device::copy_order::{CopyOrder, Waited};
use crate::device::settings::Settings;
use crate::host::ring::Ring;
use crate::host::ThreadHost;
use crate::observe::nvtx;
use gomp_plugin::error::Result;

/// Streams and events of one device, and the order of deferred copies between the
/// streams. Owned by the core; `Sync`.
pub struct LaunchResources {
    /// Idle streams (copies by kernel during reverse offload).
    streams: StreamPool,
    /// Each host thread's stream (its synchronous copies and launches), its ring for
    /// small copies and its read-ahead of regions' results.
    thread_streams: ThreadStreams<ThreadHost>,
    /// Idle events (completion of `nowait` launches, OpenACC queue callbacks and
    /// serialisation).
    events: EventPool,
    /// Streams with deferred host-to-device copies in flight, and the rule that orders
    /// everything else after them.
    order: CopyOrder,
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
    pub fn thread_streams(&self) -> &ThreadStreams<ThreadHost> {
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
    pub fn on_stream<T>(&self, f: impl FnOnce(Stream) -> Result<T>) -> Result<T> {
        self.on(self.thread_streams.stream()?, f)
    }

    /// Runs `f` on `s` (a stream of the device), after making `s` wait for the deferred
    /// copies of other streams, then waits for `s`; the error of `f` comes first, then
    /// the synchronisation's. Whatever `s` waited for is then known complete.
    #[inline]
    pub fn on<T>(&self, s: Stream, f: impl FnOnce(Stream) -> Result<T>) -> Result<T> {
        // A stream of the device's context (caller).
        self.on_with(s, f, |s| s.synchronize())
    }

    /// [`LaunchResources::on`] with `s` waited for by the calling thread's `ring`
    /// ([`Ring::wait`]: by its flag when `flag`, else synchronized; the device's
    /// settings choose, `Parts::on_waited`).
    ///
    /// # Safety
    /// `ring` must be the calling thread's lane's; `s` a stream of the device.
    #[inline]
    pub unsafe fn on_waited<T>(
        &self,
        s: Stream,
        ring: &Ring,
        flag: bool,
        f: impl FnOnce(Stream) -> Result<T>,
    ) -> Result<T> {
        // SAFETY: forwarded caller guarantee; the context is current (a stream of the
        // device is in use on this thread).
        self.on_with(s, f, |s| unsafe { ring.wait(s, flag) })
    }

    /// [`LaunchResources::on`] with `s` waited for by `wait` (which returns once the
    /// stream's work has run, or with its error), then noted as synchronised on the
    /// calling thread's `ring` ([`Ring::synced`]).
    ///
    /// # Safety
    /// `ring` must be the calling thread's lane's; `s` a stream of the device.
    pub unsafe fn on_waited_by<T>(
        &self,
        s: Stream,
        ring: &Ring,
        f: impl FnOnce(Stream) -> Result<T>,
        wait: impl FnOnce(Stream) -> Result<()>,
    ) -> Result<T> {
        self.on_with(s, f, |s| {
            wait(s)?;
            // SAFETY: the calling thread's ring (caller), after `s` has run its work.
            unsafe { ring.synced(s) };
            Ok(())
        })
    }

    /// [`LaunchResources::on`] with the stream waited for by `wait` (which returns once
    /// the stream's work has run, or with its error).
    fn on_with<T>(
        &self,
        s: Stream,
        f: impl FnOnce(Stream) -> Result<T>,
        wait: impl FnOnce(Stream) -> Result<()>,
    ) -> Result<T> {
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
