//! Running kernels on a gcn device (docs/gcn-launch.md §1-§5): the HSA queues, the
//! kernarg blocks (cached per device), the ephemeral memories (team arenas + stacks,
//! reused), one AQL dispatch, the wait for its completion signal with the console
//! drained meanwhile, the exit/abort decoding, reverse offload, and `async_run`'s queue
//! thread.
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
//! into; [`Launcher::reserve_table`] takes a kernarg block with room for it after the
//! output ring ([`TABLE_OFFSET`]) and answers that place, so the table reaches the GPU
//! with the kernarg block (host-coherent memory the kernel reads directly) instead of in
//! libgomp's host-to-device copy. The block stays reserved (out of the cache) until the
//! launch that passes the table as its argument claims it ([`Launcher::claim_table`],
//! called by every launch entry before it returns, also for queued launches); the
//! launch then uses that block and gives it back to the cache when it ends or fails. A
//! reservation no launch claimed is given back when the next reservation is made for
//! the same session block (libgomp reuses the block only once the session ended) and
//! at [`Launcher::close`].
//!
//! Ownership: a [`Launcher`] belongs to its open device; it owns the queues, the cached
//! kernarg blocks, the reserved ones and the ephemeral blocks, freed by
//! [`Launcher::close`]. The async
//! thread holds an `Arc` of the device and is stopped and joined by `close` (unless
//! `close` runs on that thread, when the device's kernel called `exit`).
//! Thread-safety: launches from any number of host threads share the synchronous queue
//! (its write index is atomic); the caches are behind mutexes.
//!
//! **Unverified on hardware**: run against the stand-in runtime of
//! tests/fallback/stub_libhsa.c, which checks each packet and kernarg block against
//! the spec and plays the device side of the ring.

use super::console::{RevRequest, Ring};
use super::protocol::{self, *};
use crate::config::Config;
use crate::hsa::safe::memory::{self, Allocation};
use crate::hsa::safe::queue::Queue;
use crate::hsa::safe::signal::Signal;
use crate::hsa::safe::{agent, system};
use crate::hsa::sys::*;
use crate::hsa::table::Runtime;
use crate::image::Kernel;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::host;
use gomp_plugin::libgomp::report;
use gomp_plugin::libgomp::target::{self, RevCall};
use gomp_plugin::libgomp::version::{Detected, Libgomp};
use gomp_plugin::sync::Lock;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, ThreadId};

/// Packets of each async queue (and entries of the async software ring).
pub const ASYNC_QUEUE_SIZE: u32 = 64;

/// A block of ephemeral memory (team arenas + stacks), reused across launches.
struct EphBlock {
    mem: Allocation,
    size: u64,
    in_use: AtomicBool,
}

/// The async queue: a thread running launches in order, then their completion.
struct Worker {
    tx: SyncSender<Job>,
    handle: JoinHandle<()>,
    id: ThreadId,
}

struct Job {
    kernel: Arc<Kernel>,
    vars: u64,
    /// The kernarg block holding `vars` (claimed from a reservation), if any.
    table_block: Option<Allocation>,
    dims: Dims,
    async_data: usize,
}

/// A kernarg block reserved for the table of the session at `session` (a libgomp
/// block's address, used only as a key), which lies at `table`.
struct Reserved {
    session: usize,
    table: u64,
    block: Allocation,
}

/// What one launch looks like: the packet's dimensions, its LDS size, its ephemeral
/// memory.
struct Shape {
    pd: PacketDims,
    group: u32,
    eph: Ephemeral,
}

impl Shape {
    /// The dispatch packet of a launch of `k` with kernarg block `kernargs`, completing
    /// on `signal` (header and setup words included).
    fn packet(
        &self,
        k: &Kernel,
        kernargs: *mut u8,
        signal: &Signal,
    ) -> hsa_kernel_dispatch_packet_t {
        let pd = &self.pd;
        hsa_kernel_dispatch_packet_t {
            header: HEADER,
            setup: pd.ndim,
            workgroup_size_x: pd.wg[0],
            workgroup_size_y: pd.wg[1],
            workgroup_size_z: pd.wg[2],
            reserved0: 0,
            grid_size_x: pd.grid[0],
            grid_size_y: pd.grid[1],
            grid_size_z: pd.grid[2],
            private_segment_size: k.meta.as_ref().map_or(0, |m| m.private_segment_fixed_size),
            group_segment_size: self.group,
            kernel_object: k.object,
            kernarg_address: kernargs.cast(),
            reserved2: 0,
            completion_signal: signal.raw(),
        }
    }
}

/// The kernarg block and ephemeral memory of one launch, given back to the launcher's
/// caches when dropped.
struct Lease<'a> {
    launcher: &'a Launcher,
    kernargs: Option<Allocation>,
    eph: Arc<EphBlock>,
}

impl Lease<'_> {
    /// The kernarg block's address (host-accessible, at least `KERNARG_BLOCK` bytes).
    fn kernargs(&self) -> *mut u8 {
        self.kernargs.as_ref().map_or(0, Allocation::addr) as *mut u8
    }

    /// Fills the kernarg block for `k` with `vars` (docs/gcn-launch.md §1) and resets
    /// its output ring, which it returns.
    fn write_kernargs(&self, k: &Kernel, vars: u64, shape: &Shape) -> Ring {
        let b = self.kernargs();
        let out = b.wrapping_add(KERNARGS_SIZE);
        let (eph, teams) = (&shape.eph, shape.pd.grid[0]);
        let arena_total = eph.arena as u64 * teams as u64;
        let mem = self.eph.mem.addr();
        // SAFETY: `b` is a kernarg block of at least KERNARG_BLOCK host-accessible bytes,
        // this lease's until it is dropped; the fields are at their spec offsets (a
        // table at TABLE_OFFSET, past the ring, is left as libgomp wrote it).
        let ring = unsafe {
            let w64 = |off: usize, v: u64| (b.add(off) as *mut u64).write_volatile(v);
            w64(KA_ARG, vars);
            w64(KA_OUT_PTR, out as u64);
            w64(KA_HEAP_PTR, k.heap);
            w64(KA_ARENA_PTR, if eph.arena > 0 { mem } else { 0 });
            w64(KA_STACK_PTR, mem + arena_total);
            (b.add(KA_ARENA_SIZE) as *mut i32).write_volatile(eph.arena as i32);
            (b.add(KA_STACK_SIZE) as *mut i32).write_volatile(eph.stack as i32);
            Ring::new(out)
        };
        ring.reset();
        ring
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.eph.in_use.store(false, Ordering::Release);
        if let Some(b) = self.kernargs.take() {
            self.launcher.kernargs.locked().push(b);
        }
    }
}

/// Refuses a kernel that cannot be launched: no kernel descriptor, or more explicit
/// kernel arguments than the protocol's one pointer.
fn check_launchable(k: &Kernel) -> Result<()> {
    if k.object == 0 {
        return Err(Error::invalid(format!(
            "GCN fatal error: kernel '{}' has no kernel descriptor in its code object: it cannot be launched",
            k.name
        )));
    }
    if k.meta
        .as_ref()
        .is_some_and(|m| m.kernarg_segment_size > MAX_EXPLICIT_KERNARGS)
    {
        return Err(Error::invalid(format!(
            "GCN fatal error: Unexpectedly large kernargs segment requested (kernel '{}')",
            k.name
        )));
    }
    Ok(())
}

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
    kernarg_region: Option<hsa_region_t>,
    data_region: hsa_region_t,
    queue: Queue,
    kernargs: Mutex<Vec<Allocation>>,
    /// Whether libgomp launches through sessions (17) and so may put tables in kernarg
    /// memory ([`Launcher::reserve_table`]); under 12-16 no table is ever reserved.
    sessions: bool,
    /// Kernarg blocks reserved for a session's table, not yet claimed by its launch.
    tables: Mutex<Vec<Reserved>>,
    ephemeral: Mutex<Vec<Arc<EphBlock>>>,
    worker: Mutex<Option<Worker>>,
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
        Ok(Launcher {
            rt,
            agent,
            isa: isa.to_string(),
            cu,
            cfg: Config::process().clone(),
            gcc,
            ticks_per_us: (freq / 1_000_000).max(1),
            kernarg_region: regions.kernarg,
            data_region: regions.device,
            queue,
            kernargs: Mutex::new(Vec::new()),
            sessions,
            tables: Mutex::new(Vec::new()),
            ephemeral: Mutex::new(Vec::new()),
            worker: Mutex::new(None),
            launches: AtomicU32::new(0),
        })
    }

    fn allocate(&self, region: hsa_region_t, size: usize, what: &str) -> Result<Allocation> {
        let block = Allocation::new(
            self.rt,
            region,
            size,
            ("hsa_memory_allocate", || format!(" ({what}, {size} bytes)")),
        )?;
        if region.handle == self.data_region.handle {
            block.assign_rw(self.agent)?;
        }
        Ok(block)
    }

    /// A module's heap: `GCN_HEAP_SIZE` bytes of device memory whose first word is its
    /// size (`struct heap`).
    pub fn new_heap(&self) -> Result<Allocation> {
        let size = self.cfg.heap_size;
        let h = self.allocate(self.data_region, size as usize, "module heap")?;
        h.write(0, &size.to_ne_bytes(), "hsa_memory_copy (heap size)")?;
        Ok(h)
    }

    /// A kernarg block of at least `size` bytes: a cached one, else a new one of `size`
    /// or the launcher's block size, whichever is larger.
    fn take_kernargs(&self, size: usize) -> Result<Allocation> {
        {
            let mut cache = self.kernargs.locked();
            if let Some(i) = cache.iter().rposition(|b| b.size() >= size) {
                return Ok(cache.swap_remove(i));
            }
        }
        let region = self.kernarg_region.ok_or_else(|| {
            Error::invalid("GCN fatal error: the agent has no kernarg memory region")
        })?;
        // Under sessions every block has room for a table of up to 4016 bytes
        // ([`table_block_size`]), so that any cached block serves a reservation.
        let least = if self.sessions {
            table_block_size(0)
        } else {
            KERNARG_BLOCK
        };
        self.allocate(region, size.max(least), "kernel arguments")
    }

    /// `session_allocate_target_var_table`: reserves a kernarg block with room for a
    /// table of `size` bytes for the session at `session` and answers where the table
    /// goes in it ([`TABLE_OFFSET`], 16-byte aligned). A reservation of an earlier
    /// session at the same address that no launch claimed is given back first.
    pub fn reserve_table(&self, session: usize, size: usize) -> Result<*mut c_void> {
        let stale = {
            let mut t = self.tables.locked();
            t.iter()
                .position(|r| r.session == session)
                .map(|i| t.swap_remove(i))
        };
        if let Some(r) = stale {
            log::debug!("session {session:#x}: the reserved table block of a session that did not launch goes back");
            self.kernargs.locked().push(r.block);
        }
        let block = self.take_kernargs(table_block_size(size))?;
        let table = block.addr() + TABLE_OFFSET as u64;
        self.tables.locked().push(Reserved {
            session,
            table,
            block,
        });
        Ok(table as *mut c_void)
    }

    /// The reserved kernarg block whose table is at `vars` (what a launch passes as its
    /// argument), taken out of the reservations; `None` for any other `vars`.
    pub fn claim_table(&self, vars: u64) -> Option<Allocation> {
        // Under libgomp 12-16 nothing is reserved: no lock on the launch path.
        if vars == 0 || !self.sessions {
            return None;
        }
        let mut t = self.tables.locked();
        let i = t.iter().position(|r| r.table == vars)?;
        Some(t.swap_remove(i).block)
    }

    /// Gives the block reserved for a table at `vars`, if any, back to the cache: the
    /// launch that was to claim it does not happen (a skipped kernel).
    pub fn release_table(&self, vars: u64) {
        self.unclaim(self.claim_table(vars));
    }

    /// Gives a claimed block back to the cache (its launch did not happen).
    pub fn unclaim(&self, block: Option<Allocation>) {
        if let Some(b) = block {
            self.kernargs.locked().push(b);
        }
    }

    fn take_ephemeral(&self, size: u64) -> Result<Arc<EphBlock>> {
        let mut list = self.ephemeral.locked();
        for b in list.iter() {
            if b.size >= size
                && b.in_use
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return Ok(b.clone());
            }
        }
        let mem = self.allocate(self.data_region, size as usize, "team arenas and stacks")?;
        let b = Arc::new(EphBlock {
            mem,
            size,
            in_use: AtomicBool::new(true),
        });
        list.push(b.clone());
        Ok(b)
    }

    /// Runs `k` with `vars` on `dims` through `queue` (the synchronous one unless
    /// given) and waits for it, draining the console; returns how it ended.
    /// `ord` names the device in messages; when the kernel's image has a reverse-offload
    /// table (`Kernel::reverse_offload`), the console is polled more often. A table at
    /// `vars` in a reserved kernarg block ([`Launcher::reserve_table`]) is claimed and
    /// the launch uses that block.
    pub fn launch(
        &self,
        ord: i32,
        queue: Option<&Queue>,
        k: &Kernel,
        vars: u64,
        dims: Dims,
        kind: Kind,
    ) -> Result<Ending> {
        let block = self.claim_table(vars);
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
        if let Err(e) = check_launchable(k) {
            self.unclaim(table_block);
            return Err(e);
        }
        let shape = self.shape(k, dims, kind);
        let lease = self.lease(shape.eph.total, table_block)?;
        let ring = lease.write_kernargs(k, vars, &shape);
        let signal = Signal::create(self.rt, 1)?;
        signal.store_relaxed(1);
        let packet = shape.packet(k, lease.kernargs(), &signal);
        // SAFETY: the kernel object is a loaded kernel's (its image stays loaded while
        // it runs); the kernarg block and the signal live until the wait below has seen
        // the completion.
        unsafe { queue.unwrap_or(&self.queue).dispatch(&packet) };
        let n = self.launches.fetch_add(1, Ordering::Relaxed) + 1;
        let (pd, eph) = (&shape.pd, &shape.eph);
        log::debug!(
            "launch {n}: kernel {} on device {}: {} team(s) x {} thread(s) (grid {:?}, work-group {:?}), LDS {}, arena {} x {}, stack {} per wavefront",
            k.name, ord, pd.grid[0], pd.grid[2], pd.grid, pd.wg, shape.group, eph.arena, pd.grid[0], eph.stack
        );
        self.wait(ord, k.reverse_offload, &ring, &signal);
        let rv = ring.return_value();
        drop(lease);
        drop(signal);
        Ok(protocol::decode_return(rv))
    }

    /// The packet's dimensions, LDS size and ephemeral memory of a launch of `k`.
    fn shape(&self, k: &Kernel, dims: Dims, kind: Kind) -> Shape {
        let dims = protocol::cap_by_vgprs(dims, k.vgprs, protocol::max_isa_vgprs(&self.isa));
        let pd = protocol::packet_dims(&dims, kind, &self.cfg);
        let (teams, threads) = (pd.grid[0], pd.grid[2]);
        let group = protocol::lds_size(
            k.meta.as_ref().map_or(0, |m| m.group_segment_fixed_size),
            teams,
            self.cu,
            self.cfg.lowlat_pool,
            self.gcc,
        );
        let eph = protocol::ephemeral(kind, teams, threads, &self.cfg);
        Shape { pd, group, eph }
    }

    /// A kernarg block (`table_block`, else a cached one) and `eph_total` bytes of
    /// ephemeral memory for one launch; on failure `table_block` goes back to the cache.
    fn lease(&self, eph_total: u64, table_block: Option<Allocation>) -> Result<Lease<'_>> {
        let kernargs = match table_block {
            Some(b) => b,
            None => self.take_kernargs(KERNARG_BLOCK)?,
        };
        match self.take_ephemeral(eph_total) {
            Ok(eph) => Ok(Lease {
                launcher: self,
                kernargs: Some(kernargs),
                eph,
            }),
            Err(e) => {
                self.kernargs.locked().push(kernargs);
                Err(e)
            }
        }
    }

    /// Waits for the completion signal, draining the ring (see the module comment).
    fn wait(&self, ord: i32, rev_table: bool, ring: &Ring, signal: &Signal) {
        let cap_us: u64 = if rev_table { 1000 } else { 4000 };
        let mut timeout_us = 20u64;
        let mut rev = |r: RevRequest| reverse_offload(ord, r);
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

    /// Acts on how a kernel ended: nothing for a normal end; the host exits or aborts
    /// as the stock plugin does (§4).
    pub fn finish(&self, ending: Ending) {
        match ending {
            Ending::Normal => {}
            Ending::Exit(code) => {
                log::debug!("the kernel called exit({code}): the program exits with {code}");
                std::process::exit(code as i32);
            }
            Ending::Abort => {
                if self.cfg.gcn_debug {
                    eprintln!("GCN Kernel aborted");
                }
                std::process::abort();
            }
            Ending::Signal(s) => {
                log::debug!("the kernel ended with signal {s}: aborting");
                std::process::abort();
            }
            Ending::Corrupt(v) => {
                // The stock plugin's message ends with its own newline (a blank line
                // follows it).
                report::error(&format!(
                    "Possible kernel exit value corruption, 2 most significant bytes aren't 0xffff or 0xcafe: {v:#x}\n"
                ));
                std::process::abort();
            }
        }
    }

    /// A new HSA queue of `size` packets on the agent (an OpenACC async queue's).
    pub fn new_queue(&self, size: u32) -> Result<Queue> {
        Queue::create(self.rt, self.agent, size)
    }

    /// `async_run`: queues the launch on the device's async thread (started, with its
    /// own 64-packet queue, on first use); its completion is reported to libgomp after
    /// it ran. Blocks while 64 launches are pending; the job holds the kernel until it
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
        let table_block = self.claim_table(vars);
        let mut w = self.worker.locked();
        if w.is_none() {
            let q = Queue::create(self.rt, self.agent, ASYNC_QUEUE_SIZE)?;
            let (tx, rx) = sync_channel::<Job>(ASYNC_QUEUE_SIZE as usize);
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
                    self.unclaim(table_block);
                    return Err(e);
                }
            };
            let id = handle.thread().id();
            *w = Some(Worker { tx, handle, id });
        }
        let tx = w.as_ref().map(|w| w.tx.clone());
        drop(w);
        let job = Job {
            kernel,
            vars,
            table_block,
            dims,
            async_data,
        };
        let Some(tx) = tx else {
            self.unclaim(job.table_block);
            return Err(Error::invalid("async_run: no async thread"));
        };
        tx.send(job).map_err(|e| {
            self.unclaim(e.0.table_block);
            Error::invalid("async_run: the async thread has stopped")
        })
    }

    /// Stops the async thread (after its pending launches), frees the kernarg and
    /// ephemeral blocks. The queues are destroyed with the launcher.
    pub fn close(&self) {
        if let Some(w) = self.worker.locked().take() {
            drop(w.tx);
            if w.id != std::thread::current().id() {
                let _ = w.handle.join();
            }
        }
        drop(std::mem::take(&mut *self.tables.locked()));
        drop(std::mem::take(&mut *self.kernargs.locked()));
        drop(std::mem::take(&mut *self.ephemeral.locked()));
    }
}

fn task_completion(async_data: usize) {
    if !target::task_completion(async_data) {
        report::fatal("async_run: libgomp lacks GOMP_PLUGIN_target_task_completion");
    }
}

/// libgomp 13's copy callback: HSA copies either way.
unsafe extern "C" fn copy13(dst: *mut c_void, src: *const c_void, n: usize, _token: *mut c_void) {
    let Some(rt) = crate::hsa::table::loaded() else {
        report::fatal("reverse offload: the HSA runtime is not loaded");
    };
    // SAFETY: libgomp passes a host buffer and a device address of `n` bytes.
    if let Err(e) = unsafe { memory::copy(rt, dst, src, n, "hsa_memory_copy (reverse offload)") } {
        report::fatal(&e.to_string());
    }
}

/// Runs one reverse-offload request through libgomp, synchronously (§5).
fn reverse_offload(ord: i32, r: RevRequest) {
    log::debug!(
        "device {}: reverse offload of fn {:#x} ({} mapping(s))",
        ord,
        r.fn_addr,
        r.mapnum
    );
    let call = RevCall {
        fn_addr: r.fn_addr,
        mapnum: r.mapnum,
        addrs: r.addrs,
        sizes: r.sizes,
        kinds: r.kinds,
        dev_num: r.dev_num as c_int,
    };
    // SAFETY: the request's words as the device wrote them; copy13 needs no token.
    unsafe { target::target_rev(&call, copy13, copy13, std::ptr::null_mut()) };
}
