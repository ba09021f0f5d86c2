//! Launching OpenMP kernels: `GOMP_OFFLOAD_run` (synchronous, on the calling thread's
//! stream, so after the thread's own deferred copies by stream order) and
//! `GOMP_OFFLOAD_async_run` (on an async stream made to wait for deferred copies,
//! completion reported by the device's completion thread), each with a soft-stack
//! block of its own.

use crate::config::tune::Tune;
use crate::cuda::safe::Stream;
use crate::cuda::sys::*;
use crate::device::Core;
use crate::device_pool::stacks::StackBlock;
use crate::image::Kernel;
use crate::launch::async_queue::{self, AsyncQueue};
use crate::launch::autotune;
use crate::launch::failure::kernel_error;
use crate::launch::geometry::{self, Geometry, Limits, Requested};
use crate::launch::reverse::{ran_alone, Reverse};
use crate::observe::nvtx::{self, AsyncRange, Kind};
use gomp_plugin::error::Result;
use gomp_plugin::libgomp::target_args::LaunchRequest;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

/// A kernel ready to launch: its geometry and its own soft-stack block.
pub struct Prepared {
    /// The kernel's function (looked up by the load, or by its first launch).
    func: CUfunction,
    g: Geometry,
    vars: u64,
    /// The soft stacks the kernel uses until it completes.
    pub stacks: StackBlock,
    /// The timing of a trial of the tuner (synchronous launches only).
    trial: Option<autotune::Trial>,
}

/// Picks the geometry for launch request `r` (trying shapes for the tuner when
/// `may_try`) and takes a stack block.
pub fn prepare(dev: &Core, f: &Kernel, r: &LaunchRequest, may_try: bool) -> Result<Prepared> {
    let req = Requested::from(r);
    let tune = &dev.config().tune;
    let icv = if tune.icvs && (req.teams <= 0 || req.thread_limit <= 0) {
        let v = f.icvs.get(dev)?;
        Requested {
            teams: v.nteams,
            thread_limit: v.teams_thread_limit,
        }
    } else {
        Requested::default()
    };
    let code = *f.code(dev)?;
    let dyn_smem = dev.config().lowlat_pool;
    // SAFETY: (all `blocks` calls) `code.func` belongs to the loaded image owning `f`.
    let resident = |w| unsafe { f.resident.blocks(code.func, w, dyn_smem) };
    // The geometry under the knobs `t`.
    let shape = |t: &Tune| {
        let mut lim = Limits {
            num_sms: dev.props().num_sms,
            regs_per_sm: dev.props().regs_per_sm,
            max_threads_per_block: code.max_threads_per_block,
            regs_per_thread: code.regs,
            max_teams: 0,
        };
        let warps = geometry::warps(req, icv, t, lim, resident);
        // Soft stacks of at most an eighth of the device memory for an ICV-sized grid.
        lim.max_teams = (dev.props().total_mem / 8 / (dev.config().soft_stack * warps as usize))
            .min(i32::MAX as usize) as i32;
        Geometry {
            teams: geometry::teams(req, icv, t, lim, warps, resident(warps)),
            warps,
        }
    };
    let tuned = autotune::eligible(tune, req, icv);
    let (g, trial) = if tuned {
        autotune::pick(dev, f, may_try, shape)
    } else {
        (shape(tune), None)
    };
    let stacks = match dev
        .memory()
        .stacks()
        .acquire(dev.config().soft_stack * (g.teams as usize) * (g.warps as usize))
    {
        Ok(s) => s,
        Err(e) => {
            if let Some(t) = trial {
                autotune::finish(dev, f, t, false, false, 0);
            }
            return Err(e);
        }
    };
    log::debug!(
        "kernel {}: launch {} team(s) x {} warp(s) (requested teams {}, thread_limit {}; \
         ICVs teams {}, thread_limit {}; {} resident per SM; {} registers), {} dynamic smem{}",
        f.name,
        g.teams,
        g.warps,
        req.teams,
        req.thread_limit,
        icv.teams,
        icv.thread_limit,
        resident(g.warps).map_or("?".to_string(), |r| r.to_string()),
        code.regs,
        dev.config().lowlat_pool,
        if tuned {
            autotune::launch_note(f, trial.as_ref())
        } else {
            String::new()
        }
    );
    Ok(Prepared {
        func: code.func,
        g,
        vars: r.vars,
        stacks,
        trial,
    })
}

impl Prepared {
    /// The launch shape as the profile and trace show it: teams x threads.
    pub fn shape(&self) -> String {
        format!("{}x{}", self.g.teams, self.g.warps * 32)
    }
}

/// Enqueues a prepared kernel on `s` (does not wait).
pub fn enqueue(dev: &Core, p: &Prepared, s: Stream) -> Result<()> {
    let mut vars = p.vars;
    let mut stacks = p.stacks.ptr;
    let mut size = dev.config().soft_stack as u64;
    let mut params: [*mut c_void; 3] = [
        (&mut vars as *mut u64).cast(),
        (&mut stacks as *mut CUdeviceptr).cast(),
        (&mut size as *mut u64).cast(),
    ];
    // SAFETY: the kernel's PTX entry takes (u64 vars, u64 stacks, u64 size); the driver
    // copies the parameters, which point to locals alive during the call.
    unsafe {
        s.launch(
            p.func,
            (p.g.teams, 1, 1),
            (32, p.g.warps, 1),
            dev.config().lowlat_pool as u32,
            params.as_mut_ptr(),
        )
    }?;
    Ok(())
}

/// Enqueues `p` on `s` between the timing events of its trial, if it is one.
fn enqueue_timed(
    dev: &Core,
    p: &Prepared,
    s: Stream,
    trial: Option<&autotune::Trial>,
) -> Result<()> {
    let Some(t) = trial else {
        return enqueue(dev, p, s);
    };
    t.begin(s);
    enqueue(dev, p, s)?;
    t.end(s);
    Ok(())
}

/// Runs `f` as launch request `r` asks, and waits for it (and for what it reads ahead
/// for the device-to-host copies after it, `device::copy::read_ahead`).
pub fn run(dev: &Core, rev: &Reverse, f: &Kernel, r: &LaunchRequest) -> Result<()> {
    let _range = nvtx::range_c(Kind::Target, None, f.nvtx.as_ref().map(|l| &*l.omp));
    let mut p = prepare(dev, f, r, true)?;
    let lane = dev.launch().thread_streams().get()?;
    let ahead = &lane.data.read_ahead;
    let key = f as *const Kernel as usize;
    // Not once OpenACC is in use (see `device::copy::read_ahead`).
    let limit = if dev.settings().openacc_in_use() {
        0
    } else {
        dev.config().tune.readahead
    };
    let vars = r.vars;
    // SAFETY: this thread's lane (`get`); the context is current (entry point).
    // Only inside the block that holds `vars`: libgomp's block for this region (its
    // argument array and the data it newly maps), freed by this thread only after the
    // region's copies back; so the read-ahead never touches memory another thread may
    // free meanwhile.
    let mut read = unsafe {
        ahead.plan(key, vars, limit, |a, n| {
            dev.memory().blocks().inside_block_of(vars, a, n)
        })
    };
    // Read once: an image with reverse offload may be loaded meanwhile.
    let serves = rev.serves();
    let started = rev.kernel_started(serves);
    let mut timer = None;
    let trial = p.trial.take();
    // The host time of the launch and its wait, for a warm-up launch of the tuner.
    let wall = trial.as_ref().map(|_| Instant::now());
    let launch = |s: Stream| {
        match dev.observe() {
            None => enqueue_timed(dev, &p, s, trial.as_ref())?,
            Some(o) => {
                // Timing events around the launch, read once the stream is waited for.
                timer = o.start(s, &f.name, p.shape());
                enqueue_timed(dev, &p, s, trial.as_ref())?;
                if let Some(t) = &timer {
                    o.stop(t, s);
                }
            }
        }
        if let Some((a, n)) = read {
            // SAFETY: this thread's lane; `s` is waited for by `on_waited` before the
            // shadow is read; the range is this run's plan.
            if let Err(e) = unsafe { ahead.queue(s, a, n) } {
                log::debug!("read-ahead of {n} byte(s) at {a:#x}: {e}");
                read = None;
            }
        }
        Ok(())
    };
    let parts = dev.parts();
    // SAFETY: this thread's lane's ring (`get`); the lane's stream.
    let r = unsafe {
        if serves {
            // This thread serves the device's reverse-offload requests while it waits
            // (asking the stream, not polling the word, unless `syncwait=flag`).
            let flag = parts.settings.waits().serving_by_flag();
            // SAFETY: this thread's lane's ring and stream.
            let wait = |s| rev.wait_serving(dev, s, &lane.data.ring, flag);
            parts.on_waited_by(lane.stream(), &lane.data.ring, launch, wait)
        } else {
            parts.on_waited(lane.stream(), &lane.data.ring, true, launch)
        }
    };
    if r.is_ok() {
        // SAFETY: this thread's lane, after the run's successful wait.
        unsafe { ahead.ran(key, vars, read) };
    }
    let finished = rev.kernel_finished();
    dev.settings().note_kernel_done();
    if let (Some(o), Some(t)) = (dev.observe(), timer) {
        o.finish(t);
    }
    if let (Some(t), Some(w)) = (trial, wall) {
        let wall_ns = u64::try_from(w.elapsed().as_nanos()).unwrap_or(u64::MAX);
        autotune::finish(dev, f, t, r.is_ok(), ran_alone(started, finished), wall_ns);
    }
    r.map_err(kernel_error)?;
    dev.memory().stacks().release(p.stacks);
    Ok(())
}

/// Launches `f` as `r` asks without waiting; libgomp's `async_data` is handed back
/// through `GOMP_PLUGIN_target_task_completion` once the kernel has completed.
pub fn run_async(
    dev: &Arc<Core>,
    q: &AsyncQueue,
    rev: &Reverse,
    f: &Kernel,
    r: &LaunchRequest,
    async_data: *mut c_void,
) -> Result<()> {
    let label = f.nvtx.as_ref().map(|l| &*l.omp);
    let _range = nvtx::range_c(Kind::TargetNowait, None, label);
    let p = prepare(dev, f, r, false)?;
    q.reserve(p.stacks.size);
    let s = q.stream()?;
    // The async stream waits for the deferred copies (the region's own included).
    dev.launch().order(s)?;
    rev.kernel_started(false);
    let timer = dev.observe().and_then(|o| o.start(s, &f.name, p.shape()));
    enqueue(dev, &p, s)?;
    if let (Some(o), Some(t)) = (dev.observe(), &timer) {
        o.stop(t, s);
    }
    // Until the completion thread sees the kernel end.
    let span = AsyncRange::start(Kind::InFlight, label);
    let r = async_queue::submit(dev, q, rev, s, p.stacks, async_data as usize, (timer, span));
    if r.is_err() {
        span.end();
    }
    r
}
