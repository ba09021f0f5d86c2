//! One open device of a product: the [`Device`] trait and what `load_image` returns.
//! The framework's registry owns each device (`Arc`); the exported shells call it.
//!
//! Threading: libgomp calls a device from any host thread, concurrently (OpenMP
//! `nowait`, several host threads); implementations are `Send + Sync` and lock inside.

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

/// One open device. Shared (`Arc`) between the registry and every call in flight;
/// closed once by [`Device::close`] when libgomp finalizes it.
pub trait Device: Send + Sync + Sized + 'static {
    /// A kernel of a loaded image: what `run`, `async_run` and OpenACC's `exec` launch.
    /// Owned by `Arc`s (the image's and the framework's live set); its address is the
    /// handle libgomp keeps.
    type Kernel: Send + Sync + 'static;

    /// Makes the device ready for calls on this thread (e.g. its context current).
    /// Called by the registry on every lookup.
    fn activate(&self) -> Result<()> {
        Ok(())
    }
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

    /// `alloc`: device memory for libgomp.
    fn alloc(&self, size: usize) -> Result<*mut c_void>;
    /// `free`.
    fn free(&self, ptr: *mut c_void) -> Result<()>;
    /// `dev2host`.
    ///
    /// # Safety
    /// `dst` is a host buffer of `n` writable bytes.
    unsafe fn dev2host(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()>;
    /// `host2dev`.
    ///
    /// # Safety
    /// `src` is a host buffer of `n` readable bytes.
    unsafe fn host2dev(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()>;
    /// `dev2dev`.
    fn dev2dev(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()>;
    /// `memset`: `n` bytes at `ptr` to the low byte of `val`.
    fn memset(&self, ptr: *mut c_void, val: c_int, n: usize) -> Result<()>;
    /// `is_accessible_ptr`.
    fn is_accessible(&self, ptr: *const c_void, size: usize) -> Result<bool>;

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
    /// `managed_alloc`.
    fn managed_alloc(&self, _size: usize) -> Result<*mut c_void> {
        Err(Error::NotImplemented(
            "managed_alloc: managed memory is not implemented".into(),
        ))
    }
    /// `managed_free`.
    fn managed_free(&self, _ptr: *mut c_void) -> Result<()> {
        Err(Error::NotImplemented(
            "managed_free: managed memory is not implemented".into(),
        ))
    }
}
