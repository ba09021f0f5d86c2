//! `async_run` on a gcn device: the device's async thread ([`AsyncQueue`], as nvptx's),
//! started on the first `async_run` with its own 64-packet HSA queue, runs the launches
//! ([`Pending`]) in order and reports each one's completion to libgomp
//! ([`task_completion`]); the launch itself is `run.rs`'s (`Launcher::launch_async`).
//!
//! Ownership: the launcher owns its [`AsyncQueue`]; the thread holds an `Arc` of the
//! launcher and is stopped and joined by [`AsyncQueue::stop`] (unless that runs on the
//! thread, when the device's kernel called `exit`). Thread-safety: pending launches
//! reach the thread through a bounded channel.

use super::protocol::Dims;
use crate::hsa::safe::memory::Allocation;
use crate::image::Kernel;
use gomp_plugin::libgomp::report;
use gomp_plugin::libgomp::target;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::thread::{JoinHandle, ThreadId};

/// Packets of each async queue (and entries of the async software ring).
pub const ASYNC_QUEUE_SIZE: u32 = 64;

/// The async queue: a thread running launches in order, then their completion. Owned
/// by the device's launcher (`Launcher::launch_async` starts it, `Launcher::close`
/// stops it); `Send`.
pub struct AsyncQueue {
    /// The thread's end of the bounded channel of launches.
    pub(super) tx: SyncSender<Pending>,
    /// The thread, joined by [`AsyncQueue::stop`].
    pub(super) handle: JoinHandle<()>,
    /// The thread's id (a stop on the thread itself does not join it).
    pub(super) id: ThreadId,
}

/// One `async_run` launch, queued for the thread, which owns it until it has run.
pub struct Pending {
    /// The kernel, held until the launch has run.
    pub(super) kernel: Arc<Kernel>,
    /// The kernel's argument (libgomp's `tgt_vars`).
    pub(super) vars: u64,
    /// The kernarg block holding `vars` (claimed from a reservation), if any.
    pub(super) table_block: Option<Allocation>,
    /// The grid.
    pub(super) dims: Dims,
    /// What libgomp's completion callback is told.
    pub(super) async_data: usize,
}

impl AsyncQueue {
    /// Stops the thread after its pending launches and joins it (unless called on it).
    pub(super) fn stop(self) {
        drop(self.tx);
        if self.id != std::thread::current().id() {
            let _ = self.handle.join();
        }
    }
}

/// Tells libgomp that the `async_run` with `async_data` has completed.
pub(super) fn task_completion(async_data: usize) {
    if !target::task_completion(async_data) {
        report::fatal("async_run: libgomp lacks GOMP_PLUGIN_target_task_completion");
    }
}
