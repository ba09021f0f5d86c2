//! OpenACC async queues of a gcn device: [`AccQueue`] (`struct goacc_asyncqueue`), its
//! jobs and its thread (see the module above for the design: one 64-packet HSA queue
//! and one thread per queue, jobs run in order, a counter of jobs queued and done).
//!
//! Ownership: an [`AccQueue`] holds its device (`Arc<OpenDevice>`), owns its thread
//! (joined by `destroy`) and, through the thread, its HSA queue. Thread-safety: a queue
//! may be used from any thread; its counter is behind a mutex, its jobs go through a
//! channel to its thread.

use crate::hsa::safe::aql_queue::Queue;
use crate::hsa::safe::memory::Allocation;
use crate::image::Kernel;
use crate::launch::async_queue::ASYNC_QUEUE_SIZE;
use crate::launch::{Dims, Kind};
use crate::open::OpenDevice;
use gomp_plugin::blocks::DevPtr;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::report;
use gomp_plugin::sync::{Lock, Wait};
use gomp_plugin::{Device, DeviceCore};
use std::ffi::c_void;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{JoinHandle, ThreadId};

/// One job of a queue.
pub(super) enum Job {
    Launch {
        kernel: Arc<Kernel>,
        vars: u64,
        /// The kernarg block holding the table at `vars`, claimed when the job was
        /// queued (libgomp 17, [`crate::launch::launch_resources::LaunchResources::reserve_table`]).
        table_block: Option<Allocation>,
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
pub(super) struct Progress {
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
    dev: Arc<OpenDevice>,
    progress: Arc<Progress>,
    tx: Mutex<Option<Sender<Job>>>,
    thread: Mutex<Option<(JoinHandle<()>, ThreadId)>>,
}

impl AccQueue {
    /// A queue on open device `dev`: its HSA queue and its thread.
    pub fn create(dev: Arc<OpenDevice>) -> Result<Self> {
        let q = dev.launcher().new_queue(ASYNC_QUEUE_SIZE)?;
        let (tx, rx) = channel::<Job>();
        let progress = Arc::new(Progress::default());
        let (d, p) = (Arc::clone(&dev), Arc::clone(&progress));
        let handle = std::thread::Builder::new()
            .name(format!("gcn{}-acc", dev.ord()))
            .spawn(move || {
                for job in rx {
                    run_job(&d, &q, job);
                    p.done_one();
                }
                drop(q);
            })
            .map_err(|e| Error::invalid(format!("cannot start an OpenACC queue thread: {e}")))?;
        let id = handle.thread().id();
        log::debug!("device {}: OpenACC async queue created", dev.ord());
        Ok(AccQueue {
            dev,
            progress,
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some((handle, id))),
        })
    }

    /// The device the queue runs on.
    pub fn device(&self) -> &Arc<OpenDevice> {
        &self.dev
    }

    pub(super) fn push(&self, job: Job) -> Result<()> {
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
fn run_job(dev: &OpenDevice, q: &Queue, job: Job) {
    let r = match job {
        Job::Launch {
            kernel,
            vars,
            table_block,
            dims,
        } => dev
            .launcher()
            .launch_in(
                dev.ord(),
                Some(q),
                &kernel,
                vars,
                table_block,
                dims,
                Kind::OpenAcc,
            )
            .map(|e| dev.launcher().finish(e)),
        // SAFETY: libgomp keeps the host buffer alive until the queue has run the copy.
        Job::HostToDev { dst, src, n } => unsafe {
            dev.core().host2dev(dst, src as *const c_void, n)
        },
        // SAFETY: as above.
        Job::DevToHost { dst, src, n } => unsafe {
            dev.core().dev2host(dst as *mut c_void, src, n)
        },
        Job::DevToDev { dst, src, n } => dev.core().dev2dev(dst, src, n),
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
        log::debug!("device {}: OpenACC async queue destroyed", self.dev.ord());
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
