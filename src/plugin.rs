//! The traits a backend implements: [`Plugin`] (the product: its name, devices and the
//! entry points that name no device), [`Device`] (one open device) and, for products
//! that offer OpenACC, [`OpenAcc`] with its [`AccQueue`]. The exported shells
//! (`src/edge/exports/`) call only these. A default method answers "not implemented"
//! the way libgomp expects (an error message and the entry point's failure value), so
//! a backend implements what it supports and nothing else.
//!
//! Threading: libgomp calls entry points from any host thread, concurrently for
//! different devices and (for OpenMP `nowait` and OpenACC queues) for the same device;
//! every implementation must be `Send + Sync` and do its own locking.

use crate::error::{Error, Result};
use crate::libgomp::abi::AddrPair;
use crate::libgomp::interop::{self, InteropObj};
use crate::rect::Rect;
use crate::registry::Registry;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Arc;

/// The error of an entry point a backend does not implement.
pub fn not_implemented<P: Plugin + ?Sized>(entry: &str, what: &str) -> Error {
    Error::NotImplemented(format!(
        "GOMP_OFFLOAD_{entry}: {what} is not implemented in gomp-plugin-rs's {} plugin",
        P::NAME
    ))
}

/// What `load_image` built: libgomp's address table (kernels, variables, then the
/// ICV/extra entries the contract asks for) and the reverse-offload function table
/// (device address of the device's copy, or NULL).
pub struct LoadedImage {
    /// The entries, in libgomp's order; the shell copies them into a `GOMP_PLUGIN_malloc`
    /// block that libgomp frees.
    pub table: Vec<AddrPair>,
    /// The value for `*rev_fn_table` (NULL when the image has no reverse-offload table).
    pub rev_fn_table: *mut u64,
}

/// A product: one kind of device behind one plugin file. Implemented by a unit type;
/// every method is an associated function (libgomp holds no plugin object). The
/// registry of open devices is the product's static [`Registry`].
pub trait Plugin: 'static {
    /// The product's device.
    type Device: Device;
    /// `GOMP_OFFLOAD_get_name`, also the prefix of `GOMP_DEBUG` lines: "nvptx", "gcn".
    const NAME: &'static str;
    /// Appended to the crate version in the handshake's debug line.
    const TAG: &'static str;
    /// What is not offloaded to when libgomp is refused, e.g. "NVIDIA GPUs".
    const GPUS: &'static str;
    /// `GOMP_OFFLOAD_get_caps`.
    const CAPS: u32;
    /// `GOMP_OFFLOAD_get_type` (`OFFLOAD_TARGET_TYPE_*`).
    const TARGET_TYPE: c_int;

    /// The product's open devices.
    fn registry() -> &'static Registry<Self::Device>;
    /// `get_num_devices`: usable devices under the program's `requires` mask; 0 when
    /// there is no usable driver or device (never an error), -1 when devices exist but
    /// cannot meet the mask. Must size the registry (see [`Registry::ensure_len`]).
    fn num_devices(requires_mask: u32) -> i32;
    /// Opens device `ord` (called by `init_device` through the registry).
    fn open(ord: i32) -> Result<Self::Device>;

    /// `get_uid`: the device's unique id, if the driver tells one.
    fn uid(_ord: i32) -> Option<String> {
        None
    }
    /// The open device `ord`, made ready for calls on this thread.
    fn device(ord: i32) -> Result<Arc<Self::Device>> {
        Self::registry().get(ord)
    }
    /// `can_run`: whether a kernel handle from `load_image` can run on the device.
    fn can_run(_kernel: *mut c_void) -> bool {
        true
    }
    /// `page_locked_host_alloc`: page-locked host memory, `None` when out of memory.
    fn page_locked_host_alloc(_size: usize) -> Result<Option<*mut c_void>> {
        Err(not_implemented::<Self>(
            "page_locked_host_alloc",
            "page-locked host memory",
        ))
    }
    /// `page_locked_host_free`; NULL (0) is accepted.
    fn page_locked_host_free(_ptr: usize) -> Result<()> {
        Err(not_implemented::<Self>(
            "page_locked_host_free",
            "page-locked host memory",
        ))
    }
    /// `memcpy2d` / `memcpy3d`: a rectangular copy between host (ordinal -1) and device
    /// or device and device.
    ///
    /// # Safety
    /// The host sides are valid for the rectangle (libgomp's contract).
    unsafe fn copy_rect(_r: &Rect) -> Result<()> {
        Err(not_implemented::<Self>("memcpy2d/3d", "rectangular copy"))
    }
    /// `interop`: initialise (0), use (1) or destroy (2) libgomp's interop object on
    /// device `ord`.
    ///
    /// # Safety
    /// `prefer_type` is NULL or the compiler's encoding.
    unsafe fn interop(
        _obj: &mut InteropObj,
        _ord: c_int,
        _flag: u32,
        _targetsync: bool,
        _prefer_type: *const c_char,
    ) -> Result<()> {
        Err(not_implemented::<Self>("interop", "interop"))
    }
    /// `get_interop_*`: property `prop` of an object this plugin initialised.
    fn interop_property(_obj: &InteropObj, _prop: c_int) -> Result<interop::Value> {
        Err(not_implemented::<Self>("get_interop", "interop"))
    }
    /// `get_interop_type_desc`: the C type of a property (`obj` may be absent).
    fn interop_type_desc(_obj: Option<&InteropObj>, _prop: c_int) -> Option<&'static CStr> {
        None
    }
}

/// One open device. Shared (`Arc`) between the registry and every call in flight;
/// closed once by [`Device::close`] when libgomp finalizes it.
pub trait Device: Send + Sync + Sized + 'static {
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
    ) -> Result<LoadedImage>;
    /// `unload_image`.
    fn unload_image(&self, version: u32, data: *const c_void) -> Result<()>;

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

    /// `run`: an OpenMP target region, waited for.
    ///
    /// # Safety
    /// `kernel` is a handle from this device's `load_image` whose image is loaded;
    /// `args` libgomp's NULL-terminated target-argument array.
    unsafe fn run(
        &self,
        _kernel: *mut c_void,
        _vars: *mut c_void,
        _args: *mut *mut c_void,
    ) -> Result<()> {
        Err(Error::NotImplemented(
            "run: kernels cannot run on this device".into(),
        ))
    }
    /// `async_run`: as `run`, completion reported through
    /// `GOMP_PLUGIN_target_task_completion(async_data)`.
    ///
    /// # Safety
    /// As [`Device::run`].
    unsafe fn run_async(
        self: &Arc<Self>,
        _kernel: *mut c_void,
        _vars: *mut c_void,
        _args: *mut *mut c_void,
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

/// The OpenACC side of a product (`get_caps` includes `GOMP_OFFLOAD_CAP_OPENACC_200`).
pub trait OpenAcc: Plugin {
    /// An async queue (`struct goacc_asyncqueue`, opaque to libgomp: a leaked `Box`).
    type Queue: AccQueue;
    /// Per-thread data (`create_thread_data`, a leaked `Box`).
    type ThreadData: Send + 'static;

    /// `openacc_exec` / `openacc_async_exec` (with `queue`).
    ///
    /// # Safety
    /// `kernel` is a handle from `load_image`; `devaddrs` the mapped addresses; `dims`
    /// libgomp's 3-entry array.
    unsafe fn exec(
        kernel: *const c_void,
        devaddrs: *mut *mut c_void,
        dims: *mut u32,
        queue: Option<&Self::Queue>,
    ) -> Result<()>;
    /// `openacc_create_thread_data` for device `ord`.
    fn thread_data(ord: c_int) -> Result<Self::ThreadData>;
    /// `openacc_async_construct` on device `ord`.
    fn queue(ord: c_int) -> Result<Self::Queue>;
    /// `openacc_get_property`.
    fn property(ord: c_int, prop: u32) -> Result<AccProperty>;
    /// `openacc_cuda_get_current_device`: the calling thread's native device handle.
    fn native_device() -> *mut c_void {
        std::ptr::null_mut()
    }
    /// `openacc_cuda_get_current_context`: the calling thread's native context.
    fn native_context() -> *mut c_void {
        std::ptr::null_mut()
    }
}

/// An OpenACC property value (`union goacc_property_value`).
pub enum AccProperty {
    /// Unknown property or device: 0.
    None,
    /// A size.
    Size(usize),
    /// A static string.
    Str(&'static std::ffi::CStr),
}

/// An OpenACC async queue. libgomp uses one queue from one thread at a time, but
/// `serialize` and callbacks touch two queues or run on driver threads: `Send + Sync`.
pub trait AccQueue: Send + Sync + Sized + 'static {
    /// Waits for the queue and destroys it.
    fn destroy(self) -> Result<()>;
    /// True when idle.
    fn test(&self) -> Result<bool>;
    /// Waits for all work and callbacks queued so far.
    fn synchronize(&self) -> Result<()>;
    /// Makes later work on `later` wait for the work queued on `self` so far.
    fn serialize(&self, later: &Self) -> Result<()>;
    /// Runs `f(data)` once the work queued so far has completed.
    fn callback(&self, f: unsafe extern "C" fn(*mut c_void), data: *mut c_void) -> Result<()>;
    /// Queues a host-to-device copy.
    ///
    /// # Safety
    /// `src` stays valid until the queue has run it (libgomp's contract).
    unsafe fn host2dev(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()>;
    /// Queues a device-to-host copy.
    ///
    /// # Safety
    /// `dst` stays valid until the queue has run it.
    unsafe fn dev2host(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()>;
    /// Queues a device-to-device copy.
    fn dev2dev(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()>;
    /// `openacc_cuda_get_stream`: the native stream.
    fn native_stream(&self) -> *mut c_void {
        std::ptr::null_mut()
    }
    /// `openacc_cuda_set_stream`: makes the queue use the program's stream.
    fn set_native_stream(&self, _stream: *mut c_void) -> Result<()> {
        Err(Error::NotImplemented("openacc_cuda_set_stream".into()))
    }
}
