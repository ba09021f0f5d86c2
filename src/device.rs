//! One open device of a product, in two parts: the [`Device`] trait (the opened
//! device: images, kernels, launches, close) and the [`DeviceCore`] trait (the part
//! that owns the device's context and memory, which the memory entry points reach
//! directly); and what `load_image` returns. The framework's registry owns each device
//! (`Arc`); the exported shells call it.
//!
//! Threading: libgomp calls a device from any host thread, concurrently (OpenMP
//! `nowait`, several host threads); implementations are `Send + Sync` and lock inside.

use crate::blocks::DevPtr;
use crate::error::{Error, Result};
use crate::libgomp::abi::{version_dev, AddrPair};
use crate::libgomp::target_args::LaunchRequest;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// Refuses an image whose device-data version (the low half of libgomp's version word)
/// is newer than `max`, the newest this plugin reads, in the stock plugins' words:
/// "Offload data incompatible with `kind` plugin (expected ..., received ...)".
/// The exported `load_image`/`unload_image` call it before anything else.
pub fn check_image_version(kind: &str, max: u32, version: u32) -> Result<()> {
    if version_dev(version) > max {
        return Err(Error::invalid(format!(
            "Offload data incompatible with {kind} plugin (expected {max}, received {})",
            version_dev(version)
        )));
    }
    Ok(())
}

/// What `load_image` built: the image's kernels, the rest of libgomp's address table
/// (variables, then the ICV/extra entries the contract asks for) and the
/// reverse-offload function table (device address of the device's copy, or NULL). The
/// exported shell registers the kernels in the product's live set
/// ([`crate::kernels::KernelSet`]) and puts their handles first in the table.
pub struct LoadedImage<K> {
    /// The offload kernels, in the host table's order.
    pub kernels: Vec<Arc<K>>,
    /// The entries after the kernels', in libgomp's order; the shell copies the whole
    /// table into a `GOMP_PLUGIN_malloc` block that libgomp frees.
    pub table: Vec<AddrPair>,
    /// The value for `*rev_fn_table` (NULL when the image has no reverse-offload table).
    pub rev_fn_table: *mut u64,
}

/// The core of one open device: what makes it current on a thread and its memory and
/// copies, the entry points libgomp's memory calls reach directly (`alloc`, `free`,
/// the copies, `memset`, `is_accessible_ptr`, managed memory). Device addresses are
/// [`DevPtr`]s. Owned by the opened device ([`Device::core`]) and, where the backend
/// shares it, by its threads and queues; thread-safe.
pub trait DeviceCore: Send + Sync + 'static {
    /// Makes the device ready for calls on this thread (e.g. its context current).
    /// Called by the registry on every lookup.
    fn activate(&self) -> Result<()> {
        Ok(())
    }
    /// `alloc`: device memory for libgomp.
    fn alloc(&self, size: usize) -> Result<DevPtr>;
    /// `free` (NULL, 0, is accepted).
    fn free(&self, p: DevPtr) -> Result<()>;
    /// `dev2host`.
    ///
    /// # Safety
    /// `dst` is a host buffer of `n` writable bytes.
    unsafe fn dev2host(&self, dst: *mut c_void, src: DevPtr, n: usize) -> Result<()>;
    /// `host2dev`.
    ///
    /// # Safety
    /// `src` is a host buffer of `n` readable bytes.
    unsafe fn host2dev(&self, dst: DevPtr, src: *const c_void, n: usize) -> Result<()>;
    /// `dev2dev`.
    fn dev2dev(&self, dst: DevPtr, src: DevPtr, n: usize) -> Result<()>;
    /// `memset`: `n` bytes at `p` to the low byte of `val`.
    fn memset(&self, p: DevPtr, val: c_int, n: usize) -> Result<()>;
    /// `is_accessible_ptr`: whether the device can access all of `[p, p+size)`.
    fn is_accessible(&self, p: usize, size: usize) -> bool;
    /// `managed_alloc`.
    fn managed_alloc(&self, _size: usize) -> Result<DevPtr> {
        Err(Error::NotImplemented(
            "managed_alloc: managed memory is not implemented".into(),
        ))
    }
    /// `managed_free`.
    fn managed_free(&self, _p: DevPtr) -> Result<()> {
        Err(Error::NotImplemented(
            "managed_free: managed memory is not implemented".into(),
        ))
    }
}

/// One opened device: its images and kernels, its launches and its close. Shared
/// (`Arc`) between the registry and every call in flight; closed once by
/// [`Device::close`] when libgomp finalizes it.
pub trait Device: Send + Sync + Sized + 'static {
    /// The device's core (context, memory, copies).
    type Core: DeviceCore;
    /// A kernel of a loaded image: what `run`, `async_run` and OpenACC's `exec` launch.
    /// Owned by `Arc`s (the image's and the framework's live set); its address is the
    /// handle libgomp keeps.
    type Kernel: Send + Sync + 'static;

    /// The device's core.
    fn core(&self) -> &Self::Core;
    /// `fini_device`: unloads images, frees memory, stops helpers.
    fn close(&self) -> Result<()>;

    /// `load_image`: checks and loads an image; `want_rev` when libgomp asks for the
    /// reverse-offload table.
    ///
    /// # Safety
    /// `data` is libgomp's image descriptor; `host_ind_fns` NULL or the image's host
    /// indirect-function table (libgomp 14+, version-3 images).
    unsafe fn load_image(
        self: &Arc<Self>,
        version: u32,
        data: *const c_void,
        want_rev: bool,
        host_ind_fns: *const u64,
    ) -> Result<LoadedImage<Self::Kernel>>;
    /// `unload_image` (the version word was checked by the caller; the image's kernels
    /// are already out of the live set).
    fn unload_image(&self, data: *const c_void) -> Result<()>;

    /// `run`: an OpenMP target region, waited for: `kernel`, a kernel this device
    /// loaded, with the launch `req` (decoded from libgomp's target arguments).
    fn run(&self, _kernel: &Arc<Self::Kernel>, _req: &LaunchRequest) -> Result<()> {
        Err(Error::NotImplemented(
            "run: kernels cannot run on this device".into(),
        ))
    }
    /// `async_run`: as `run`, completion reported through
    /// `GOMP_PLUGIN_target_task_completion(async_data)`.
    fn run_async(
        self: &Arc<Self>,
        _kernel: &Arc<Self::Kernel>,
        _req: &LaunchRequest,
        _async_data: *mut c_void,
    ) -> Result<()> {
        Err(Error::NotImplemented(
            "async_run: kernels cannot run on this device".into(),
        ))
    }
}
