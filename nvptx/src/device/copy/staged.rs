//! Copy path: large pageable copies through the staging engine: the route ([`Staged`])
//! and the engine ([`Staging`], a device's), complete when they return ([`Parts::stage`] says which), after what they wait for
//! first on the host: a queue's work queued so far (the engine's streams are not
//! ordered after it, and the queue's later work comes after the copy) and every
//! deferred copy (rule 3 of `copy_order`). Not taken when the engine is busy. Sized by
//! `GOMP_NVPTX_STAGING` (a variable of its own, no `GOMP_NVPTX_TUNE` key).
//!
//! The staging engine: pipelined copies between pageable host memory and the device. The driver copies
//! pageable memory through its own staging at a fraction of the bus's bandwidth
//! (bench/results/latest.md, the `*_pageable_*` rows); for large copies the plugin stages
//! itself instead.
//!
//! A copy is cut into pieces that a few *lanes* claim one after the other (an atomic
//! counter, so a slow lane simply takes fewer). Each lane is a thread with its own
//! stream and a few page-locked buffers, and overlaps its own work: host to device, it
//! copies the next piece into a free buffer while the DMA of the previous ones runs;
//! device to host, it keeps DMAs into its buffers queued ahead while it copies finished
//! ones out. Lane 0 is the calling thread; the others are persistent worker threads
//! (created with the buffers, on first use, and ended at device close), so no thread is
//! spawned per copy or per piece, and no lane ever waits for another.
//!
//! Used for pageable copies of at least [`MIN_STAGED`] bytes, synchronous ones and those
//! of OpenACC async queues (`device::copy`), when the device's staging engine is free;
//! otherwise (another thread is staging, a synchronous copy under OpenACC's
//! legacy-stream ordering, or the engine cannot be created) the copy goes to the driver.
//! The shape (lanes, bytes per buffer, buffers per lane) is [`StagingParams`], a setting
//! (`crate::config::staging`, with [`MIN_STAGED`], which the device's parts read too).

use super::host_copy::{HostCopy, Via};
use super::path::{CopyPath, Ended, Failed, Route, Taken, Takes};
use crate::config::staging::StagingParams;
pub use crate::config::staging::MIN_STAGED;
use crate::config::Config;
use crate::cuda::pools::thread_streams::LaneData;
use crate::cuda::safe::context;
use crate::cuda::safe::{HostAlloc, OwnedEvent, OwnedStream};
use crate::cuda::sys::*;
use crate::device::parts::Parts;
use crate::observe::nvtx;
use crate::observe::profile::CopyDir;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::sync::Lock;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The staging path (zero-sized, stateless, `Sync`; the engine, [`Staging`], is the
/// copy buffers' `staging`).
pub struct Staged;

impl Route for Staged {
    fn label(&self) -> &'static str {
        "staged"
    }

    fn takes(&self, _config: &Config) -> Takes {
        Takes::ANY.sized(MIN_STAGED, usize::MAX)
    }
}

impl<B: AsRef<Staging>, T: LaneData> CopyPath<B, T> for Staged {
    unsafe fn try_copy(&self, d: &Parts<B, T>, c: &HostCopy) -> Option<Taken> {
        if !d.stage(c.host, c.n, c.via == Via::Sync) {
            return None;
        }
        c.taken(self.label());
        if let Err(e) = before_staging(d, c.via) {
            return Some(Err(e.into()));
        }
        let staging: &Staging = d.buffers.as_ref();
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
fn before_staging<B, T: LaneData>(d: &Parts<B, T>, via: Via) -> Result<()> {
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

/// Smallest piece a copy is cut into (unless the buffers are smaller).
const MIN_PIECE: usize = 256 << 10;

/// The piece size for a copy of `n` bytes under the shape `p`: every lane gets work,
/// pieces are at least [`MIN_PIECE`] and at most one buffer, page multiples. Pure.
pub fn piece(p: &StagingParams, n: usize) -> usize {
    n.div_ceil(p.threads)
        .max(MIN_PIECE)
        .next_multiple_of(4096)
        .min(p.chunk)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    HostToDevice,
    DeviceToHost,
}

/// One staged copy, shared by the lanes working on it. The host range is the caller's
/// and stays valid until every lane has reported (see [`Engine::run`]).
struct Job {
    dir: Dir,
    host: usize,
    dev: CUdeviceptr,
    n: usize,
    piece: usize,
    next: AtomicUsize,
    failed: AtomicBool,
}

impl Job {
    /// The next piece, as (offset, length); `None` when all are claimed or a lane
    /// failed.
    fn claim(&self) -> Option<(usize, usize)> {
        if self.failed.load(Ordering::Relaxed) {
            return None;
        }
        let off = self
            .next
            .fetch_add(1, Ordering::Relaxed)
            .checked_mul(self.piece)?;
        (off < self.n).then(|| (off, self.piece.min(self.n - off)))
    }
}

/// A lane's page-locked buffers, their events and its stream. Owned by one thread.
/// Dropped (after waiting for its stream) in field order: buffers, events, stream.
struct Lane {
    bufs: Vec<HostAlloc>,
    events: Vec<OwnedEvent>,
    stream: OwnedStream,
}

impl Drop for Lane {
    fn drop(&mut self) {
        // Idle (every job waits for the lane's stream before reporting); the fields
        // are freed after this, in declaration order.
        let _ = self.stream.handle().synchronize();
    }
}

impl Lane {
    /// Creates the lane's resources in the current context.
    fn create(p: &StagingParams) -> Result<Lane> {
        // The device's context is current. On an error the partly built lane is
        // dropped, which frees what it holds.
        let mut lane = Lane {
            bufs: Vec::new(),
            events: Vec::new(),
            stream: OwnedStream::non_blocking()?,
        };
        nvtx::name_stream(lane.stream.handle().raw().cast(), || "staging lane".into());
        for _ in 0..p.buffers {
            lane.bufs.push(HostAlloc::alloc(p.chunk, 0)?);
            lane.events.push(OwnedEvent::create()?);
        }
        Ok(lane)
    }

    /// Buffer `k`'s address.
    #[inline]
    fn buf(&self, k: usize) -> *mut u8 {
        self.bufs[k].as_ptr().cast()
    }

    /// Works on `job` until its pieces run out; then waits for the lane's stream. A
    /// failure stops the other lanes at their next claim.
    ///
    /// # Safety
    /// The job's host range is valid for its direction and its device range valid.
    unsafe fn run(&self, job: &Job) -> Result<()> {
        let r = match job.dir {
            // SAFETY: forwarded caller guarantees.
            Dir::HostToDevice => unsafe { self.host2dev(job) },
            // SAFETY: forwarded caller guarantees.
            Dir::DeviceToHost => unsafe { self.dev2host(job) },
        };
        let synced = self.stream.handle().synchronize();
        let r = r.and(synced);
        if r.is_err() {
            job.failed.store(true, Ordering::Relaxed);
        }
        r
    }

    /// # Safety
    /// As [`Lane::run`].
    unsafe fn host2dev(&self, job: &Job) -> Result<()> {
        let nb = self.bufs.len();
        let mut used = 0usize;
        while let Some((off, len)) = job.claim() {
            let k = used % nb;
            let (ev, s) = (self.events[k].handle(), self.stream.handle());
            if used >= nb {
                ev.synchronize()?;
            }
            // SAFETY: buffer k's previous DMA (recorded by event k) is waited for before
            // the buffer is overwritten; the source range is inside the caller's.
            unsafe {
                std::ptr::copy_nonoverlapping((job.host + off) as *const u8, self.buf(k), len);
                s.copy_htod(job.dev + off as u64, self.buf(k).cast(), len)?;
            }
            ev.record(s)?;
            used += 1;
        }
        Ok(())
    }

    /// # Safety
    /// As [`Lane::run`].
    unsafe fn dev2host(&self, job: &Job) -> Result<()> {
        let nb = self.bufs.len();
        let mut queued: VecDeque<(usize, usize, usize)> = VecDeque::with_capacity(nb);
        let mut next = 0usize;
        loop {
            // Keep every free buffer busy with a DMA. Buffers are used round-robin and
            // drained in order, so buffer `next` is the oldest drained one.
            while queued.len() < nb {
                let Some((off, len)) = job.claim() else { break };
                let s = self.stream.handle();
                // SAFETY: buffer `next` holds no queued DMA; the device range is inside
                // the caller's.
                unsafe { s.copy_dtoh(self.buf(next).cast(), job.dev + off as u64, len) }?;
                self.events[next].handle().record(s)?;
                queued.push_back((next, off, len));
                next = (next + 1) % nb;
            }
            let Some((k, off, len)) = queued.pop_front() else {
                return Ok(());
            };
            self.events[k].handle().synchronize()?;
            // SAFETY: the DMA into buffer k has completed; the destination range is inside
            // the caller's.
            unsafe { std::ptr::copy_nonoverlapping(self.buf(k), (job.host + off) as *mut u8, len) };
        }
    }
}

type Task = Box<dyn FnOnce(&Lane) + Send>;

/// A persistent lane thread: runs the tasks it is sent on its own lane.
struct Worker {
    tasks: mpsc::Sender<Task>,
    thread: JoinHandle<()>,
}

impl Worker {
    /// Starts a worker whose lane lives in context `ctx` (alive until the worker is
    /// ended by [`Engine::destroy`]).
    fn spawn(ctx: CUcontext, p: StagingParams) -> Result<Worker> {
        let (tasks, rx) = mpsc::channel::<Task>();
        let (ready_tx, ready) = mpsc::channel::<Result<()>>();
        let ctx = ctx as usize;
        let thread = nvtx::spawn("nvptx-staging".into(), move || {
            // SAFETY: the device's context outlives the worker (joined at close).
            let lane =
                unsafe { context::set_current(ctx as CUcontext) }.and_then(|()| Lane::create(&p));
            let lane = match lane {
                Ok(l) => {
                    let _ = ready_tx.send(Ok(()));
                    l
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            for task in rx {
                let _ = catch_unwind(AssertUnwindSafe(|| task(&lane)));
            }
            drop(lane);
        })
        .map_err(|e| Error::invalid(format!("cannot start a staging thread: {e}")))?;
        match ready.recv() {
            Ok(Ok(())) => Ok(Worker { tasks, thread }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(Error::invalid("staging thread ended during start-up"))
            }
        }
    }
}

/// The calling thread's lane and the worker lanes. Owned by one device.
struct Engine {
    main: Lane,
    workers: Vec<Worker>,
}

// SAFETY: the page-locked buffers are plain memory owned by the engine; every use is
// under the `Staging` mutex, and worker lanes are only touched by their threads.
unsafe impl Send for Engine {}

impl Engine {
    /// Creates the lanes (the device's context is current on the calling thread).
    fn create(ctx: CUcontext, p: StagingParams) -> Result<Engine> {
        let mut e = Engine {
            main: Lane::create(&p)?,
            workers: Vec::new(),
        };
        for _ in 1..p.threads {
            match Worker::spawn(ctx, p) {
                Ok(w) => e.workers.push(w),
                Err(err) => {
                    e.destroy();
                    return Err(err);
                }
            }
        }
        log::debug!(
            "staging: {} lane(s), {} byte buffers, {} per lane",
            p.threads,
            p.chunk,
            p.buffers
        );
        Ok(e)
    }

    /// Ends the workers (each frees its lane) and frees the calling thread's lane.
    fn destroy(self) {
        for w in self.workers {
            drop(w.tasks);
            let _ = w.thread.join();
        }
        drop(self.main);
    }

    /// Runs `job` on as many lanes as it has pieces (up to all of them) and waits for
    /// every lane that took part; the first error is returned.
    ///
    /// # Safety
    /// The job's host and device ranges are valid for its direction until it returns.
    unsafe fn run(&self, job: Job) -> Result<()> {
        let pieces = job.n.div_ceil(job.piece);
        let job = Arc::new(job);
        let (done_tx, done) = mpsc::channel::<Result<()>>();
        let mut sent = 0;
        for w in self.workers.iter().take(pieces.saturating_sub(1)) {
            let (job, done_tx) = (Arc::clone(&job), done_tx.clone());
            let task: Task = Box::new(move |lane| {
                // SAFETY: the caller keeps the ranges valid until every sent task has
                // reported or dropped its sender, which the loop below waits for.
                let _ = done_tx.send(unsafe { lane.run(&job) });
            });
            if w.tasks.send(task).is_ok() {
                sent += 1;
            }
        }
        drop(done_tx);
        // SAFETY: forwarded caller guarantees.
        let mut r = unsafe { self.main.run(&job) };
        for _ in 0..sent {
            let one = done
                .recv()
                .unwrap_or_else(|_| Err(Error::invalid("a staging thread failed")));
            if r.is_ok() {
                r = one;
            }
        }
        r
    }
}

/// The device's staging engine, created on first use; one staged copy at a time.
pub struct Staging {
    params: StagingParams,
    slot: Mutex<Option<Engine>>,
}

impl Default for Staging {
    fn default() -> Self {
        Staging::new(StagingParams::default())
    }
}

impl Staging {
    /// An engine of shape `params`, created on first use.
    pub fn new(params: StagingParams) -> Staging {
        Staging {
            params,
            slot: Mutex::new(None),
        }
    }

    /// Runs `job` on the engine, creating it (in context `ctx`, current on this thread)
    /// on first use; `None` when it is busy or cannot be created (the caller copies
    /// without staging).
    ///
    /// # Safety
    /// The job's ranges valid for its direction.
    unsafe fn run(&self, ctx: CUcontext, job: Job) -> Option<Result<()>> {
        let mut slot = self.slot.try_lock().ok()?;
        if slot.is_none() {
            match Engine::create(ctx, self.params) {
                Ok(e) => *slot = Some(e),
                Err(e) => {
                    log::debug!("no staging buffers ({e}); large pageable copies go to the driver");
                    return None;
                }
            }
        }
        // SAFETY: forwarded caller guarantees.
        slot.as_ref().map(|e| unsafe { e.run(job) })
    }

    fn job(&self, dir: Dir, host: usize, dev: CUdeviceptr, n: usize) -> Job {
        Job {
            dir,
            host,
            dev,
            n,
            piece: piece(&self.params, n),
            next: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
        }
    }

    /// Copies `n` bytes from pageable host `src` to device `dst` through the staging
    /// engine of the device whose context `ctx` is current, or returns `None` if it
    /// cannot be used now.
    ///
    /// # Safety
    /// `src` readable for `n` bytes; the device range valid.
    pub unsafe fn host2dev(
        &self,
        ctx: CUcontext,
        dst: CUdeviceptr,
        src: *const c_void,
        n: usize,
    ) -> Option<Result<()>> {
        let job = self.job(Dir::HostToDevice, src as usize, dst, n);
        // SAFETY: forwarded caller guarantees.
        unsafe { self.run(ctx, job) }
    }

    /// Copies `n` bytes from device `src` to pageable host `dst`; `None` as above.
    ///
    /// # Safety
    /// `dst` writable for `n` bytes; the device range valid.
    pub unsafe fn dev2host(
        &self,
        ctx: CUcontext,
        dst: *mut c_void,
        src: CUdeviceptr,
        n: usize,
    ) -> Option<Result<()>> {
        let job = self.job(Dir::DeviceToHost, dst as usize, src, n);
        // SAFETY: forwarded caller guarantees.
        unsafe { self.run(ctx, job) }
    }

    /// Ends the engine: its threads and buffers (device close; the context is current).
    pub fn destroy(&self) {
        if let Some(e) = self.slot.locked().take() {
            e.destroy();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(p: &StagingParams, n: usize) -> Vec<(usize, usize)> {
        let job = Job {
            dir: Dir::HostToDevice,
            host: 0,
            dev: 0,
            n,
            piece: piece(p, n),
            next: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
        };
        std::iter::from_fn(|| job.claim()).collect()
    }

    #[test]
    fn pieces_cover_the_copy_exactly() {
        // The default's lane count depends on the machine; fix it here.
        let d = StagingParams {
            threads: 4,
            ..StagingParams::default()
        };
        assert!((1..=12).contains(&StagingParams::default().threads));
        for n in [
            1usize,
            4095,
            MIN_STAGED,
            MIN_STAGED + 1,
            100 << 20,
            (1 << 30) + 12345,
        ] {
            let ps = pieces(&d, n);
            let mut at = 0;
            for &(off, len) in &ps {
                assert_eq!(off, at);
                assert!(len > 0 && len <= d.chunk);
                at += len;
            }
            assert_eq!(at, n, "n = {n}");
        }
        // A 4 MiB copy still uses every lane; a 1 GiB one uses full buffers.
        assert_eq!(pieces(&d, MIN_STAGED).len(), 4);
        assert_eq!(piece(&d, 1 << 30), d.chunk);
        let one = StagingParams { threads: 1, ..d };
        assert_eq!(piece(&one, MIN_STAGED), d.chunk);
    }

    #[test]
    fn a_failed_lane_stops_the_others() {
        let d = StagingParams::default();
        let job = Job {
            dir: Dir::DeviceToHost,
            host: 0,
            dev: 0,
            n: 100 << 20,
            piece: piece(&d, 100 << 20),
            next: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
        };
        assert!(job.claim().is_some());
        job.failed.store(true, Ordering::Relaxed);
        assert!(job.claim().is_none());
    }
}
