//! OpenACC on a gcn device (docs/gcn-launch.md §3 "OpenACC", §5; the entry points'
//! contract in docs/plugin-abi.md §2): kernel execution with the OpenACC grid and
//! kernarg block (the launch of `launch/run.rs` with [`Kind::OpenAcc`]: `dummy1` = libgomp's
//! device `devaddrs` block, no team arena), per-thread data, properties, and the async
//! queues.
//!
//! **Async queues.** Each [`AccQueue`] has its own 64-packet HSA queue and a thread
//! that runs its jobs in order, one after the other: kernel launches (the same blocking
//! launch as `openacc_exec`, console and exit handling included), copies (the
//! synchronous copy code of `device/`), callbacks, and waits on another queue
//! (`serialize`). A counter of jobs queued and done answers `test` and `synchronize`.
//! `destroy` lets the thread finish what is queued, then joins it and destroys the HSA
//! queue. No HSA signal handlers are used (as the stock plugin's `drain_queue`).
//!
//! Not offered: the CUDA-interop entry points (`openacc_cuda_*`: the stock gcn plugin
//! does not export them either).
//!
//! Thread-safety: a queue may be used from any thread; its counter is behind a mutex,
//! its jobs go through a channel to its thread. **Unverified on hardware**: tested
//! against the stand-in runtime of tests/fallback/stub_libhsa.c.

pub mod queue;

pub use queue::AccQueue;
use queue::Job;

use crate::hsa::safe::{agent, region, system};
use crate::hsa::sys::*;
use crate::hsa::table;
use crate::image::Kernel;
use crate::launch::{self, Kind};
use crate::open::OpenDevice;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::kernels::Live;
use gomp_plugin::openacc::{AccLaunch, AccProperty};
use gomp_plugin::sync::Lock;
use std::ffi::{c_int, CStr, CString};
use std::sync::{Arc, Mutex};

/// `GOACC_PROPERTY_MEMORY`.
pub const PROP_MEMORY: u32 = 1;
/// `GOACC_PROPERTY_FREE_MEMORY`.
pub const PROP_FREE_MEMORY: u32 = 2;
/// `GOACC_PROPERTY_NAME`.
pub const PROP_NAME: u32 = 0x10001;
/// `GOACC_PROPERTY_VENDOR`.
pub const PROP_VENDOR: u32 = 0x10002;
/// `GOACC_PROPERTY_DRIVER`.
pub const PROP_DRIVER: u32 = 0x10003;

/// Per-thread data: the device the thread's OpenACC work goes to.
pub struct ThreadData {
    /// libgomp's device number.
    pub ord: i32,
}

/// The OpenACC grid from `dims` and the kernel's compile-time dimensions
/// ([`launch::acc_dims`]), then the launch with the OpenACC kernarg block; without
/// a queue it waits (console, exit handling), with one it is queued. `dev` is the
/// queue's device, else the calling thread's.
pub fn exec(
    dev: &OpenDevice,
    kernel: Live<'_, Kernel>,
    launch: &AccLaunch,
    queue: Option<&AccQueue>,
) -> Result<Option<[u32; 3]>> {
    let k = kernel.kernel;
    let d = launch.dims;
    let grid = launch::acc_dims(d, k.oacc_dims, dev.launcher.cu);
    log::debug!(
        "device {}: OpenACC kernel {}: dims {d:?}, compile-time {:?}: {} gang(s) x {} worker(s) x 64",
        dev.ord,
        k.name,
        k.oacc_dims,
        grid.gdims[0],
        grid.gdims[2]
    );
    match queue {
        None => {
            let e = dev
                .launcher
                .launch(dev.ord, None, k, launch.devaddrs, grid, Kind::OpenAcc)?;
            dev.launcher.finish(e);
        }
        Some(q) => q.push(Job::Launch {
            kernel: Arc::clone(k),
            vars: launch.devaddrs,
            // Claimed now: libgomp may reuse the session once this returns.
            table_block: dev.launcher.resources.claim_table(launch.devaddrs),
            dims: grid,
        })?,
    }
    Ok(None)
}

/// `openacc_create_thread_data`: the thread's device, checked to exist.
pub fn thread_data(ord: c_int) -> Result<ThreadData> {
    crate::discovery::agent(ord)?;
    Ok(ThreadData { ord })
}

/// MEMORY: the size of the device's coarse-grained region; NAME: the agent's name;
/// VENDOR: the agent's vendor; DRIVER: "HSA Runtime <major>.<minor>"; FREE_MEMORY
/// and anything else: 0 (as the stock plugin).
pub fn property(ord: c_int, prop: u32) -> Result<AccProperty> {
    let Ok(a) = crate::discovery::agent(ord) else {
        return Ok(AccProperty::None);
    };
    let rt = table::loaded().ok_or_else(|| Error::invalid("the HSA runtime is not loaded"))?;
    let agent = hsa_agent_t { handle: a.handle };
    Ok(match prop {
        PROP_MEMORY => {
            let r = crate::device::find_regions(rt, agent)?.device;
            AccProperty::Size(region::size(rt, r)?)
        }
        PROP_NAME => AccProperty::Str(cached(ord, prop, || Ok(a.name.clone()))?),
        PROP_VENDOR => AccProperty::Str(cached(ord, prop, || agent::vendor_name(rt, agent))?),
        PROP_DRIVER => AccProperty::Str(cached(ord, prop, || {
            let (major, minor) = system::version(rt)?;
            Ok(format!("HSA Runtime {major}.{minor}"))
        })?),
        PROP_FREE_MEMORY => AccProperty::None,
        _ => AccProperty::None,
    })
}

/// The string property `prop` of device `ord`, computed once and kept for the process
/// (libgomp hands the pointer to the program).
fn cached(ord: i32, prop: u32, make: impl FnOnce() -> Result<String>) -> Result<&'static CStr> {
    static CACHE: Mutex<Vec<(i32, u32, &'static CStr)>> = Mutex::new(Vec::new());
    let mut c = CACHE.locked();
    if let Some(&(_, _, s)) = c.iter().find(|(o, p, _)| *o == ord && *p == prop) {
        return Ok(s);
    }
    let s = make()?.replace('\0', "");
    let s: &'static CStr = Box::leak(CString::new(s).unwrap_or_default().into_boxed_c_str());
    c.push((ord, prop, s));
    Ok(s)
}
