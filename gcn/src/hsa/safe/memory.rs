//! Memory through the core HSA 1.x API: [`Allocation`], a block of a region that is
//! freed when dropped (`hsa_memory_allocate` / `hsa_memory_free`, with
//! `hsa_memory_assign_agent` where the runtime has it), and [`copy`]
//! (`hsa_memory_copy`, synchronous: complete when it returns).
//!
//! Thread-safety: the runtime's memory calls are thread-safe (HSA spec).

use crate::hsa::error::{check, Op};
use crate::hsa::sys::*;
use crate::hsa::table::Runtime;
use gomp_plugin::error::{Error, Result};
use std::ffi::c_void;

/// `HSA_ACCESS_PERMISSION_RW`.
pub const ACCESS_RW: u32 = 3;

/// A block of `size` bytes of one region, freed when dropped (a failure is logged) or
/// by [`Allocation::free`]. Owns the block; `Send + Sync`: the handle is an address,
/// and the runtime's memory calls may come from any thread.
pub struct Allocation {
    ptr: *mut c_void,
    size: usize,
    rt: &'static Runtime,
}

// SAFETY: a device address; the runtime's memory calls are thread-safe.
unsafe impl Send for Allocation {}
// SAFETY: as above; `&self` methods only read the address or copy into the block
// through the runtime.
unsafe impl Sync for Allocation {}

impl Allocation {
    /// Allocates `size` bytes (at least 1) of `region`; `call` names the call in the
    /// error, built only if it fails (e.g. "hsa_memory_allocate (kernel arguments, 4096
    /// bytes)").
    pub fn new(
        rt: &'static Runtime,
        region: hsa_region_t,
        size: usize,
        call: impl Op,
    ) -> Result<Allocation> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        let st = unsafe { (rt.hsa_memory_allocate)(region, size.max(1), &mut p) };
        if st == hsa_status_t_HSA_STATUS_SUCCESS && p.is_null() {
            return Err(Error::Invalid(format!("{} returned NULL", call.name())));
        }
        check(st, call)?;
        Ok(Allocation { ptr: p, size, rt })
    }

    /// Gives `agent` read-write access (`hsa_memory_assign_agent`); nothing when the
    /// runtime lacks the entry point (it is optional in the table).
    pub fn assign_rw(&self, agent: hsa_agent_t) -> Result<()> {
        if !self.rt.has("hsa_memory_assign_agent") {
            return Ok(());
        }
        // SAFETY: our live block.
        let st = unsafe { (self.rt.hsa_memory_assign_agent)(self.ptr, agent, ACCESS_RW) };
        check(st, "hsa_memory_assign_agent")
    }

    /// The block's address.
    #[inline]
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    /// The size asked for, bytes.
    #[inline]
    pub fn size(&self) -> usize {
        self.size
    }

    /// Copies `src` to offset `off` of the block; `call` names the call in the error,
    /// built only if it fails.
    pub fn write(&self, off: usize, src: &[u8], call: impl Op) -> Result<()> {
        if off.checked_add(src.len()).is_none_or(|end| end > self.size) {
            return Err(Error::invalid(format!(
                "{}: {} bytes at offset {off} exceed the block of {} bytes",
                call.name(),
                src.len(),
                self.size
            )));
        }
        // SAFETY: the range lies in our live block (checked above); `src` is a slice.
        unsafe {
            copy(
                self.rt,
                self.ptr.cast::<u8>().add(off).cast(),
                src.as_ptr().cast(),
                src.len(),
                call,
            )
        }
    }

    /// Frees the block, returning the runtime's error if any (`call` names it, built
    /// only if it fails).
    pub fn free_as(self, call: impl Op) -> Result<()> {
        let (p, rt) = (self.ptr, self.rt);
        std::mem::forget(self);
        // SAFETY: allocated by `new`, freed once (ownership ends here).
        let st = unsafe { (rt.hsa_memory_free)(p) };
        check(st, call)
    }

    /// Frees the block, returning the runtime's error if any.
    pub fn free(self) -> Result<()> {
        self.free_as("hsa_memory_free")
    }

    /// Hands the block out as a bare address without freeing it (see
    /// [`Allocation::from_raw`]).
    pub fn into_raw(self) -> *mut c_void {
        let p = self.ptr;
        std::mem::forget(self);
        p
    }

    /// Takes ownership of a block handed out by [`Allocation::into_raw`] (its size is
    /// not known again: 0, so [`Allocation::write`] refuses every write).
    ///
    /// # Safety
    /// `p` must come from [`Allocation::into_raw`] and have no other owner.
    pub unsafe fn from_raw(rt: &'static Runtime, p: *mut c_void) -> Allocation {
        Allocation {
            ptr: p,
            size: 0,
            rt,
        }
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        // SAFETY: allocated by `new`, freed once.
        let st = unsafe { (self.rt.hsa_memory_free)(self.ptr) };
        if let Err(e) = check(st, "hsa_memory_free") {
            log::debug!("{e}");
        }
    }
}

/// Copies `n` bytes from `src` to `dst` (`hsa_memory_copy`, either direction or device
/// to device), complete when it returns; `call` names the call in the error, built only if
/// it fails.
///
/// # Safety
/// `src` must be readable and `dst` writable for `n` bytes (host memory, or device
/// memory of this runtime).
pub unsafe fn copy(
    rt: &Runtime,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    call: impl Op,
) -> Result<()> {
    // SAFETY: caller's guarantees; the runtime copies `n` bytes and returns when done.
    let st = unsafe { (rt.hsa_memory_copy)(dst, src, n) };
    check(st, call)
}
