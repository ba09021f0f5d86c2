//! Memory: device allocations (`cuMemAlloc`/`cuMemFree`, managed memory), page-locked
//! host allocations ([`HostAlloc`]), registered user memory ([`HostRegistration`]) and
//! stream-ordered memory pools ([`MemPool`]).

use super::stream::Stream;
use crate::cu;
use crate::cuda::sys::*;
use gomp_plugin::error::Result;
use std::ffi::c_void;
use std::ptr::NonNull;

/// `size` bytes of device memory in the current context (`cuMemAlloc`). The caller owns
/// the block (device blocks move between the plugin's caches as plain addresses).
#[inline]
pub fn alloc(size: usize) -> Result<CUdeviceptr> {
    let mut p: CUdeviceptr = 0;
    // SAFETY: out-pointer to a local; a context is current (caller).
    unsafe { cu!(cuMemAlloc(&mut p, size)) }?;
    Ok(p)
}

/// Frees a block from [`alloc`] or [`alloc_managed`] (`cuMemFree`).
///
/// # Safety
/// `p` must come from one of them, not be freed yet, and no work may use it any more.
#[inline]
pub unsafe fn free(p: CUdeviceptr) -> Result<()> {
    // SAFETY: caller's guarantee.
    unsafe { cu!(cuMemFree(p)) }
}

/// A device block owned for a while by one piece of code, freed (`cuMemFree`) when
/// dropped, in the context current then (the one it was made in: the owner's, which
/// drops it with that context current).
pub struct DeviceAlloc(CUdeviceptr);

impl DeviceAlloc {
    /// `size` bytes of device memory in the current context ([`alloc`]).
    pub fn new(size: usize) -> Result<DeviceAlloc> {
        alloc(size).map(DeviceAlloc)
    }

    /// The block's device address.
    #[inline]
    pub fn ptr(&self) -> CUdeviceptr {
        self.0
    }
}

impl Drop for DeviceAlloc {
    fn drop(&mut self) {
        // SAFETY: the block came from `alloc`, is freed once, here; its owner queued no
        // work on it that has not run (the owner waits for its streams first).
        if let Err(e) = unsafe { free(self.0) } {
            log::debug!("device block {:#x}: {e}", self.0);
        }
    }
}

/// `size` bytes of managed memory attached globally (`cuMemAllocManaged`).
#[inline]
pub fn alloc_managed(size: usize) -> Result<CUdeviceptr> {
    let mut p: CUdeviceptr = 0;
    // SAFETY: out-pointer to a local; the stand-in reports NOT_SUPPORTED.
    unsafe { cu!(cuMemAllocManaged(&mut p, size, CU_MEM_ATTACH_GLOBAL as u32)) }?;
    Ok(p)
}

/// A synchronous 2-D copy on the legacy default stream that accepts any pitches
/// (`cuMemcpy2DUnaligned`).
///
/// # Safety
/// The descriptor's host side(s) must be valid for the whole block.
#[inline]
pub unsafe fn copy_2d_unaligned(c: &CUDA_MEMCPY2D) -> Result<()> {
    // SAFETY: caller's guarantee.
    unsafe { cu!(cuMemcpy2DUnaligned(c)) }
}

/// The device address of mapped (`DEVICEMAP`) page-locked host memory at `p`.
///
/// # Safety
/// `p` must lie in live page-locked memory.
#[inline]
pub unsafe fn host_device_pointer(p: *mut c_void) -> Result<CUdeviceptr> {
    let mut d: CUdeviceptr = 0;
    // SAFETY: caller's guarantee; out-pointer to a local.
    unsafe { cu!(cuMemHostGetDevicePointer(&mut d, p, 0)) }?;
    Ok(d)
}

/// Page-locked host memory (`cuMemHostAlloc`), freed (`cuMemFreeHost`) when dropped or
/// by [`HostAlloc::free`]. The bytes are plain memory the owner reads and writes
/// through [`HostAlloc::as_ptr`]; `Send + Sync` (the handle is an address, and freeing
/// may happen on any thread).
#[repr(transparent)]
#[derive(Debug)]
pub struct HostAlloc(NonNull<c_void>);

// SAFETY: page-locked memory is plain memory; the driver frees it from any thread.
unsafe impl Send for HostAlloc {}
// SAFETY: `&self` only hands out the address.
unsafe impl Sync for HostAlloc {}

impl HostAlloc {
    /// `bytes` of page-locked memory with `flags` (`CU_MEMHOSTALLOC_*`), in the current
    /// context.
    #[inline]
    pub fn alloc(bytes: usize, flags: u32) -> Result<HostAlloc> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; a context is current (caller).
        unsafe { cu!(cuMemHostAlloc(&mut p, bytes, flags)) }?;
        // A successful allocation is never NULL; treat one as out of memory.
        NonNull::new(p)
            .map(HostAlloc)
            .ok_or_else(|| crate::cuda::error("cuMemHostAlloc", CUDA_ERROR_OUT_OF_MEMORY))
    }

    /// `bytes` of page-locked memory every context can use for DMA (`PORTABLE`) and the
    /// device can address (`DEVICEMAP`), in the current context.
    #[inline]
    pub fn mapped(bytes: usize) -> Result<HostAlloc> {
        HostAlloc::alloc(
            bytes,
            (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP) as u32,
        )
    }

    /// The memory's address.
    #[inline]
    pub fn as_ptr(&self) -> *mut c_void {
        self.0.as_ptr()
    }

    /// The device address of mapped (`DEVICEMAP`) memory.
    #[inline]
    pub fn device_pointer(&self) -> Result<CUdeviceptr> {
        // SAFETY: the memory is page-locked and alive.
        unsafe { host_device_pointer(self.0.as_ptr()) }
    }

    /// Hands the address out; the memory stays allocated (see [`HostAlloc::from_raw`]).
    #[inline]
    pub fn into_raw(self) -> *mut c_void {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        p
    }

    /// Takes back memory handed out by [`HostAlloc::into_raw`]; `None` for NULL.
    ///
    /// # Safety
    /// `p` must come from `into_raw` and have no other owner.
    #[inline]
    pub unsafe fn from_raw(p: *mut c_void) -> Option<HostAlloc> {
        NonNull::new(p).map(HostAlloc)
    }

    /// Frees the memory, returning the driver's error if any.
    #[inline]
    pub fn free(self) -> Result<()> {
        let p = self.into_raw();
        // SAFETY: allocated by `alloc`, freed once.
        unsafe { cu!(cuMemFreeHost(p)) }
    }
}

impl Drop for HostAlloc {
    fn drop(&mut self) {
        // SAFETY: allocated by `alloc`, freed once.
        if let Err(e) = unsafe { cu!(cuMemFreeHost(self.0.as_ptr())) } {
            log::debug!("page-locked memory {:p}: {e}", self.0);
        }
    }
}

/// A host range registered with the driver (`cuMemHostRegister`), unregistered
/// (`cuMemHostUnregister`) when dropped or by [`HostRegistration::unregister`]. The
/// memory stays its owner's. `Send + Sync` (an address).
#[repr(transparent)]
#[derive(Debug)]
pub struct HostRegistration(usize);

impl HostRegistration {
    /// Registers `[start, start+bytes)` with `flags` (`CU_MEMHOSTREGISTER_*`) in the
    /// current context.
    ///
    /// # Safety
    /// The range must stay mapped while registered.
    #[inline]
    pub unsafe fn register(start: usize, bytes: usize, flags: u32) -> Result<HostRegistration> {
        // SAFETY: caller's guarantee; the driver validates the range and fails rather
        // than faulting.
        unsafe { cu!(cuMemHostRegister(start as *mut c_void, bytes, flags)) }?;
        Ok(HostRegistration(start))
    }

    /// Hands the registration out as its start address (see [`HostRegistration::from_raw`]).
    #[inline]
    pub fn into_raw(self) -> usize {
        let s = self.0;
        std::mem::forget(self);
        s
    }

    /// Takes back a registration handed out by [`HostRegistration::into_raw`].
    ///
    /// # Safety
    /// `start` must come from `into_raw` and have no other owner.
    #[inline]
    pub unsafe fn from_raw(start: usize) -> HostRegistration {
        HostRegistration(start)
    }

    /// Unregisters the range (in the current context), returning the driver's error.
    #[inline]
    pub fn unregister(self) -> Result<()> {
        let s = self.into_raw();
        // SAFETY: registered by `register`, unregistered once.
        unsafe { cu!(cuMemHostUnregister(s as *mut c_void)) }
    }
}

impl Drop for HostRegistration {
    fn drop(&mut self) {
        // SAFETY: registered by `register`, unregistered once.
        if let Err(e) = unsafe { cu!(cuMemHostUnregister(self.0 as *mut c_void)) } {
            log::debug!("registered host range {:#x}: {e}", self.0);
        }
    }
}

/// A memory pool handle, borrowed from its [`MemPool`] (valid while that lives). `Copy`,
/// `Send + Sync`: the driver serialises operations on a pool.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemPoolRef(CUmemoryPool);

// SAFETY: pool handles may be used from any host thread.
unsafe impl Send for MemPoolRef {}
// SAFETY: as above; the driver serialises operations on the pool.
unsafe impl Sync for MemPoolRef {}

impl MemPoolRef {
    /// Sets a `u64` attribute of the pool.
    #[inline]
    pub fn set_u64(self, a: CUmemPool_attribute, mut v: u64) -> Result<()> {
        // SAFETY: the attribute takes a pointer to a u64 (caller names such one).
        unsafe {
            cu!(cuMemPoolSetAttribute(
                self.0,
                a,
                (&mut v as *mut u64).cast()
            ))
        }
    }

    /// Reads a `u64` attribute of the pool.
    #[inline]
    pub fn get_u64(self, a: CUmemPool_attribute) -> Result<u64> {
        let mut v: u64 = 0;
        // SAFETY: the attribute writes a u64 (caller names such one).
        unsafe {
            cu!(cuMemPoolGetAttribute(
                self.0,
                a,
                (&mut v as *mut u64).cast()
            ))
        }?;
        Ok(v)
    }

    /// Releases the pool's unused memory down to `keep` bytes.
    #[inline]
    pub fn trim_to(self, keep: usize) -> Result<()> {
        // SAFETY: a live pool.
        unsafe { cu!(cuMemPoolTrimTo(self.0, keep)) }
    }

    /// `size` bytes from the pool, ordered on `s` (`cuMemAllocFromPoolAsync`).
    #[inline]
    pub fn alloc_async(self, size: usize, s: Stream) -> Result<CUdeviceptr> {
        let mut p: CUdeviceptr = 0;
        // SAFETY: out-pointer to a local; live pool and stream.
        unsafe { cu!(cuMemAllocFromPoolAsync(&mut p, size, self.0, s.raw())) }?;
        Ok(p)
    }
}

/// Returns block `p` to its pool, ordered on `s` (`cuMemFreeAsync`).
///
/// # Safety
/// `p` must come from [`MemPoolRef::alloc_async`], not be freed yet, and no work
/// ordered before the free on `s` may still use it.
#[inline]
pub unsafe fn free_async(p: CUdeviceptr, s: Stream) -> Result<()> {
    // SAFETY: caller's guarantee.
    unsafe { cu!(cuMemFreeAsync(p, s.raw())) }
}

/// A stream-ordered memory pool of the plugin's own (`cuMemPoolCreate`), destroyed
/// (`cuMemPoolDestroy`) when dropped. `Send + Sync`: the driver serialises operations
/// on a pool.
#[repr(transparent)]
#[derive(Debug)]
pub struct MemPool(MemPoolRef);

impl MemPool {
    /// A pool of pinned device memory on `dev`.
    #[inline]
    pub fn create_on_device(dev: CUdevice) -> Result<MemPool> {
        // SAFETY: plain data; zero is the documented default for unused fields.
        let mut props: CUmemPoolProps = unsafe { std::mem::zeroed() };
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
        props.locationId = dev;
        let mut pool: CUmemoryPool = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; `props` is a valid descriptor.
        unsafe { cu!(cuMemPoolCreate(&mut pool, &props)) }?;
        Ok(MemPool(MemPoolRef(pool)))
    }

    /// The borrowed handle (valid while `self` lives).
    #[inline]
    pub fn handle(&self) -> MemPoolRef {
        self.0
    }
}

impl Drop for MemPool {
    fn drop(&mut self) {
        // SAFETY: created by `create_on_device`, destroyed once.
        if let Err(e) = unsafe { cu!(cuMemPoolDestroy(self.0 .0)) } {
            log::debug!("memory pool {:p}: {e}", self.0 .0);
        }
    }
}
