//! The core of one gcn device ([`Core`], `impl gomp_plugin::DeviceCore`): its memory through the core HSA 1.x API: the agent's regions (found at
//! `init_device`), device allocations (`hsa_memory_allocate` in the agent's
//! coarse-grained global region, then `hsa_memory_assign_agent` read-write, as GCC's
//! plugin does), copies (`hsa_memory_copy`, synchronous: complete when
//! it returns, as the contract wants) and memset (copies from a host buffer of the
//! byte: the core API has no fill, and a copy has no alignment rules).
//!
//! Ownership: a [`Core`] belongs to its open device and owns the blocks it handed out
//! ([`Blocks`]); [`Core::release_all`] frees those libgomp did not free before the
//! device is closed. Thread-safety: every method takes `&self`; the block registry is
//! behind a mutex, and the HSA runtime's memory calls are thread-safe (HSA spec).
//!
//! **Unverified on hardware**: written from the HSA 1.x specification and ROCm's
//! `hsa.h`, and exercised only against the stand-in runtime of
//! tests/fallback/stub_libhsa.c (host memory). In particular, that `hsa_memory_copy`
//! accepts ordinary (pageable, unregistered) host memory is what ROCm documents for its
//! runtime, not something this project could check.

use crate::hsa::safe::memory::{self, Allocation};
use crate::hsa::safe::region;
use crate::hsa::sys::*;
use crate::hsa::table::Runtime;
use gomp_plugin::blocks::{check_copy, Blocks, DevPtr};
use gomp_plugin::error::{Error, Result};
use gomp_plugin::DeviceCore;
use std::ffi::{c_int, c_void};

/// The regions of an agent the plugin uses.
#[derive(Debug, Clone, Copy)]
pub struct Regions {
    /// Global, coarse-grained, runtime-allocatable: device memory for `alloc`.
    pub device: hsa_region_t,
    /// Global with the KERNARG flag: where kernel arguments would live (kept for a
    /// dispatch; see `launch/dispatch.rs`).
    pub kernarg: Option<hsa_region_t>,
    /// Global, fine-grained, not kernarg: host-coherent memory, if the agent has one.
    pub fine: Option<hsa_region_t>,
}

/// Picks the regions from `(region, global flags)` pairs. Pure.
pub fn pick(found: &[(hsa_region_t, u32)]) -> Result<Regions> {
    let has = |f: u32, bit: hsa_region_global_flag_t| f & bit != 0;
    let first = |want: &dyn Fn(u32) -> bool| found.iter().find(|(_, f)| want(*f)).map(|r| r.0);
    let device = first(&|f| has(f, hsa_region_global_flag_t_HSA_REGION_GLOBAL_FLAG_COARSE_GRAINED))
        .ok_or_else(|| {
            Error::Invalid(format!(
                "the agent has no allocatable coarse-grained global memory region ({} global region(s))",
                found.len()
            ))
        })?;
    Ok(Regions {
        device,
        kernarg: first(&|f| has(f, hsa_region_global_flag_t_HSA_REGION_GLOBAL_FLAG_KERNARG)),
        fine: first(&|f| {
            has(
                f,
                hsa_region_global_flag_t_HSA_REGION_GLOBAL_FLAG_FINE_GRAINED,
            ) && !has(f, hsa_region_global_flag_t_HSA_REGION_GLOBAL_FLAG_KERNARG)
        }),
    })
}

/// Finds the agent's regions (`hsa_agent_iterate_regions`).
pub fn find_regions(rt: &Runtime, agent: hsa_agent_t) -> Result<Regions> {
    let found: Vec<(hsa_region_t, u32)> = region::all(rt, agent)?
        .into_iter()
        .filter_map(|r| region::global_flags(rt, r).map(|f| (r, f)))
        .collect();
    pick(&found)
}

/// Largest host buffer a memset copies from, bytes.
pub const MEMSET_CHUNK: usize = 1 << 20;

/// The core of one open device: its device memory, copies and memset.
///
/// Owns: the blocks it handed out. Held by: its [`crate::open::OpenDevice`]
/// (`Arc<Core>`, as nvptx's). Fields are private. Thread-safety: every method takes
/// `&self`; the block registry is locked, HSA's memory calls are thread-safe.
pub struct Core {
    rt: &'static Runtime,
    /// The agent each block is given read-write access to.
    agent: hsa_agent_t,
    /// The regions found at open.
    regions: Regions,
    /// Whether the agent has the HSA full profile (it may then access all host memory).
    full_profile: bool,
    blocks: Blocks,
}

impl Core {
    /// The core of `agent`, which has `regions`.
    pub fn new(
        rt: &'static Runtime,
        agent: hsa_agent_t,
        regions: Regions,
        full_profile: bool,
    ) -> Core {
        Core {
            rt,
            agent,
            regions,
            full_profile,
            blocks: Blocks::default(),
        }
    }

    /// Frees every block still live (at device close); returns how many there were.
    pub fn release_all(&self) -> usize {
        let live = self.blocks.take_all();
        for &p in &live {
            // SAFETY: each came from `Allocation::into_raw` and left the registry above.
            let _ = unsafe { Allocation::from_raw(self.rt, p as *mut c_void) }.free();
        }
        live.len()
    }

    fn copy(&self, dst: *mut c_void, src: *const c_void, n: usize, what: &str) -> Result<()> {
        // SAFETY: the callers checked the device side against the live blocks and hold
        // the host side's guarantee.
        unsafe {
            memory::copy(
                self.rt,
                dst,
                src,
                n,
                ("hsa_memory_copy", || format!(" ({what}, {n} bytes)")),
            )
        }
    }
}

/// libgomp's memory entry points on this device (the exported shells call them
/// directly: `Core` is the gcn device's core).
impl DeviceCore for Core {
    /// Allocates `size` device bytes (at least 1, so size 0 gives a distinct block, as
    /// the nvptx side does).
    fn alloc(&self, size: usize) -> Result<DevPtr> {
        let block = Allocation::new(
            self.rt,
            self.regions.device,
            size,
            ("hsa_memory_allocate", || format!(" of {size} bytes")),
        )?;
        block.assign_rw(self.agent)?;
        let p = block.into_raw() as DevPtr;
        self.blocks.insert(p, size);
        Ok(p)
    }

    /// Frees a block from [`Core::alloc`]; NULL is accepted and ignored; an address
    /// that does not start a live block is "invalid device address".
    fn free(&self, p: DevPtr) -> Result<()> {
        if p == 0 {
            return Ok(());
        }
        self.blocks
            .remove(p)
            .map_err(|_| Error::invalid(format!("invalid device address {p:#x}")))?;
        // SAFETY: `p` came from `Allocation::into_raw` in `alloc` and just left the
        // registry: this is its only owner.
        unsafe { Allocation::from_raw(self.rt, p as *mut c_void) }.free()
    }

    /// Copies `n` bytes from host `src` to device `dst`.
    ///
    /// # Safety
    /// `src` must be readable for `n` bytes.
    unsafe fn host2dev(&self, dst: DevPtr, src: *const c_void, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        check_copy(dst, src)?;
        self.blocks.check(dst, n)?;
        self.copy(dst as *mut c_void, src, n, "host to device")
    }

    /// Copies `n` bytes from device `src` to host `dst`.
    ///
    /// # Safety
    /// `dst` must be writable for `n` bytes.
    unsafe fn dev2host(&self, dst: *mut c_void, src: DevPtr, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        check_copy(src, dst)?;
        self.blocks.check(src, n)?;
        self.copy(dst, src as *const c_void, n, "device to host")
    }

    /// Copies `n` bytes between two device addresses.
    fn dev2dev(&self, dst: DevPtr, src: DevPtr, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        if dst == 0 || src == 0 {
            return Err(Error::invalid("invalid device address"));
        }
        self.blocks.check(dst, n)?;
        self.blocks.check(src, n)?;
        self.copy(
            dst as *mut c_void,
            src as *const c_void,
            n,
            "device to device",
        )
    }

    /// Sets `n` device bytes at `p` to the low byte of `val`.
    fn memset(&self, p: DevPtr, val: c_int, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        if p == 0 {
            return Err(Error::invalid("invalid device address"));
        }
        self.blocks.check(p, n)?;
        let buf = vec![val as u8; n.min(MEMSET_CHUNK)];
        let mut done = 0;
        while done < n {
            let k = (n - done).min(buf.len());
            self.copy(
                (p + done as DevPtr) as *mut c_void,
                buf.as_ptr().cast(),
                k,
                "memset",
            )?;
            done += k;
        }
        Ok(())
    }

    /// `is_accessible_ptr`: whether the device can access `[p, p+size)`: memory this
    /// plugin allocated on it, or any memory when the agent has the full profile (HSA
    /// 1.x: full-profile agents access all host memory). Anything else: false.
    fn is_accessible(&self, p: usize, size: usize) -> bool {
        if p == 0 || size == 0 || p.checked_add(size).is_none() {
            return false;
        }
        self.full_profile
            || (self.blocks.contains(p as DevPtr) && self.blocks.check(p as DevPtr, size).is_ok())
    }
}
