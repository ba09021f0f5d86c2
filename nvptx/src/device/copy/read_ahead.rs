//! Copy path: a synchronous device-to-host copy served from what the calling thread's
//! latest run read ahead: the route ([`FromReadAhead`]) and the read-ahead itself
//! ([`ReadAhead`], which learns the copy otherwise). Not once OpenACC is in use
//! (synchronous copies are then ordered after the OpenACC queues' work). Sized by
//! `readahead`.
//!
//! The read-ahead of a synchronous target region's results: the device-to-host copies that
//! libgomp makes right after `GOMP_OFFLOAD_run` (the region's `from` maps) folded into
//! the run's own wait.
//!
//! A device-to-host copy made on its own costs a round trip to the device (queue the
//! copy, wait for it) after the run's round trip (launch, wait for the kernel). So the
//! run, after queueing the kernel, also queues a copy of the bytes the region is
//! expected to read back into page-locked memory of the calling thread (the *shadow*),
//! on the same stream; the run's single wait covers both. A device-to-host copy that
//! comes next on that thread and lies inside what was read ahead is served from the
//! shadow, on the CPU.
//!
//! What is read ahead is learned per kernel and thread (a *plan*): the span, relative to
//! the region's `vars` block, of the device-to-host copies that followed the kernel's
//! last run on the thread, up to `GOMP_NVPTX_TUNE`'s `readahead` bytes. A kernel whose
//! runs are followed by no such copy has no plan and reads nothing ahead; a plan that
//! went unused by two runs in a row is dropped (and learned again from the next copy).
//!
//! Why serving from the shadow is the copy the program asked for: the shadow holds the
//! device bytes as they were right after the kernel, read in stream order after it. It
//! is used only by a device-to-host copy of the same thread whose every call into the
//! plugin since the run was such a copy (each call into the plugin that touches a
//! device counts, through [`entered`]): no host-to-device copy, launch, memset, free or
//! OpenACC operation of that thread lies between, so only another thread, or work not
//! ordered with this thread's calls, could have changed those bytes since the kernel
//! ended, and such a change races with the copy whenever the copy runs. Nothing is
//! read ahead outside the live block that holds the run's `vars` (libgomp's block for
//! the region, freed by this thread only after the region's copies back), nor once OpenACC is in use (its
//! synchronous copies are ordered after the OpenACC queues' work; the shadow is not).
//! The run still waits for its kernel: a region without `from` maps returns after its
//! kernel, and a kernel's failure is reported by its own run.
//!
//! Ownership and threading: one [`ReadAhead`] per host thread and device, in the
//! thread's lane (`cuda::pools::thread_streams`), used only by the thread owning that
//! lane; its shadow is allocated on first use (context current) and freed with the lane
//! at device close (the copies into it are waited for by the run that queued them).

use super::host_copy::HostCopy;
use super::path::{CopyPath, Ended, Knob, Route, Taken, Takes};
use crate::config::Config;
use crate::cuda::pools::thread_streams::LaneData;
use crate::cuda::safe::{HostAlloc, Stream};
use crate::cuda::sys::CUdeviceptr;
use crate::device::parts::Parts;
use crate::observe::profile::CopyDir;
use gomp_plugin::error::Result;
use std::cell::{Cell, UnsafeCell};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The read-ahead path (zero-sized, stateless, `Sync`; the read-ahead, [`ReadAhead`],
/// is the calling thread's lane's).
pub struct FromReadAhead;

impl Route for FromReadAhead {
    fn label(&self) -> &'static str {
        "read_ahead"
    }

    fn knob(&self) -> Option<Knob> {
        Some(Knob::Shared("readahead"))
    }

    fn takes(&self, _config: &Config) -> Takes {
        Takes::of(CopyDir::D2H, false)
    }
}

impl<B, T: LaneData + AsRef<ReadAhead>> CopyPath<B, T> for FromReadAhead {
    unsafe fn try_copy(&self, d: &Parts<B, T>, c: &HostCopy) -> Option<Taken> {
        if d.settings.openacc_in_use() {
            return None;
        }
        let lane = d.launch.thread_streams().get().ok()?;
        // SAFETY: this thread's lane (`get`); `c.host` writable for `c.n` bytes and this
        // the first step of the copy (caller).
        let served = unsafe {
            lane.data.as_ref().serve(
                c.host.cast(),
                c.dev,
                c.n,
                d.settings.config().tune.readahead,
            )
        };
        served.then(|| {
            // Served from what the run read ahead: the range marks it, near-instant.
            c.taken(self.label());
            Ok(Ended::Done)
        })
    }
}

thread_local! {
    /// Calls of the thread into the plugin that touched a device (see [`entered`]).
    static EPOCH: Cell<u64> = const { Cell::new(0) };
}

/// Counts a call of the calling thread into the plugin that touches a device: every
/// entry point makes the device's context current first, which calls this.
#[inline]
pub fn entered() {
    let _ = EPOCH.try_with(|e| e.set(e.get().wrapping_add(1)));
}

/// The calling thread's count of [`entered`] (`None` while the thread ends).
#[inline]
fn epoch() -> Option<u64> {
    EPOCH.try_with(Cell::get).ok()
}

/// Unused read-aheads in a row after which a plan is dropped.
const MISSES: u8 = 2;

/// What one kernel's runs read ahead, relative to their `vars` address.
#[derive(Clone, Copy, Default)]
struct Plan {
    off: u64,
    len: usize,
    /// Runs in a row whose read-ahead no copy used.
    misses: u8,
}

/// The thread's latest run and what it read ahead.
struct Last {
    /// The kernel (its plan's key) and the run's `vars`.
    key: usize,
    vars: CUdeviceptr,
    /// [`epoch`] when the run ended, or when the last copy it served or saw ended.
    epoch: u64,
    /// The device bytes in the shadow (`len` 0: none).
    addr: CUdeviceptr,
    len: usize,
    /// Whether a copy was served from the shadow.
    hit: bool,
}

/// The plans' hasher. Their keys are the addresses of the plugin's own kernel records,
/// not values the program chooses, so a multiply-and-fold does; the default SipHash
/// cost about 60 instructions per lookup, two or three lookups per region.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    #[inline]
    fn finish(&self) -> u64 {
        // The table takes its control bits from the top and its index from the bottom:
        // both get the product's well-mixed high half.
        self.0 ^ (self.0 >> 32)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

#[derive(Default)]
struct Inner {
    shadow: Option<HostAlloc>,
    plans: HashMap<usize, Plan, BuildHasherDefault<KeyHasher>>,
    last: Option<Last>,
}

/// One thread's read-ahead on one device (empty until first used).
#[derive(Default)]
pub struct ReadAhead(UnsafeCell<Inner>);

// SAFETY: used only by the thread owning the lane it belongs to (one live thread at a
// time, see `cuda::pools::thread_streams`), and dropped by the device's close when no
// thread uses it.
unsafe impl Sync for ReadAhead {}

/// Most plans a thread keeps per device; past it they are all dropped (and relearned).
const PLANS: usize = 1024;

impl ReadAhead {
    /// # Safety
    /// Only the thread owning the lane; no reference into the cell is kept.
    #[allow(clippy::mut_from_ref)]
    unsafe fn inner(&self) -> &mut Inner {
        // SAFETY: caller's guarantee.
        unsafe { &mut *self.0.get() }
    }

    /// Before a run of kernel `key` with `vars`: closes the books of the thread's
    /// previous run (a read-ahead no copy used counts against its plan) and returns what
    /// this run should read ahead, the device range `[addr, addr + len)`, if its kernel
    /// has a plan, `inside(addr, len)` says the range lies in the live block that holds `vars` and the
    /// shadow (`limit` bytes, allocated here on first use, context current) can be had.
    ///
    /// # Safety
    /// Only the thread owning the lane may call this.
    pub unsafe fn plan(
        &self,
        key: usize,
        vars: CUdeviceptr,
        limit: usize,
        inside: impl FnOnce(CUdeviceptr, usize) -> bool,
    ) -> Option<(CUdeviceptr, usize)> {
        // SAFETY: the owning thread (caller); no reference outlives this call.
        let r = unsafe { self.inner() };
        if let Some(l) = r.last.take() {
            if l.len > 0 {
                if let Some(p) = r.plans.get_mut(&l.key) {
                    if l.hit {
                        p.misses = 0;
                    } else {
                        p.misses += 1;
                        if p.misses >= MISSES {
                            *p = Plan::default();
                        }
                    }
                }
            }
        }
        if vars == 0 || limit == 0 {
            return None;
        }
        let p = *r.plans.get(&key)?;
        if p.len == 0 || p.len > limit {
            return None;
        }
        let addr = vars.checked_add(p.off)?;
        if !inside(addr, p.len) {
            return None;
        }
        if r.shadow.is_none() {
            match HostAlloc::alloc(limit, 0) {
                Ok(m) => r.shadow = Some(m),
                Err(e) => {
                    log::debug!("read-ahead: {e}; reading nothing ahead");
                    return None;
                }
            }
        }
        Some((addr, p.len))
    }

    /// Queues on `s` the copy of `[addr, addr + len)` (from [`ReadAhead::plan`]) into
    /// the shadow.
    ///
    /// # Safety
    /// Only the thread owning the lane; `s` a stream of the device, waited for before
    /// the shadow is read or freed; the range from `plan` of the same run.
    pub unsafe fn queue(&self, s: Stream, addr: CUdeviceptr, len: usize) -> Result<()> {
        // SAFETY: the owning thread (caller); no reference outlives this call.
        let r = unsafe { self.inner() };
        let Some(m) = &r.shadow else {
            return Err(gomp_plugin::error::Error::invalid("read-ahead: no shadow"));
        };
        // SAFETY: the shadow holds `limit` ≥ `len` bytes (`plan`) and is read only after
        // the stream has been waited for (caller).
        unsafe { s.copy_dtoh(m.as_ptr(), addr, len) }?;
        Ok(())
    }

    /// After a run of kernel `key` with `vars` that completed: `read` is what it read
    /// ahead (queued before the run's wait), if anything.
    ///
    /// # Safety
    /// Only the thread owning the lane, after the run's wait succeeded.
    pub unsafe fn ran(&self, key: usize, vars: CUdeviceptr, read: Option<(CUdeviceptr, usize)>) {
        // SAFETY: the owning thread (caller); no reference outlives this call.
        let r = unsafe { self.inner() };
        r.last = epoch().map(|epoch| {
            let (addr, len) = read.unwrap_or((0, 0));
            Last {
                key,
                vars,
                epoch,
                addr,
                len,
                hit: false,
            }
        });
    }

    /// A synchronous device-to-host copy of `n` bytes from `src` to `dst`: served from
    /// the shadow (true) when the thread's latest call into the plugin was the run, or a
    /// copy like this one after it, and the bytes lie inside what it read ahead. When
    /// not served but following the run so, the copy is learned into the kernel's plan
    /// (within `limit` bytes).
    ///
    /// # Safety
    /// Only the thread owning the lane, as its first step of the copy (after the entry
    /// point's activation); `dst` writable for `n` bytes.
    pub unsafe fn serve(&self, dst: *mut u8, src: CUdeviceptr, n: usize, limit: usize) -> bool {
        // SAFETY: the owning thread (caller); no reference outlives this call.
        let r = unsafe { self.inner() };
        let Some(l) = r.last.as_mut() else {
            return false;
        };
        // This copy's entry point counted one call since the run or the last such copy.
        let now = epoch();
        if now != Some(l.epoch.wrapping_add(1)) {
            // Something else came between: what was read ahead is stale (and stays so:
            // the count only grows). `plan` counts it as unused.
            return false;
        }
        l.epoch = now.unwrap_or(0);
        let end = src.checked_add(n as u64);
        if l.len > 0 && src >= l.addr && end.is_some_and(|e| e <= l.addr + l.len as u64) {
            if let Some(m) = &r.shadow {
                // SAFETY: the shadow holds the bytes of `[l.addr, l.addr + l.len)`, copied
                // by the run (waited for); `dst` is writable for `n` bytes (caller);
                // distinct buffers (the shadow is the plugin's own).
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        m.as_ptr().cast::<u8>().add((src - l.addr) as usize),
                        dst,
                        n,
                    )
                };
                l.hit = true;
                return true;
            }
        }
        // Learn: the span of this kernel's copies after a run, relative to `vars`.
        let (key, vars) = (l.key, l.vars);
        if src < vars || n == 0 || n > limit {
            return false;
        }
        let off = src - vars;
        if r.plans.len() >= PLANS && !r.plans.contains_key(&key) {
            r.plans.clear();
        }
        let p = r.plans.entry(key).or_default();
        let (lo, hi) = if p.len == 0 {
            (off, off + n as u64)
        } else {
            (p.off.min(off), (p.off + p.len as u64).max(off + n as u64))
        };
        if hi - lo <= limit as u64 {
            p.off = lo;
            p.len = (hi - lo) as usize;
        }
        false
    }
}
