//! The memory a gcn device's launches use, kept between launches ([`LaunchResources`],
//! a part of the device's [`super::run::Launcher`]): the cached kernarg blocks, the
//! kernarg blocks reserved for a session's table (libgomp 17; see `run.rs`, "Tables in
//! kernarg memory"), the ephemeral blocks (team arenas + stacks), a module's heap, and
//! one launch's [`Lease`] of them.
//!
//! Ownership: [`LaunchResources`] owns every block it handed out or keeps, freed by
//! [`LaunchResources::close`] (or when dropped); a [`Lease`] gives its blocks back to
//! the caches when dropped. Thread-safety: the caches are behind mutexes; an ephemeral block
//! is leased to one launch at a time (its `in_use` flag).

use super::console::Ring;
use super::geometry::Geometry;
use super::protocol::*;
use crate::hsa::safe::memory::Allocation;
use crate::hsa::sys::*;
use crate::hsa::table::Runtime;
use crate::image::Kernel;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::sync::Lock;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A block of ephemeral memory (team arenas + stacks), reused across launches.
pub(super) struct EphBlock {
    mem: Allocation,
    size: u64,
    in_use: AtomicBool,
}

/// A kernarg block reserved for the table of the session at `session` (a libgomp
/// block's address, used only as a key), which lies at `table`.
struct Reserved {
    session: usize,
    table: u64,
    block: Allocation,
}

/// The kernarg block and ephemeral memory of one launch, given back to the launcher's
/// caches when dropped (`cache`: the kernarg blocks').
pub(super) struct Lease<'a> {
    cache: &'a Mutex<Vec<Allocation>>,
    kernargs: Option<Allocation>,
    eph: Arc<EphBlock>,
}

impl Lease<'_> {
    /// The kernarg block's address (host-accessible, at least `KERNARG_BLOCK` bytes).
    pub(super) fn kernargs(&self) -> *mut u8 {
        self.kernargs.as_ref().map_or(0, Allocation::addr) as *mut u8
    }

    /// Fills the kernarg block for `k` with `vars` (docs/gcn-launch.md §1) and resets
    /// its output ring, which it returns.
    pub(super) fn write_kernargs(&self, k: &Kernel, vars: u64, geometry: &Geometry) -> Ring {
        let b = self.kernargs();
        let out = b.wrapping_add(KERNARGS_SIZE);
        let (eph, teams) = (&geometry.eph, geometry.pd.grid[0]);
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
            self.cache.locked().push(b);
        }
    }
}

/// The blocks a device's launches use: kernarg blocks (cached, or reserved for a
/// session's table), ephemeral memory, module heaps. Owned by the device's `Launcher`
/// (a part of it); owns the blocks it keeps. Thread-safe: every method takes `&self`,
/// the lists are behind mutexes.
pub struct LaunchResources {
    rt: &'static Runtime,
    agent: hsa_agent_t,
    kernarg_region: Option<hsa_region_t>,
    data_region: hsa_region_t,
    /// `GCN_HEAP_SIZE`: the size of a module's heap.
    heap_size: u64,
    kernargs: Mutex<Vec<Allocation>>,
    /// Whether libgomp launches through sessions (17) and so may put tables in kernarg
    /// memory ([`LaunchResources::reserve_table`]); under 12-16 no table is ever
    /// reserved.
    sessions: bool,
    /// Kernarg blocks reserved for a session's table, not yet claimed by its launch.
    tables: Mutex<Vec<Reserved>>,
    ephemeral: Mutex<Vec<Arc<EphBlock>>>,
}

impl LaunchResources {
    /// No block yet: blocks are allocated from `kernarg_region` (kernel arguments) and
    /// `data_region` (the rest, given to `agent` read-write) on first need.
    pub fn new(
        rt: &'static Runtime,
        agent: hsa_agent_t,
        kernarg_region: Option<hsa_region_t>,
        data_region: hsa_region_t,
        heap_size: u64,
        sessions: bool,
    ) -> LaunchResources {
        LaunchResources {
            rt,
            agent,
            kernarg_region,
            data_region,
            heap_size,
            kernargs: Mutex::new(Vec::new()),
            sessions,
            tables: Mutex::new(Vec::new()),
            ephemeral: Mutex::new(Vec::new()),
        }
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
        let size = self.heap_size;
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

    /// A kernarg block (`table_block`, else a cached one) and `eph_total` bytes of
    /// ephemeral memory for one launch; on failure `table_block` goes back to the cache.
    pub(super) fn lease(
        &self,
        eph_total: u64,
        table_block: Option<Allocation>,
    ) -> Result<Lease<'_>> {
        let kernargs = match table_block {
            Some(b) => b,
            None => self.take_kernargs(KERNARG_BLOCK)?,
        };
        match self.take_ephemeral(eph_total) {
            Ok(eph) => Ok(Lease {
                cache: &self.kernargs,
                kernargs: Some(kernargs),
                eph,
            }),
            Err(e) => {
                self.kernargs.locked().push(kernargs);
                Err(e)
            }
        }
    }

    /// Frees the kernarg and ephemeral blocks (at device close, after the last launch).
    pub fn close(&self) {
        drop(std::mem::take(&mut *self.tables.locked()));
        drop(std::mem::take(&mut *self.kernargs.locked()));
        drop(std::mem::take(&mut *self.ephemeral.locked()));
    }
}
