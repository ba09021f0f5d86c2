//! OpenACC on a gcn device (docs/gcn-launch.md §3 "OpenACC", §5; the entry points'
//! contract in docs/plugin-abi.md §2): kernel execution with the OpenACC grid and
//! kernarg block (the launch of `run.rs` with [`Kind::OpenAcc`]: `dummy1` = libgomp's
//! device `devaddrs` block, no team arena), per-thread data, properties, and the async
//! queues.
//!
//! **Async queues.** Each [`AccQueue`] has its own 64-packet HSA queue and a thread
//! that runs its jobs in order, one after the other: kernel launches (the same blocking
//! launch as `openacc_exec`, console and exit handling included), copies (the
//! synchronous copy code of `memory.rs`), callbacks, and waits on another queue
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

use crate::device::Device;
use crate::executable::Kernel;
use crate::hsa::queue::Queue;
use crate::hsa::sys::*;
use crate::hsa::{self, region, runtime, system};
use crate::launch::{self, Dims, Kind};
use crate::plugin::Gcn;
use crate::run::ASYNC_QUEUE_SIZE;
use gomp_plugin::blocks::DevPtr;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::kernels::Live;
use gomp_plugin::libgomp::report;
use gomp_plugin::openacc::{AccLaunch, AccProperty};
use gomp_plugin::sync::{Lock, Wait};
use gomp_plugin::{DeviceCore, OpenAcc, Plugin};
use std::ffi::{c_int, c_void, CStr, CString};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{JoinHandle, ThreadId};

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

/// One job of a queue.
enum Job {
    Launch {
        kernel: Arc<Kernel>,
        vars: u64,
        dims: Dims,
    },
    HostToDev {
        dst: DevPtr,
        src: usize,
        n: usize,
    },
    DevToHost {
        dst: usize,
        src: DevPtr,
        n: usize,
    },
    DevToDev {
        dst: DevPtr,
        src: DevPtr,
        n: usize,
    },
    Callback {
        f: unsafe extern "C" fn(*mut c_void),
        data: usize,
    },
    /// Waits until `on` has done `upto` jobs.
    Wait {
        on: Arc<Progress>,
        upto: u64,
    },
}

/// Jobs queued and done on a queue.
#[derive(Default)]
struct Progress {
    counts: Mutex<(u64, u64)>,
    cv: Condvar,
}

impl Progress {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, u64)> {
        self.counts.locked()
    }

    fn wait_for(&self, upto: u64) {
        let mut c = self.lock();
        while c.1 < upto {
            c = self.cv.wait_locked(c);
        }
    }

    fn done_one(&self) {
        self.lock().1 += 1;
        self.cv.notify_all();
    }
}

/// An OpenACC async queue (`struct goacc_asyncqueue`).
pub struct AccQueue {
    dev: Arc<Device>,
    progress: Arc<Progress>,
    tx: Mutex<Option<Sender<Job>>>,
    thread: Mutex<Option<(JoinHandle<()>, ThreadId)>>,
}

impl AccQueue {
    /// A queue on `dev`: its HSA queue and its thread.
    pub fn create(dev: Arc<Device>) -> Result<AccQueue> {
        let q = dev.launcher.new_queue(ASYNC_QUEUE_SIZE)?;
        let (tx, rx) = channel::<Job>();
        let progress = Arc::new(Progress::default());
        let (d, p) = (Arc::clone(&dev), Arc::clone(&progress));
        let handle = std::thread::Builder::new()
            .name(format!("gcn{}-acc", dev.ord))
            .spawn(move || {
                for job in rx {
                    run_job(&d, &q, job);
                    p.done_one();
                }
                drop(q);
            })
            .map_err(|e| Error::invalid(format!("cannot start an OpenACC queue thread: {e}")))?;
        let id = handle.thread().id();
        log::debug!("device {}: OpenACC async queue created", dev.ord);
        Ok(AccQueue {
            dev,
            progress,
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some((handle, id))),
        })
    }

    fn push(&self, job: Job) -> Result<()> {
        let mut c = self.progress.lock();
        let tx = self.tx.locked();
        tx.as_ref()
            .ok_or_else(|| Error::invalid("OpenACC async queue: destroyed"))?
            .send(job)
            .map_err(|_| Error::invalid("OpenACC async queue: its thread has stopped"))?;
        c.0 += 1;
        Ok(())
    }

    fn queued(&self) -> u64 {
        self.progress.lock().0
    }
}

/// Runs one job on a queue's thread; errors are fatal (as the stock plugin's queue).
fn run_job(dev: &Device, q: &Queue, job: Job) {
    let r = match job {
        Job::Launch { kernel, vars, dims } => dev
            .launcher
            .launch(dev.ord, Some(q), &kernel, vars, dims, Kind::OpenAcc)
            .map(|e| dev.launcher.finish(e)),
        // SAFETY: libgomp keeps the host buffer alive until the queue has run the copy.
        Job::HostToDev { dst, src, n } => unsafe {
            dev.memory.host2dev(dst, src as *const c_void, n)
        },
        // SAFETY: as above.
        Job::DevToHost { dst, src, n } => unsafe {
            dev.memory.dev2host(dst as *mut c_void, src, n)
        },
        Job::DevToDev { dst, src, n } => dev.memory.dev2dev(dst, src, n),
        Job::Callback { f, data } => {
            // SAFETY: libgomp's callback with its own data.
            unsafe { f(data as *mut c_void) };
            Ok(())
        }
        Job::Wait { on, upto } => {
            on.wait_for(upto);
            Ok(())
        }
    };
    if let Err(e) = r {
        report::fatal(&e.to_string());
    }
}

impl gomp_plugin::AccQueue for AccQueue {
    /// Lets the queued work finish, then stops the thread and destroys the HSA queue.
    fn destroy(self) -> Result<()> {
        drop(self.tx.locked().take());
        if let Some((h, id)) = self.thread.locked().take() {
            if id == std::thread::current().id() {
                return Err(Error::invalid(
                    "openacc_async_destruct: called from the queue's own callback",
                ));
            }
            h.join()
                .map_err(|_| Error::invalid("OpenACC async queue: its thread panicked"))?;
        }
        log::debug!("device {}: OpenACC async queue destroyed", self.dev.ord);
        Ok(())
    }

    fn test(&self) -> Result<bool> {
        let c = self.progress.lock();
        Ok(c.1 >= c.0)
    }

    fn synchronize(&self) -> Result<()> {
        let upto = self.queued();
        self.progress.wait_for(upto);
        Ok(())
    }

    fn serialize(&self, later: &Self) -> Result<()> {
        if std::ptr::eq(self, later) {
            return Ok(());
        }
        let upto = self.queued();
        later.push(Job::Wait {
            on: Arc::clone(&self.progress),
            upto,
        })
    }

    fn callback(&self, f: unsafe extern "C" fn(*mut c_void), data: *mut c_void) -> Result<()> {
        self.push(Job::Callback {
            f,
            data: data as usize,
        })
    }

    unsafe fn host2dev(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()> {
        self.push(Job::HostToDev {
            dst: dst as DevPtr,
            src: src as usize,
            n,
        })
    }

    unsafe fn dev2host(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()> {
        self.push(Job::DevToHost {
            dst: dst as usize,
            src: src as DevPtr,
            n,
        })
    }

    fn dev2dev(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()> {
        self.push(Job::DevToDev {
            dst: dst as DevPtr,
            src: src as DevPtr,
            n,
        })
    }
}

/// The device of a synchronous `openacc_exec`: the calling thread's (its OpenACC
/// thread data), else device `loaded_on`, the one that loaded the kernel.
fn exec_device(loaded_on: i32) -> Result<Arc<Device>> {
    let ord = Gcn::current_thread_data().map_or(loaded_on, |t| t.ord);
    Gcn::registry().get(ord)
}

impl OpenAcc for Gcn {
    type Queue = AccQueue;
    type ThreadData = ThreadData;

    /// The OpenACC grid from `dims` and the kernel's compile-time dimensions
    /// ([`launch::acc_dims`]), then the launch with the OpenACC kernarg block; without
    /// a queue it waits (console, exit handling), with one it is queued.
    fn exec(
        kernel: Live<'_, Kernel>,
        launch: &AccLaunch,
        queue: Option<&AccQueue>,
    ) -> Result<Option<[u32; 3]>> {
        let k = kernel.kernel;
        let d = launch.dims;
        let dev = match queue {
            Some(q) => Arc::clone(&q.dev),
            None => exec_device(kernel.ord)?,
        };
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
                let e =
                    dev.launcher
                        .launch(dev.ord, None, k, launch.devaddrs, grid, Kind::OpenAcc)?;
                dev.launcher.finish(e);
            }
            Some(q) => q.push(Job::Launch {
                kernel: Arc::clone(k),
                vars: launch.devaddrs,
                dims: grid,
            })?,
        }
        Ok(None)
    }

    fn thread_data(ord: c_int) -> Result<ThreadData> {
        crate::discovery::agent(ord)?;
        Ok(ThreadData { ord })
    }

    fn queue(ord: c_int) -> Result<AccQueue> {
        AccQueue::create(Gcn::registry().get(ord)?)
    }

    /// MEMORY: the size of the device's coarse-grained region; NAME: the agent's name;
    /// VENDOR: the agent's vendor; DRIVER: "HSA Runtime <major>.<minor>"; FREE_MEMORY
    /// and anything else: 0 (as the stock plugin).
    fn property(ord: c_int, prop: u32) -> Result<AccProperty> {
        let Ok(a) = crate::discovery::agent(ord) else {
            return Ok(AccProperty::None);
        };
        let rt =
            runtime::loaded().ok_or_else(|| Error::invalid("the HSA runtime is not loaded"))?;
        let agent = hsa_agent_t { handle: a.handle };
        Ok(match prop {
            PROP_MEMORY => {
                let r = crate::memory::find_regions(rt, agent)?.device;
                AccProperty::Size(region::size(rt, r)?)
            }
            PROP_NAME => AccProperty::Str(cached(ord, prop, || Ok(a.name.clone()))?),
            PROP_VENDOR => {
                AccProperty::Str(cached(ord, prop, || hsa::agent::vendor_name(rt, agent))?)
            }
            PROP_DRIVER => AccProperty::Str(cached(ord, prop, || {
                let (major, minor) = system::version(rt)?;
                Ok(format!("HSA Runtime {major}.{minor}"))
            })?),
            PROP_FREE_MEMORY => AccProperty::None,
            _ => AccProperty::None,
        })
    }
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
