//! Launching OpenACC kernels (`openacc_exec`, `openacc_async_exec`).
//!
//! An OpenACC entry point takes one parameter: the device address of the block of
//! mapped-variable addresses, which libgomp has already copied to the device.

use super::dims::{choose, AccLimits, Choice, Dims, Inputs};
use super::gang_tuner;
use crate::cuda::safe::module::occupancy as occupancy_of;
use crate::cuda::safe::Stream;
use crate::device::copy_order::Waited;
use crate::device::Core;
use crate::image::{Code, Kernel};
use crate::launch::autotune::{self, Trial};
use crate::launch::failure::kernel_error;
use crate::observe::nvtx::{self, Kind};
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::acc_prof;
use gomp_plugin::libgomp::host;
use gomp_plugin::openacc::AccLaunch;
use std::ffi::{c_void, CString};
use std::time::Instant;

/// The occupancy calculator's (grid, block) for `f` under a block-size `limit`.
fn occupancy(f: &Kernel, code: &Code, limit: u32) -> Option<(u32, u32)> {
    // SAFETY: `f` is a kernel of a loaded image (its handle came from load_image).
    f.occupancy
        .get(limit, || unsafe { occupancy_of(code.func, limit) })
}

/// Picks the untuned dimensions for launching `f`, given libgomp's `requested` ones
/// (0 = not set).
pub fn dims_for(dev: &Core, f: &Kernel, requested: [u32; 3]) -> Result<Choice> {
    let code = f.code(dev)?;
    let mut defaults = [0i32; 3];
    if let Some(dd) = host::host().and_then(|h| h.acc_default_dim) {
        for (i, v) in defaults.iter_mut().enumerate() {
            // SAFETY: libgomp's GOMP_PLUGIN_acc_default_dim, i < 3.
            *v = unsafe { dd(i as u32) };
        }
    }
    let inputs = Inputs {
        compiled: f.dims,
        requested,
        defaults,
    };
    let limits = AccLimits {
        max_threads_per_block: code.max_threads_per_block.max(0) as u32,
        num_sms: dev.props().num_sms.max(1) as u32,
    };
    choose(&inputs, &limits, &|limit| occupancy(f, code, limit))
        .map_err(|e| Error::invalid(e.message(&f.name)))
}

/// The dimensions of this launch of `f` (`requested`: libgomp's) and, when it is one of
/// the tuner's timed launches, its trial; said in the `GOMP_DEBUG` launch line.
fn shape(
    dev: &Core,
    f: &Kernel,
    requested: [u32; 3],
    queued: bool,
) -> Result<(Dims, Option<Trial>)> {
    let choice = dims_for(dev, f, requested)?;
    let forced = gang_tuner::forced(dev, &choice);
    let tuned = gang_tuner::eligible(dev, &choice);
    let (d, trial) = match forced {
        Some(d) => (d, None),
        None if tuned => gang_tuner::pick(dev, f, &choice, queued),
        None => (choice.dims, None),
    };
    log::debug!(
        "nvptx_exec: kernel {}: launch gangs={}, workers={}, vectors={}{}",
        f.name,
        d.gangs,
        d.workers,
        d.vector,
        match (forced, dev.config().tune.accgangs) {
            (Some(_), Some(k)) => format!("; accgangs={k}"),
            _ if tuned => autotune::launch_note(f, trial.as_ref()),
            _ => String::new(),
        }
    );
    Ok((d, trial))
}

/// The OpenACC profiling interface's enqueue-launch events of one launch
/// (`acc_prof`), when a profiling library is registered: the start when made, the end
/// by [`ProfLaunch::end`], on the same event block (a tool may keep its `tool_info`
/// there). Owns the kernel name the block points to (a `CString`'s buffer, which stays
/// in place when the struct moves). Used on the launching thread only.
struct ProfLaunch {
    p: acc_prof::Profiler,
    _name: CString,
    ev: acc_prof::LaunchEvent,
}

impl ProfLaunch {
    fn start(kernel: &str, d: &Dims) -> Option<ProfLaunch> {
        let p = acc_prof::current()?;
        let name = CString::new(kernel).unwrap_or_default();
        let dims = [d.gangs as usize, d.workers as usize, d.vector as usize];
        let ev = acc_prof::Profiler::launch_event(&name, dims);
        let mut me = ProfLaunch { p, _name: name, ev };
        me.p.launch(acc_prof::EV_ENQUEUE_LAUNCH_START, &mut me.ev);
        Some(me)
    }

    fn end(mut self) {
        self.p.launch(acc_prof::EV_ENQUEUE_LAUNCH_END, &mut self.ev);
    }
}

/// After a successful launch of `f` on `s`: a synchronous one (`waited`: ordered after
/// the deferred copies) is waited for and its trial finished with the host's time since
/// `wall`; a queued one's trial is read by a later launch once the queue has run it.
fn complete(
    dev: &Core,
    f: &Kernel,
    s: Stream,
    waited: Option<Waited>,
    trial: Option<Trial>,
    wall: Option<Instant>,
) -> Result<()> {
    match waited {
        Some(w) => {
            // Waiting on the legacy default stream of the current context.
            let synced = s.synchronize();
            dev.launch().copy_order().synced(&w, dev.launch().events());
            if let (Some(t), Some(w)) = (trial, wall) {
                let wall_ns = u64::try_from(w.elapsed().as_nanos()).unwrap_or(u64::MAX);
                autotune::finish(dev, f, t, synced.is_ok(), true, wall_ns);
            }
            synced.map_err(kernel_error)
        }
        None => {
            if let Some(t) = trial {
                autotune::defer(f, t);
            }
            Ok(())
        }
    }
}

/// Launches `f` as `launch` asks on `stream` (CUDA's legacy default stream when
/// `None`, ordered after deferred copies and then waited for; a queue's stream is
/// ordered by the caller). Returns the dimensions launched (gangs, workers, vector),
/// which libgomp's `dims` array is updated with.
pub fn exec(
    dev: &Core,
    f: &Kernel,
    launch: &AccLaunch,
    stream: Option<Stream>,
) -> Result<[u32; 3]> {
    let kind = if stream.is_some() {
        Kind::AccAsync
    } else {
        Kind::AccCompute
    };
    let _range = nvtx::range_c(kind, None, f.nvtx.as_ref().map(|l| &*l.acc));
    let (d, trial) = shape(dev, f, launch.dims, stream.is_some())?;
    let func = f.code(dev)?.func;
    let s = stream.unwrap_or(Stream::LEGACY);
    let waited = if stream.is_none() {
        Some(dev.launch().order(s)?)
    } else {
        None
    };
    let prof = ProfLaunch::start(&f.name, &d);
    let obs = dev.observe();
    let timer = obs.and_then(|o| {
        o.start(
            s,
            &f.name,
            format!("{}x{}x{}", d.gangs, d.workers, d.vector),
        )
    });
    let mut arg = launch.devaddrs;
    let mut params: [*mut c_void; 1] = [(&mut arg as *mut u64).cast()];
    // The host time of the launch and its wait, for a synchronous warm-up launch.
    let wall = trial.as_ref().map(|_| Instant::now());
    if let Some(t) = &trial {
        t.begin(s);
    }
    // SAFETY: the entry point takes one u64; the driver copies it from the live local.
    let launched = unsafe {
        s.launch(
            func,
            (d.gangs, 1, 1),
            (d.vector, d.workers, 1),
            0,
            params.as_mut_ptr(),
        )
    };
    if let Some(t) = &trial {
        t.end(s);
    }
    if let Some(p) = prof {
        p.end();
    }
    if let (Some(o), Some(t)) = (obs, &timer) {
        o.stop(t, s);
    }
    if let Err(e) = launched {
        if let Some(t) = trial {
            autotune::finish(dev, f, t, false, false, 0);
        }
        return Err(e);
    }
    complete(dev, f, s, waited, trial, wall)?;
    if let (Some(o), Some(t)) = (obs, timer) {
        // Read now if complete (no queue), else when found complete later.
        o.harvest();
        o.finish(t);
    }
    Ok([d.gangs, d.workers, d.vector])
}
