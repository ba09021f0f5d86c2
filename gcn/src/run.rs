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
//! Ownership: a [`Launcher`] belongs to its open device; it owns the queues, the cached
//! kernarg blocks and the ephemeral blocks, freed by [`Launcher::close`]. The async
//! thread holds an `Arc` of the device and is stopped and joined by `close` (unless
//! `close` runs on that thread, when the device's kernel called `exit`).
//! Thread-safety: launches from any number of host threads share the synchronous queue
//! (its write index is atomic); the caches are behind mutexes.
//!
//! **Unverified on hardware**: run against the stand-in runtime of
//! tests/fallback/stub_libhsa.c, which checks each packet and kernarg block against
//! the spec and plays the device side of the ring.

use crate::config::Config;
use crate::console::{RevRequest, Ring};
use crate::executable::Kernel;
use crate::hsa::runtime::Runtime;
use crate::hsa::sys::*;
use crate::launch::{self, *};
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::host;
use gomp_plugin::libgomp::report;
use gomp_plugin::libgomp::target::{self, RevCall};
use gomp_plugin::libgomp::version::{Detected, Libgomp};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, ThreadId};

/// `HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT` (AMD extension attribute).
pub const AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: hsa_agent_info_t = 0xA002;
/// `HSA_ACCESS_PERMISSION_RW`.
pub const ACCESS_RW: u32 = 3;
/// Packets of each async queue (and entries of the async software ring).
pub const ASYNC_QUEUE_SIZE: u32 = 64;

/// An HSA queue, destroyed on drop.
pub struct Queue {
    q: *mut hsa_queue_t,
    rt: &'static Runtime,
}
// SAFETY: HSA queues may be used from any thread (the write index is claimed
// atomically; each thread fills only the slot it claimed).
unsafe impl Send for Queue {}
// SAFETY: as above.
unsafe impl Sync for Queue {}

unsafe extern "C" fn queue_error(status: hsa_status_t, _q: *mut hsa_queue_t, _data: *mut c_void) {
    let text = crate::hsa::runtime::loaded().map_or_else(
        || format!("HSA status {status:#x}"),
        |rt| rt.status_text(status),
    );
    report::fatal(&format!(
        "GCN fatal error: Asynchronous queue error\nRuntime message: {text}\n"
    ));
}

impl Queue {
    /// `hsa_queue_create(agent, size, MULTI, callback, NULL, UINT32_MAX, UINT32_MAX)`.
    pub fn create(rt: &'static Runtime, agent: hsa_agent_t, size: u32) -> Result<Queue> {
        let mut q: *mut hsa_queue_t = std::ptr::null_mut();
        // SAFETY: a valid agent, a callback of the right type, an out-pointer.
        let st = unsafe {
            (rt.hsa_queue_create)(
                agent,
                size,
                hsa_queue_type_t_HSA_QUEUE_TYPE_MULTI,
                Some(queue_error),
                std::ptr::null_mut(),
                u32::MAX,
                u32::MAX,
                &mut q,
            )
        };
        rt.check(st, &format!("hsa_queue_create ({size} packets)"))?;
        if q.is_null() {
            return Err(Error::invalid("hsa_queue_create gave no queue"));
        }
        Ok(Queue { q, rt })
    }

    /// Claims a slot, waiting while the queue is full; returns (index, packet address).
    fn claim(&self) -> (u64, *mut u8) {
        let rt = self.rt;
        // SAFETY: a live queue.
        let idx = unsafe { (rt.hsa_queue_add_write_index_release)(self.q, 1) };
        // SAFETY: as above; the queue's fields are immutable after creation.
        let (size, base) = unsafe { ((*self.q).size as u64, (*self.q).base_address as *mut u8) };
        // SAFETY: a live queue.
        while idx - unsafe { (rt.hsa_queue_load_read_index_acquire)(self.q) } >= size {
            std::thread::yield_now();
        }
        // SAFETY: the slot lies in the ring of `size` 64-byte packets.
        (idx, unsafe { base.add((idx % size) as usize * 64) })
    }

    fn doorbell(&self, idx: u64) {
        // SAFETY: a live queue; the doorbell takes the written index.
        unsafe { (self.rt.hsa_signal_store_release)((*self.q).doorbell_signal, idx as i64) };
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: our queue, destroyed once.
        let st = unsafe { (self.rt.hsa_queue_destroy)(self.q) };
        if let Err(e) = self.rt.check(st, "hsa_queue_destroy") {
            log::debug!("{e}");
        }
    }
}

/// A block of ephemeral memory (team arenas + stacks), reused across launches.
struct EphBlock {
    ptr: u64,
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
    dims: Dims,
    async_data: usize,
}

/// What a device needs to launch kernels.
pub struct Launcher {
    rt: &'static Runtime,
    agent: hsa_agent_t,
    /// The agent's ISA name.
    pub isa: String,
    /// Compute units (`HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT`, 64 if unknown).
    pub cu: u32,
    /// The environment's settings.
    pub cfg: Config,
    /// The GCC release of the host libgomp (LDS layout).
    pub gcc: u32,
    ticks_per_us: u64,
    kernarg_region: Option<hsa_region_t>,
    data_region: hsa_region_t,
    queue: Queue,
    kernargs: Mutex<Vec<usize>>,
    ephemeral: Mutex<Vec<Arc<EphBlock>>>,
    worker: Mutex<Option<Worker>>,
    /// Launches run since open (for GOMP_DEBUG).
    launches: AtomicU32,
}

impl Launcher {
    /// At `init_device`: the agent's properties, the settings and the synchronous
    /// queue (the largest the agent allows).
    pub fn open(
        rt: &'static Runtime,
        agent: hsa_agent_t,
        isa: &str,
        regions: &crate::memory::Regions,
    ) -> Result<Launcher> {
        let mut cu: u32 = 0;
        // SAFETY: a u32 out-pointer for the attribute.
        let st = unsafe {
            (rt.hsa_agent_get_info)(
                agent,
                AMD_AGENT_INFO_COMPUTE_UNIT_COUNT,
                (&mut cu as *mut u32).cast(),
            )
        };
        if st != hsa_status_t_HSA_STATUS_SUCCESS || cu == 0 {
            cu = 64;
        }
        let mut max: u32 = 0;
        // SAFETY: as above.
        let st = unsafe {
            (rt.hsa_agent_get_info)(
                agent,
                hsa_agent_info_t_HSA_AGENT_INFO_QUEUE_MAX_SIZE,
                (&mut max as *mut u32).cast(),
            )
        };
        rt.check(st, "hsa_agent_get_info(HSA_AGENT_INFO_QUEUE_MAX_SIZE)")?;
        let mut freq: u64 = 0;
        // SAFETY: a u64 out-pointer for the attribute.
        let st = unsafe {
            (rt.hsa_system_get_info)(
                hsa_system_info_t_HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY,
                (&mut freq as *mut u64).cast(),
            )
        };
        if st != hsa_status_t_HSA_STATUS_SUCCESS || freq == 0 {
            freq = 1_000_000_000;
        }
        let gcc = match host::detected() {
            Detected::Known(v) => v.gcc(),
            _ => Libgomp::V16.gcc(),
        };
        let queue = Queue::create(rt, agent, max)?;
        Ok(Launcher {
            rt,
            agent,
            isa: isa.to_string(),
            cu,
            cfg: Config::from_env(),
            gcc,
            ticks_per_us: (freq / 1_000_000).max(1),
            kernarg_region: regions.kernarg,
            data_region: regions.device,
            queue,
            kernargs: Mutex::new(Vec::new()),
            ephemeral: Mutex::new(Vec::new()),
            worker: Mutex::new(None),
            launches: AtomicU32::new(0),
        })
    }

    fn allocate(&self, region: hsa_region_t, size: usize, what: &str) -> Result<u64> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        let st = unsafe { (self.rt.hsa_memory_allocate)(region, size, &mut p) };
        self.rt
            .check(st, &format!("hsa_memory_allocate ({what}, {size} bytes)"))?;
        if self.rt.has("hsa_memory_assign_agent") && region.handle == self.data_region.handle {
            // SAFETY: a block just allocated; the agent gets read-write access.
            let st = unsafe { (self.rt.hsa_memory_assign_agent)(p, self.agent, ACCESS_RW) };
            self.rt.check(st, "hsa_memory_assign_agent")?;
        }
        Ok(p as u64)
    }

    fn free(&self, p: u64) {
        // SAFETY: a block this launcher allocated, freed once.
        let st = unsafe { (self.rt.hsa_memory_free)(p as *mut c_void) };
        if let Err(e) = self.rt.check(st, "hsa_memory_free") {
            log::debug!("{e}");
        }
    }

    /// A module's heap: `GCN_HEAP_SIZE` bytes of device memory whose first word is its
    /// size (`struct heap`).
    pub fn new_heap(&self) -> Result<u64> {
        let size = self.cfg.heap_size;
        let h = self.allocate(self.data_region, size as usize, "module heap")?;
        // SAFETY: `h` holds at least 8 bytes; the source is a local.
        let st =
            unsafe { (self.rt.hsa_memory_copy)(h as *mut c_void, (&size as *const u64).cast(), 8) };
        if let Err(e) = self.rt.check(st, "hsa_memory_copy (heap size)") {
            self.free(h);
            return Err(e);
        }
        Ok(h)
    }

    fn take_kernargs(&self) -> Result<usize> {
        if let Some(b) = self
            .kernargs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
        {
            return Ok(b);
        }
        let region = self.kernarg_region.ok_or_else(|| {
            Error::invalid("GCN fatal error: the agent has no kernarg memory region")
        })?;
        Ok(self.allocate(region, KERNARG_BLOCK, "kernel arguments")? as usize)
    }

    fn take_ephemeral(&self, size: u64) -> Result<Arc<EphBlock>> {
        let mut list = self.ephemeral.lock().unwrap_or_else(|e| e.into_inner());
        for b in list.iter() {
            if b.size >= size
                && b.in_use
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return Ok(b.clone());
            }
        }
        let ptr = self.allocate(self.data_region, size as usize, "team arenas and stacks")?;
        let b = Arc::new(EphBlock {
            ptr,
            size,
            in_use: AtomicBool::new(true),
        });
        list.push(b.clone());
        Ok(b)
    }

    /// Runs `k` with `vars` on `dims` through `queue` (the synchronous one unless
    /// given) and waits for it, draining the console; returns how it ended.
    /// `ord` names the device in messages; `rev` says whether the kernel's image has a
    /// reverse-offload table (the console is then polled more often).
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &self,
        ord: i32,
        queue: Option<&Queue>,
        k: &Kernel,
        vars: u64,
        dims: Dims,
        kind: Kind,
        rev: bool,
    ) -> Result<Ending> {
        let meta = k.meta.as_ref();
        if k.object == 0 {
            return Err(Error::invalid(format!(
                "GCN fatal error: kernel '{}' has no kernel descriptor in its code object: it cannot be launched",
                k.name
            )));
        }
        if meta.is_some_and(|m| m.kernarg_segment_size > MAX_EXPLICIT_KERNARGS) {
            return Err(Error::invalid(format!(
                "GCN fatal error: Unexpectedly large kernargs segment requested (kernel '{}')",
                k.name
            )));
        }
        let dims = launch::cap_by_vgprs(dims, k.vgprs, launch::max_isa_vgprs(&self.isa));
        let pd = launch::packet_dims(&dims, kind, &self.cfg);
        let (teams, threads) = (pd.grid[0], pd.grid[2]);
        let group = launch::lds_size(
            meta.map_or(0, |m| m.group_segment_fixed_size),
            teams,
            self.cu,
            self.cfg.lowlat_pool,
            self.gcc,
        );
        let eph = launch::ephemeral(kind, teams, threads, &self.cfg);
        let block = self.take_kernargs()?;
        let mem = match self.take_ephemeral(eph.total) {
            Ok(m) => m,
            Err(e) => {
                self.kernargs
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(block);
                return Err(e);
            }
        };
        let b = block as *mut u8;
        let out = b.wrapping_add(KERNARGS_SIZE);
        let arena_total = eph.arena as u64 * teams as u64;
        // SAFETY: `block` is a kernarg block of KERNARG_BLOCK host-accessible bytes,
        // ours until it is put back below; the fields are at their spec offsets.
        let ring = unsafe {
            let w64 = |off: usize, v: u64| (b.add(off) as *mut u64).write_volatile(v);
            w64(KA_ARG, vars);
            w64(KA_OUT_PTR, out as u64);
            w64(KA_HEAP_PTR, k.heap);
            w64(KA_ARENA_PTR, if eph.arena > 0 { mem.ptr } else { 0 });
            w64(KA_STACK_PTR, mem.ptr + arena_total);
            (b.add(KA_ARENA_SIZE) as *mut i32).write_volatile(eph.arena as i32);
            (b.add(KA_STACK_SIZE) as *mut i32).write_volatile(eph.stack as i32);
            Ring::new(out)
        };
        ring.reset();
        let rt = self.rt;
        let mut signal = hsa_signal_t { handle: 0 };
        // SAFETY: out-pointer to a local; no consumers list.
        let st = unsafe { (rt.hsa_signal_create)(1, 0, std::ptr::null(), &mut signal) };
        let created = rt.check(st, "hsa_signal_create");
        let release = |this: &Self| {
            mem.in_use.store(false, Ordering::Release);
            this.kernargs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(block);
        };
        if let Err(e) = created {
            release(self);
            return Err(e);
        }
        // SAFETY: our signal.
        unsafe { (rt.hsa_signal_store_relaxed)(signal, 1) };
        let q = queue.unwrap_or(&self.queue);
        let (idx, pkt) = q.claim();
        // SAFETY: `pkt` is the 64-byte slot we claimed; the header word is written last
        // with a release store, so the packet processor sees a complete packet.
        unsafe {
            std::ptr::write_bytes(pkt.add(4), 0, 60);
            let p = pkt as *mut hsa_kernel_dispatch_packet_t;
            (*p).workgroup_size_x = pd.wg[0];
            (*p).workgroup_size_y = pd.wg[1];
            (*p).workgroup_size_z = pd.wg[2];
            (*p).grid_size_x = pd.grid[0];
            (*p).grid_size_y = pd.grid[1];
            (*p).grid_size_z = pd.grid[2];
            (*p).private_segment_size = meta.map_or(0, |m| m.private_segment_fixed_size);
            (*p).group_segment_size = group;
            (*p).kernel_object = k.object;
            (*p).kernarg_address = b.cast();
            (*p).completion_signal = signal;
            (*(pkt as *const AtomicU32))
                .store(HEADER as u32 | (pd.ndim as u32) << 16, Ordering::Release);
        }
        q.doorbell(idx);
        let n = self.launches.fetch_add(1, Ordering::Relaxed) + 1;
        log::debug!(
            "launch {n}: kernel {} on device {}: {} team(s) x {} thread(s) (grid {:?}, work-group {:?}), LDS {group}, arena {} x {}, stack {} per wavefront",
            k.name, ord, teams, threads, pd.grid, pd.wg, eph.arena, teams, eph.stack
        );
        self.wait(ord, rev, &ring, signal);
        let rv = ring.return_value();
        release(self);
        // SAFETY: our signal, no longer used by the packet (it completed).
        let st = unsafe { (rt.hsa_signal_destroy)(signal) };
        if let Err(e) = rt.check(st, "hsa_signal_destroy") {
            log::debug!("{e}");
        }
        Ok(launch::decode_return(rv))
    }

    /// Waits for the completion signal, draining the ring (see the module comment).
    fn wait(&self, ord: i32, rev_table: bool, ring: &Ring, signal: hsa_signal_t) {
        let cap_us: u64 = if rev_table { 1000 } else { 4000 };
        let mut timeout_us = 20u64;
        let mut rev = |r: RevRequest| reverse_offload(ord, r);
        loop {
            // SAFETY: our signal.
            let v = unsafe {
                (self.rt.hsa_signal_wait_acquire)(
                    signal,
                    hsa_signal_condition_t_HSA_SIGNAL_CONDITION_LT,
                    1,
                    timeout_us * self.ticks_per_us,
                    hsa_wait_state_t_HSA_WAIT_STATE_BLOCKED,
                )
            };
            if v < 1 {
                break;
            }
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
    /// has run.
    pub fn launch_async(
        self: &Arc<Self>,
        ord: i32,
        kernel: Arc<Kernel>,
        vars: u64,
        dims: Dims,
        async_data: usize,
    ) -> Result<()> {
        let mut w = self.worker.lock().unwrap_or_else(|e| e.into_inner());
        if w.is_none() {
            let q = Queue::create(self.rt, self.agent, ASYNC_QUEUE_SIZE)?;
            let (tx, rx) = sync_channel::<Job>(ASYNC_QUEUE_SIZE as usize);
            let l = Arc::clone(self);
            let handle = std::thread::Builder::new()
                .name(format!("gcn{ord}-async"))
                .spawn(move || {
                    for j in rx {
                        let k = &j.kernel;
                        let rev = k.reverse_offload;
                        match l.launch(ord, Some(&q), k, j.vars, j.dims, Kind::OpenMp, rev) {
                            Ok(e) => l.finish(e),
                            Err(e) => report::fatal(&e.to_string()),
                        }
                        task_completion(j.async_data);
                    }
                })
                .map_err(|e| Error::invalid(format!("cannot start the async thread: {e}")))?;
            let id = handle.thread().id();
            *w = Some(Worker { tx, handle, id });
        }
        let tx = w.as_ref().map(|w| w.tx.clone());
        drop(w);
        let job = Job {
            kernel,
            vars,
            dims,
            async_data,
        };
        tx.ok_or_else(|| Error::invalid("async_run: no async thread"))?
            .send(job)
            .map_err(|_| Error::invalid("async_run: the async thread has stopped"))
    }

    /// Stops the async thread (after its pending launches), frees the kernarg and
    /// ephemeral blocks. The queues are destroyed with the launcher.
    pub fn close(&self) {
        if let Some(w) = self.worker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            drop(w.tx);
            if w.id != std::thread::current().id() {
                let _ = w.handle.join();
            }
        }
        for b in std::mem::take(&mut *self.kernargs.lock().unwrap_or_else(|e| e.into_inner())) {
            self.free(b as u64);
        }
        for b in std::mem::take(&mut *self.ephemeral.lock().unwrap_or_else(|e| e.into_inner())) {
            self.free(b.ptr);
        }
    }
}

fn task_completion(async_data: usize) {
    if !target::task_completion(async_data) {
        report::fatal("async_run: libgomp lacks GOMP_PLUGIN_target_task_completion");
    }
}

/// libgomp 13's copy callback: HSA copies either way.
unsafe extern "C" fn copy13(dst: *mut c_void, src: *const c_void, n: usize, _token: *mut c_void) {
    let Some(rt) = crate::hsa::runtime::loaded() else {
        report::fatal("reverse offload: the HSA runtime is not loaded");
    };
    // SAFETY: libgomp passes a host buffer and a device address of `n` bytes.
    let st = unsafe { (rt.hsa_memory_copy)(dst, src, n) };
    if let Err(e) = rt.check(st, "hsa_memory_copy (reverse offload)") {
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
