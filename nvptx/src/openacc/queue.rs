//! OpenACC async queues. `struct goacc_asyncqueue` is the plugin's to define and opaque
//! to libgomp: here it is an [`AccQueue`], one CUDA stream plus the callbacks libgomp
//! queued on it. A callback is an event recorded on the stream, no CUDA host function:
//! it runs on the host thread that observes the event complete by testing or
//! synchronising the queue, so it may call back into the plugin (libgomp's free device
//! memory from there; such frees are not reported to OpenACC profilers), and a queue
//! seen idle has run all its callbacks, as with the stock plugin's stream-blocking host
//! callbacks. The plugin queues its own frees the same way ([`AccQueue::free_after`]:
//! libgomp 12's kernel-argument blocks).
//!
//! Queue streams are created blocking (`CU_STREAM_DEFAULT`), as the stock plugin's are:
//! work a program puts on CUDA's legacy default stream stays ordered with them. A
//! queue's copies go through the device's copy engine on the queue's stream
//! (`device::copy`, docs/copy-ordering.md).

use crate::cuda::safe::{OwnedEvent, OwnedStream, Stream};
use crate::cuda::sys::*;
use crate::device::copy::Via;
use crate::device::Core;
use crate::observe::nvtx::{self, Kind};
use crate::open::OpenDevice;
use gomp_plugin::error::Result;
use gomp_plugin::libgomp::acc_prof;
use gomp_plugin::sync::Lock;
use gomp_plugin::DeviceCore;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The stream a queue works on, and whether the queue created it (a stream the program
/// handed over with `acc_set_cuda_stream` is the program's to destroy).
#[derive(Clone, Copy)]
struct QueueStream {
    stream: Stream,
    owned: bool,
}

/// What a queued callback does.
enum Action {
    /// Calls libgomp's function with its argument (`openacc_async_queue_callback`).
    Libgomp(unsafe extern "C" fn(*mut c_void), usize),
    /// Frees a block of the device's memory that the work queued before no longer
    /// needs ([`AccQueue::free_after`]).
    Free(CUdeviceptr),
}

/// A queued callback: runs once `event` has completed.
struct Callback {
    event: OwnedEvent,
    action: Action,
}

/// One OpenACC async queue. Created by `openacc_async_construct`, destroyed by
/// `openacc_async_destruct`; libgomp holds it as a raw pointer and may use it from any
/// host thread (the state is locked).
pub struct AccQueue {
    /// The device the queue belongs to (kept open while the queue exists).
    pub dev: Arc<Core>,
    stream: Mutex<QueueStream>,
    callbacks: Mutex<VecDeque<Callback>>,
    /// Held while callbacks run, so they run one at a time and in order.
    runner: Mutex<()>,
}

/// How to acquire the callback runner.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    /// Wait for another thread's callbacks to finish first.
    Wait,
    /// Skip if another thread is running callbacks.
    IfFree,
}

impl AccQueue {
    /// Creates a queue with a new stream on open device `dev` (whose context is
    /// current); the queue keeps the device's core, not the device.
    pub fn create(dev: Arc<OpenDevice>) -> Result<Self> {
        let dev = Arc::clone(dev.shared());
        // The device's context is current. The queue owns the stream (as a handle
        // flagged `owned`: a stream the program hands over is not destroyed).
        let s = OwnedStream::create(CU_STREAM_DEFAULT as u32)?.into_raw();
        nvtx::name_stream(s.cast(), || {
            static QUEUES: AtomicUsize = AtomicUsize::new(0);
            let n = QUEUES.fetch_add(1, Ordering::Relaxed);
            format!("acc queue {n} (device {})", dev.ord()).into()
        });
        dev.settings().use_openacc();
        if let Some(o) = dev.observe() {
            o.acc_queue();
        }
        Ok(AccQueue {
            dev,
            stream: Mutex::new(QueueStream {
                // SAFETY: created just above, alive until the queue destroys it.
                stream: unsafe { Stream::from_raw(s) },
                owned: true,
            }),
            callbacks: Mutex::default(),
            runner: Mutex::new(()),
        })
    }

    /// The queue's current CUDA stream.
    pub fn stream(&self) -> Stream {
        self.stream.locked().stream
    }

    /// The queue's stream, made to wait for the device's deferred copies first (work is
    /// about to be queued on it, or the program is handed it). A stream the queue made
    /// is blocking, so CUDA itself orders it after the legacy default stream.
    pub fn ordered_stream(&self) -> Result<Stream> {
        let qs = *self.stream.locked();
        self.dev
            .launch()
            .copy_order()
            .order(qs.stream, qs.owned, self.dev.launch().events())?;
        Ok(qs.stream)
    }

    /// Waits for the queue's work and callbacks, then destroys its stream (unless the
    /// program supplied it).
    pub fn destroy(self) -> Result<()> {
        self.dev.activate()?;
        self.synchronize()?;
        let qs = *self.stream.locked();
        if qs.owned {
            // SAFETY: the stream is idle and owned by this queue (created by `create`),
            // which is going away.
            unsafe { OwnedStream::from_raw(qs.stream.raw()) }.destroy()?;
        }
        Ok(())
    }

    /// Runs, in order, the callbacks whose events have completed. A callback whose
    /// event reports an error (the context failed) is dropped, not run: whoever waits
    /// for the queue reports the failure. Returns true when none is left.
    fn run_callbacks(&self, how: Run) -> bool {
        let _runner = match how {
            Run::Wait => self.runner.locked(),
            Run::IfFree => match self.runner.try_locked() {
                Some(g) => g,
                None => return false,
            },
        };
        loop {
            let next = {
                let mut list = self.callbacks.locked();
                let Some(front) = list.front() else {
                    return true;
                };
                // The event was recorded on this queue's stream and is owned by the entry.
                match front.event.handle().query() {
                    Err(e) if e.has_code(CUDA_ERROR_NOT_READY) => return false,
                    r => list.pop_front().map(|cb| (cb, r.is_ok())),
                }
            };
            if let Some((cb, ok)) = next {
                self.dev.launch().events().release(cb.event);
                match cb.action {
                    Action::Libgomp(f, data) if ok => {
                        // SAFETY: libgomp's callback and argument, run once, after the work
                        // queued before it, as openacc_async_queue_callback promises.
                        acc_prof::muted(|| unsafe { f(data as *mut c_void) })
                    }
                    Action::Free(p) if ok => {
                        if let Err(e) = self.dev.free(p) {
                            log::debug!("OpenACC queue: freeing {p:#x} after its work: {e}");
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// True when all work and callbacks queued so far have completed.
    pub fn test(&self) -> Result<bool> {
        self.dev.activate()?;
        // The stream belongs to this device.
        match self.stream().query() {
            Ok(()) => Ok(self.run_callbacks(Run::IfFree)),
            Err(e) if e.has_code(CUDA_ERROR_NOT_READY) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Waits until all work and callbacks queued so far have completed.
    pub fn synchronize(&self) -> Result<()> {
        let _range = nvtx::range(Kind::AccWait, None, || "acc wait".into());
        self.dev.activate()?;
        // The stream belongs to this device.
        self.stream()
            .synchronize()
            .map_err(crate::launch::failure::kernel_error)?;
        self.run_callbacks(Run::Wait);
        Ok(())
    }

    /// Makes future work on `later` wait for the work queued on `self` so far.
    pub fn serialize(&self, later: &AccQueue) -> Result<()> {
        self.dev.activate()?;
        let (a, b) = (self.stream(), later.stream());
        if a == b {
            return Ok(());
        }
        let ev = self.dev.launch().events().acquire()?;
        // Event and streams belong to this device's context. The wait captures the
        // record made just before, so the event may be reused at once.
        let h = ev.handle();
        let r = h.record(a).and_then(|()| h.wait_on(b));
        self.dev.launch().events().release(ev);
        r
    }

    /// Queues `f(data)` to run once the work queued so far has completed (never
    /// inline: libgomp calls this in the middle of its own bookkeeping).
    pub fn callback(&self, f: unsafe extern "C" fn(*mut c_void), data: *mut c_void) -> Result<()> {
        self.queue_action(Action::Libgomp(f, data as usize))
    }

    /// Frees device block `p` (from `Core::alloc`, used by work queued on this queue
    /// and by nothing after it) once the work queued so far has completed, without
    /// waiting for it: in stream order, as a callback (run by the thread that next sees
    /// the queue's work complete, at the latest by the queue's destruction). If that
    /// work fails, the block is not freed (the failure is reported by whoever waits
    /// for the queue; the memory goes with the device).
    pub fn free_after(&self, p: CUdeviceptr) -> Result<()> {
        self.queue_action(Action::Free(p))
    }

    /// Queues `action` to run once the work queued so far has completed.
    fn queue_action(&self, action: Action) -> Result<()> {
        self.dev.activate()?;
        let event = self.dev.launch().events().acquire()?;
        // The event and stream belong to this device's context.
        if let Err(e) = event.handle().record(self.stream()) {
            self.dev.launch().events().release(event);
            return Err(e);
        }
        self.callbacks
            .locked()
            .push_back(Callback { event, action });
        Ok(())
    }

    /// Adopts the program's `stream` after finishing the queue's current work; the old
    /// stream is destroyed if the queue created it.
    // The program's stream is only handed to the driver, which rejects a bad handle;
    // keeping it alive while the queue uses it is the program's part of
    // `acc_set_cuda_stream`.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn set_stream(&self, stream: CUstream) -> Result<()> {
        self.synchronize()?;
        let mut qs = self.stream.locked();
        if qs.owned && qs.stream.raw() != stream {
            // SAFETY: the old stream is idle (synchronised above) and ours (created by
            // `create`).
            unsafe { OwnedStream::from_raw(qs.stream.raw()) }.destroy()?;
        }
        *qs = QueueStream {
            // SAFETY: the program's stream, which it keeps alive while the queue uses it
            // (`acc_set_cuda_stream`'s contract).
            stream: unsafe { Stream::from_raw(stream) },
            owned: false,
        };
        Ok(())
    }

    /// Queues a copy of `n` bytes from host `src` to device `dst` on the queue's stream,
    /// through the device's copy engine (`device::copy`, [`Via::Queue`]).
    ///
    /// # Safety
    /// `src` must stay readable until the copy has run (libgomp keeps or stages it).
    pub unsafe fn host2dev(&self, dst: CUdeviceptr, src: *const c_void, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.dev.activate()?;
        let s = self.ordered_stream()?;
        // SAFETY: forwarded caller guarantee.
        unsafe {
            self.dev
                .copies()
                .host2dev(self.dev.parts(), dst, src, n, Via::Queue(s))
        }
        .map_err(crate::launch::failure::kernel_error)
    }

    /// Queues a copy of `n` bytes from device `src` to host `dst` on the queue's stream
    /// (`device::copy`; to pageable memory it is waited for, as the driver would).
    ///
    /// # Safety
    /// `dst` must stay writable until the copy has run.
    pub unsafe fn dev2host(&self, dst: *mut c_void, src: CUdeviceptr, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.dev.activate()?;
        let s = self.ordered_stream()?;
        // SAFETY: forwarded caller guarantee.
        unsafe {
            self.dev
                .copies()
                .dev2host(self.dev.parts(), dst, src, n, Via::Queue(s))
        }
        .map_err(crate::launch::failure::kernel_error)
    }

    /// Queues a copy of `n` bytes between device buffers on the queue's stream.
    pub fn dev2dev(&self, dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.dev.activate()?;
        let s = self.ordered_stream()?;
        self.dev
            .copies()
            .dev2dev(self.dev.parts(), dst, src, n, Via::Queue(s))
    }
}

/// The framework's view of a queue (`gomp_plugin::AccQueue`): each entry point forwards
/// to the method of the same name above, beside its type as gcn's is.
impl gomp_plugin::AccQueue for AccQueue {
    fn destroy(self) -> Result<()> {
        AccQueue::destroy(self)
    }
    fn test(&self) -> Result<bool> {
        AccQueue::test(self)
    }
    fn synchronize(&self) -> Result<()> {
        AccQueue::synchronize(self)
    }
    fn serialize(&self, later: &Self) -> Result<()> {
        AccQueue::serialize(self, later)
    }
    fn callback(&self, f: unsafe extern "C" fn(*mut c_void), data: *mut c_void) -> Result<()> {
        AccQueue::callback(self, f, data)
    }
    unsafe fn host2dev(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()> {
        // SAFETY: forwarded caller guarantee.
        unsafe { AccQueue::host2dev(self, dst as CUdeviceptr, src, n) }
    }
    unsafe fn dev2host(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()> {
        // SAFETY: forwarded caller guarantee.
        unsafe { AccQueue::dev2host(self, dst, src as CUdeviceptr, n) }
    }
    fn dev2dev(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()> {
        AccQueue::dev2dev(self, dst as CUdeviceptr, src as CUdeviceptr, n)
    }
    fn native_stream(&self) -> *mut c_void {
        // The program may queue work on the stream at once: it waits for the deferred
        // copies first. This entry point cannot report an error; a failed copy is also
        // reported by the next synchronisation of the stream that ran it.
        let s = match self.dev.activate().and_then(|()| self.ordered_stream()) {
            Ok(s) => s,
            Err(e) => {
                log::debug!("acc_get_cuda_stream: {e}");
                self.stream()
            }
        };
        s.raw().cast()
    }
    fn set_native_stream(&self, stream: *mut c_void) -> Result<()> {
        self.set_stream(stream.cast())
    }
}
