//! Asynchronous OpenMP launches (`target nowait` → `GOMP_OFFLOAD_async_run`).
//!
//! A launch is enqueued on one of a few per-device async streams, followed by an event
//! from the device's pool; the device's completion thread waits in the driver for the
//! oldest outstanding event and, for each launch that completed, gives back the
//! kernel's stack block and event and tells libgomp
//! (`GOMP_PLUGIN_target_task_completion`). No host callback per launch, no CUDA call in
//! a CUDA callback. Soft-stack bytes in flight are bounded, so a `nowait` storm waits
//! for earlier kernels instead of exhausting device memory.
//!
//! The completion thread holds the device core (`Arc<Core>`), the queue's stack
//! budget and the reverse-offload [`Service`] state (it counts kernels out), nothing
//! else.

use crate::cuda::safe::{OwnedEvent, OwnedStream, Stream};
use crate::cuda::sys::*;
use crate::device::Core;
use crate::device_pool::stacks::StackBlock;
use crate::launch::failure::kernel_error;
use crate::launch::reverse::{Reverse, Service};
use crate::observe::nvtx::{self, AsyncRange};
use crate::observe::Timer;
use gomp_plugin::error::Result;
use gomp_plugin::libgomp::report;
use gomp_plugin::sync::{Lock, Wait};
use gomp_plugin::DeviceCore;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Async streams per device: enough for concurrency, few enough to stay cheap.
const ASYNC_STREAMS: usize = 8;
/// Soft-stack bytes that async launches may hold at once (one launch may exceed it).
const STACK_BUDGET: usize = 2 << 30;

/// A launched kernel whose completion is awaited.
pub struct Pending {
    event: OwnedEvent,
    stacks: StackBlock,
    /// libgomp's task handle, as an address (the pointer is only passed back).
    async_data: usize,
    /// The launch's timing events when profiling or tracing.
    timer: Option<Timer>,
    /// Its NVTX span until completion, when a tool is attached.
    span: AsyncRange,
}

/// Soft-stack bytes of the device's async launches in flight: reserved by launching
/// threads, given back by the completion thread. Shared (`Arc`) by the queue and its
/// completion thread.
#[derive(Default)]
struct StackBudget {
    /// Bytes in flight, and launching threads waiting for some to be given back.
    in_flight: Mutex<(usize, usize)>,
    freed: Condvar,
}

impl StackBudget {
    fn reserve(&self, bytes: usize) {
        let mut st = self.in_flight.locked();
        while st.0 > 0 && st.0 + bytes > STACK_BUDGET {
            st.1 += 1;
            st = self.freed.wait_locked(st);
            st.1 -= 1;
        }
        st.0 += bytes;
    }

    fn unreserve(&self, bytes: usize) {
        let mut st = self.in_flight.locked();
        st.0 -= bytes;
        // Waking costs a system call on every completion: only when a launch waits.
        if st.1 > 0 {
            self.freed.notify_all();
        }
    }
}

/// Async-launch state of one device: its async streams, stack budget and completion
/// thread. Thread-safe; owned by the open device (`crate::open`). Completion events
/// come from the device core's pool (`LaunchResources::events`).
#[derive(Default)]
pub struct AsyncQueue {
    streams: Mutex<Vec<OwnedStream>>,
    next: AtomicUsize,
    budget: Arc<StackBudget>,
    worker: Mutex<Option<(Sender<Pending>, JoinHandle<()>)>>,
}

impl AsyncQueue {
    /// The next async stream, round robin (created on first use).
    pub fn stream(&self) -> Result<Stream> {
        let mut v = self.streams.locked();
        if v.len() < ASYNC_STREAMS {
            let s = OwnedStream::non_blocking()?;
            let n = v.len();
            nvtx::name_stream(s.handle().raw().cast(), || {
                format!("nowait stream {n}").into()
            });
            v.push(s);
        }
        Ok(v[self.next.fetch_add(1, Ordering::Relaxed) % v.len()].handle())
    }

    /// Waits until `bytes` more stack bytes may be in flight, then reserves them.
    #[inline]
    pub fn reserve(&self, bytes: usize) {
        self.budget.reserve(bytes);
    }

    /// Stops the completion thread after it has completed everything outstanding, and
    /// destroys the async streams. (The device's idle events go right after, in the
    /// open device's `close`.)
    pub fn shutdown(&self) {
        let w = self.worker.locked().take();
        if let Some((tx, handle)) = w {
            drop(tx);
            let _ = handle.join();
        }
        // The streams are idle after the drain above: destroyed as they are dropped.
        drop(std::mem::take(&mut *self.streams.locked()));
    }

    /// Leaves the completion thread and the async streams as they are until the process
    /// ends: neither stopped nor destroyed, also when the queue is dropped (a device
    /// finalized while a kernel waits for a reverse-offload answer).
    pub fn leave_to_exit(&self) {
        std::mem::forget(self.worker.locked().take());
        std::mem::forget(std::mem::take(&mut *self.streams.locked()));
    }
}

/// Enqueues a prepared launch's completion (with `watch`: its timer, if profiling, and
/// its NVTX span, ended at completion): records an event on `s` and hands it to the
/// device's completion thread (started on first use, holding the core `dev`, `q`'s stack
/// budget and `rev`'s [`Service`] state).
pub fn submit(
    dev: &Arc<Core>,
    q: &AsyncQueue,
    rev: &Reverse,
    s: Stream,
    stacks: StackBlock,
    async_data: usize,
    watch: (Option<Timer>, AsyncRange),
) -> Result<()> {
    let (timer, span) = watch;
    let event = dev.launch().events().acquire()?;
    // The event and stream belong to this device's context.
    event.handle().record(s)?;
    let p = Pending {
        event,
        stacks,
        async_data,
        timer,
        span,
    };
    let mut w = q.worker.locked();
    if w.is_none() {
        let (tx, rx) = channel();
        let d = Arc::clone(dev);
        let budget = Arc::clone(&q.budget);
        let service = Arc::clone(rev.service());
        let handle = nvtx::spawn(format!("nvptx{}-completion", dev.ord()), move || {
            complete_loop(&d, &budget, &service, rx)
        })
        .map_err(|e| {
            gomp_plugin::error::Error::invalid(format!("cannot start completion thread: {e}"))
        })?;
        *w = Some((tx, handle));
    }
    if let Some((tx, _)) = w.as_ref() {
        // The receiver lives until `shutdown`, which takes the sender first.
        let _ = tx.send(p);
    }
    Ok(())
}

fn finish(dev: &Core, budget: &StackBudget, service: &Service, p: Pending) {
    let bytes = p.stacks.size;
    dev.memory().stacks().release(p.stacks);
    dev.launch().events().release(p.event);
    if let (Some(o), Some(t)) = (dev.observe(), p.timer) {
        // The completion event after the launch has completed: so has the launch.
        o.finish(t);
    }
    p.span.end();
    budget.unreserve(bytes);
    service.kernel_finished();
    dev.settings().note_kernel_done();
    gomp_plugin::libgomp::target::task_completion(p.async_data);
}

/// Polls of the channel (tens of microseconds in all) before the completion thread,
/// with nothing outstanding, blocks in it: a `nowait` loop launches again within
/// microseconds of a completion, and a launch that found the thread blocked would pay
/// a system call to wake it, and its completion the thread's wake-up.
const IDLE_POLLS: u32 = 20_000;

/// The next launch handed to the completion thread; `None` once the queue is shut down.
fn next_launch(rx: &Receiver<Pending>) -> Option<Pending> {
    for _ in 0..IDLE_POLLS {
        match rx.try_recv() {
            Ok(p) => return Some(p),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => std::hint::spin_loop(),
        }
    }
    rx.recv().ok()
}

fn complete_loop(dev: &Core, budget: &StackBudget, service: &Service, rx: Receiver<Pending>) {
    if let Err(e) = dev.activate() {
        report::fatal(&format!("nvptx completion thread: {e}"));
    }
    // Outstanding launches in submission order. The thread waits in the driver for
    // the oldest one (no sleeping poll loop, which under CPU load adds a scheduler
    // tick of latency per region), then completes every other one already done.
    let mut pending: VecDeque<Pending> = VecDeque::new();
    loop {
        if pending.is_empty() {
            match next_launch(&rx) {
                Some(p) => pending.push_back(p),
                None => return,
            }
        }
        pending.extend(rx.try_iter());
        if let Some(oldest) = pending.front() {
            // The event was recorded by `submit` and is owned by this entry.
            if let Err(e) = oldest.event.handle().synchronize() {
                let e = kernel_error(e);
                report::fatal(&format!("asynchronous target region failed: {e}"));
            }
        }
        if let Some(p) = pending.pop_front() {
            finish(dev, budget, service, p);
        }
        let mut i = 0;
        while i < pending.len() {
            match pending[i].event.handle().query() {
                Ok(()) => {
                    if let Some(p) = pending.remove(i) {
                        finish(dev, budget, service, p);
                    }
                }
                Err(e) if e.has_code(CUDA_ERROR_NOT_READY) => i += 1,
                Err(e) => {
                    let e = kernel_error(e);
                    report::fatal(&format!("asynchronous target region failed: {e}"))
                }
            }
        }
    }
}
