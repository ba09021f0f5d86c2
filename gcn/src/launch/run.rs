//! Running kernels on a gcn device (docs/gcn-launch.md §1-§5): the [`Launcher`] of a
//! device, its HSA queues, one AQL dispatch, the wait for its completion signal with
//! the console drained meanwhile, and `async_run`. Beside it, by concept: the launch's
//! geometry and packet (`geometry.rs`), the kernarg blocks and ephemeral memories kept
//! between launches (`launch_resources.rs`), how a launch is refused or a kernel's end
//! acted on (`failure.rs`), reverse offload (`reverse.rs`) and `async_run`'s thread
//! (`async_queue.rs`).
//!
//! **Completion.** The stock plugin waits in 1 ms slices (`hsa_signal_wait_acquire`
//! with a 1 ms timeout) and drains the ring between them. Here the wait is the same
//! blocking wait (completion wakes it at once), but its timeout adapts: 20 µs after a
//! pass that found output or a reverse-offload request, doubling while the ring stays
//! idle up to 1 ms for images with a reverse-offload table and 4 ms otherwise. The
//! ring must still be polled: the device writes it without signalling the host, and a
//! device writer waits for the host once 1024 slots are pending. A kernel that prints
//! nothing thus costs one wake-up per 4 ms instead of one per millisecond.
//!
//! **Tables in kernarg memory (libgomp 17).** `session_allocate_target_var_table` asks
//! for host memory that libgomp writes the launch's table of mapped-variable addresses
//! into; [`LaunchResources::reserve_table`] (`launch_resources.rs`) takes a kernarg
//! block with room for it after the output ring ([`TABLE_OFFSET`]) and answers that
//! place, so the table reaches the GPU with the kernarg block (host-coherent memory the
//! kernel reads directly) instead of in libgomp's host-to-device copy. The block stays
//! reserved (out of the cache) until the launch that passes the table as its argument
//! claims it ([`LaunchResources::claim_table`], called by every launch entry before it
//! returns, also for queued launches); the
//! launch then uses that block and gives it back to the cache when it ends or fails. A
//! reservation no launch claimed is given back when the next reservation is made for
//! the same session block (libgomp reuses the block only once the session ended) and
//! at [`Launcher::close`].
//!
//! Ownership: a [`Launcher`] belongs to its open device; it owns the queues and its
//! [`LaunchResources`] (the cached kernarg blocks, the reserved ones and the ephemeral
//! blocks), freed by [`Launcher::close`]. The async
//! thread holds an `Arc` of the device and is stopped and joined by `close` (unless
//! `close` runs on that thread, when the device's kernel called `exit`).
//! Thread-safety: launches from any number of host threads share the synchronous queue
//! (its write index is atomic); the caches are behind mutexes.
//!
//! **Unverified on hardware**: run against the stand-in runtime of
//! tests/fallback/stub_libhsa.c, which checks each packet and kernarg block against
//! the spec and plays the device side of the ring.

use super::async_queue::{task_completion, AsyncQueue, Pending, ASYNC_QUEUE_SIZE};
use super::console::Ring;
use super::failure;
use super::geometry::Geometry;
use super::launch_resources::LaunchResources;
use super::protocol::{self, *};
use super::reverse;
use crate::config::Config;
use crate::hsa::safe::aql_queue::Queue;
use crate::hsa::safe::memory::Allocation;
use crate::hsa::safe::signal::Signal;
use crate::hsa::safe::{agent, system};
use crate::hsa::sys::*;
use crate::hsa::table::Runtime;
use crate::image::Kernel;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::host;
use gomp_plugin::libgomp::report;
use gomp_plugin::libgomp::target::RevCall;
use gomp_plugin::libgomp::version::{Detected, Libgomp};
use gomp_plugin::settings::ProcessSettings;
use gomp_plugin::sync::Lock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};

/// What a device needs to launch kernels.
pub struct Launcher {
    rt: &'static Runtime,
    agent: hsa_agent_t,
    /// The agent's ISA name.
    pub isa: String,
    /// Compute units (`HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT`, 64 if unknown).
    pub cu: u32,
    /// The process's settings ([`Config::process`]).
    pub cfg: Config,
    /// The GCC release of the host libgomp (LDS layout).
    pub gcc: u32,
    ticks_per_us: u64,
    queue: Queue,
    /// The blocks launches use: kernarg blocks (cached or reserved for a table),
    /// ephemeral memory, module heaps.
    pub resources: LaunchResources,
    async_queue: Mutex<Option<AsyncQueue>>,
    /// Launches run since open (for GOMP_DEBUG).
    launches: AtomicU32,
}

impl Launcher {
    /// At `init_device`: the agent's properties, the process settings and the synchronous
    /// queue (the largest the agent allows).
    pub fn open(
        rt: &'static Runtime,
        agent: hsa_agent_t,
        isa: &str,
        regions: &crate::device::Regions,
    ) -> Result<Launcher> {
        let cu = agent::compute_units(rt, agent)
            .ok()
            .filter(|&n| n != 0)
            .unwrap_or(64);
        let max = agent::queue_max_size(rt, agent)?;
        let freq = system::timestamp_frequency(rt)
            .ok()
            .filter(|&f| f != 0)
            .unwrap_or(1_000_000_000);
        let gcc = match host::detected() {
            Detected::Known(v) => v.gcc(),
            _ => Libgomp::V16.gcc(),
        };
        let sessions = matches!(host::detected(), Detected::Known(v) if v.uses_sessions());
        let queue = Queue::create(rt, agent, max)?;
        let cfg = Config::process().clone();
        Ok(Launcher {
            rt,
            agent,
            isa: isa.to_string(),
            cu,
            resources: LaunchResources::new(
                rt,
                agent,
                regions.kernarg,
                regions.device,
                cfg.heap_size,
                sessions,
            ),
            cfg,
            gcc,
            ticks_per_us: (freq / 1_000_000).max(1),
            queue,
            async_queue: Mutex::new(None),
            launches: AtomicU32::new(0),
        })
    }

    /// Runs `k` with `vars` on `dims` through `queue` (the synchronous one unless
    /// given) and waits for it, draining the console; returns how it ended.
    /// `ord` names the device in messages; when the kernel's image has a reverse-offload
    /// table (`Kernel::reverse_offload`), the console is polled more often. A table at
    /// `vars` in a reserved kernarg block ([`LaunchResources::reserve_table`]) is claimed
    /// and the launch uses that block.
    pub fn launch(
        &self,
        ord: i32,
        queue: Option<&Queue>,
        k: &Kernel,
        vars: u64,
        dims: Dims,
        kind: Kind,
    ) -> Result<Ending> {
        let block = self.resources.claim_table(vars);
        self.launch_in(ord, queue, k, vars, block, dims, kind)
    }

    /// [`Launcher::launch`] with the kernarg block already claimed (`table_block`: the
    /// block `vars` lies in, else `None` for a cached one); the block goes back to the
    /// cache when the launch ends or fails.
    #[allow(clippy::too_many_arguments)]
    pub fn launch_in(
        &self,
        ord: i32,
        queue: Option<&Queue>,
        k: &Kernel,
        vars: u64,
        table_block: Option<Allocation>,
        dims: Dims,
        kind: Kind,
    ) -> Result<Ending> {
        if let Err(e) = failure::check_launchable(k) {
            self.resources.unclaim(table_block);
            return Err(e);
        }
        let geometry = Geometry::of(k, dims, kind, &self.isa, self.cu, &self.cfg, self.gcc);
        let lease = self.resources.lease(geometry.eph.total, table_block)?;
        let ring = lease.write_kernargs(k, vars, &geometry);
        let signal = Signal::create(self.rt, 1)?;
        signal.store_relaxed(1);
        let packet = geometry.packet(k, lease.kernargs(), &signal);
        // SAFETY: the kernel object is a loaded kernel's (its image stays loaded while
        // it runs); the kernarg block and the signal live until the wait below has seen
        // the completion.
        unsafe { queue.unwrap_or(&self.queue).dispatch(&packet) };
        let n = self.launches.fetch_add(1, Ordering::Relaxed) + 1;
        let (pd, eph) = (&geometry.pd, &geometry.eph);
        log::debug!(
            "launch {n}: kernel {} on device {}: {} team(s) x {} thread(s) (grid {:?}, work-group {:?}), LDS {}, arena {} x {}, stack {} per wavefront",
            k.name, ord, pd.grid[0], pd.grid[2], pd.grid, pd.wg, geometry.group, eph.arena, pd.grid[0], eph.stack
        );
        self.wait(ord, k.reverse_offload, &ring, &signal);
        let rv = ring.return_value();
        drop(lease);
        drop(signal);
        Ok(protocol::decode_return(rv))
    }

    /// Waits for the completion signal, draining the ring (see the module comment).
    fn wait(&self, ord: i32, rev_table: bool, ring: &Ring, signal: &Signal) {
        let cap_us: u64 = if rev_table { 1000 } else { 4000 };
        let mut timeout_us = 20u64;
        let mut rev = |r: RevCall| reverse::handle(ord, r);
        while signal.wait_below(1, timeout_us * self.ticks_per_us) >= 1 {
            let d = ring.drain(false, &mut rev);
            timeout_us = if d.slots > 0 {
                20
            } else {
                (timeout_us * 2).min(cap_us)
            };
        }
        ring.drain(true, &mut rev);
    }

    /// Acts on how a kernel ended ([`failure::finish`]).
    pub fn finish(&self, ending: Ending) {
        failure::finish(ending, self.cfg.gcn_debug);
    }

    /// A new HSA queue of `size` packets on the agent (an OpenACC async queue's).
    pub fn new_queue(&self, size: u32) -> Result<Queue> {
        Queue::create(self.rt, self.agent, size)
    }

    /// `async_run`: queues the launch on the device's async thread (started, with its
    /// own 64-packet queue, on first use); its completion is reported to libgomp after
    /// it ran. Blocks while 64 launches are pending; a pending launch holds the kernel until it
    /// has run, and the kernarg block of a table at `vars` (claimed here, before this
    /// returns and libgomp may reuse the session) until it has run.
    pub fn launch_async(
        self: &Arc<Self>,
        ord: i32,
        kernel: Arc<Kernel>,
        vars: u64,
        dims: Dims,
        async_data: usize,
    ) -> Result<()> {
        let table_block = self.resources.claim_table(vars);
        let mut w = self.async_queue.locked();
        if w.is_none() {
            let q = Queue::create(self.rt, self.agent, ASYNC_QUEUE_SIZE)?;
            let (tx, rx) = sync_channel::<Pending>(ASYNC_QUEUE_SIZE as usize);
            let l = Arc::clone(self);
            let handle = std::thread::Builder::new()
                .name(format!("gcn{ord}-async"))
                .spawn(move || {
                    for j in rx {
                        let r = l.launch_in(
                            ord,
                            Some(&q),
                            &j.kernel,
                            j.vars,
                            j.table_block,
                            j.dims,
                            Kind::OpenMp,
                        );
                        match r {
                            Ok(e) => l.finish(e),
                            Err(e) => report::fatal(&e.to_string()),
                        }
                        task_completion(j.async_data);
                    }
                })
                .map_err(|e| Error::invalid(format!("cannot start the async thread: {e}")));
            let handle = match handle {
                Ok(h) => h,
                Err(e) => {
                    drop(w);
                    self.resources.unclaim(table_block);
                    return Err(e);
                }
            };
            let id = handle.thread().id();
            *w = Some(AsyncQueue { tx, handle, id });
        }
        let tx = w.as_ref().map(|w| w.tx.clone());
        drop(w);
        let job = Pending {
            kernel,
            vars,
            table_block,
            dims,
            async_data,
        };
        let Some(tx) = tx else {
            self.resources.unclaim(job.table_block);
            return Err(Error::invalid("async_run: no async thread"));
        };
        tx.send(job).map_err(|e| {
            self.resources.unclaim(e.0.table_block);
            Error::invalid("async_run: the async thread has stopped")
        })
    }

    /// Stops the async thread (after its pending launches), frees the kernarg and
    /// ephemeral blocks. The queues are destroyed with the launcher.
    pub fn close(&self) {
        if let Some(w) = self.async_queue.locked().take() {
            w.stop();
        }
        self.resources.close();
    }
}
