//! The OpenACC side of a product: [`OpenAcc`] (kernel execution, per-thread data,
//! properties, the CUDA-interop calls) and its async queue, [`AccQueue`]. Only products
//! whose `get_caps` offers OpenACC implement it and export the OpenACC rows of the entry-point table (`src/edge/table.rs`).

use crate::error::{Error, Result};
use crate::kernels::Live;
use crate::plugin::{KernelOf, Plugin};
use std::ffi::{c_int, c_void};

/// One OpenACC launch as libgomp asked for it (`openacc_exec`, `openacc_async_exec`),
/// decoded once by the exported shell. A plain value, `Send`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccLaunch {
    /// Device address of the block of mapped-variable addresses (0 when nothing is
    /// mapped), the kernel's one argument.
    pub devaddrs: u64,
    /// Gangs, workers, vector length asked for (0: the product chooses; libgomp's
    /// `dims`, all 0 when it passes none).
    pub dims: [u32; 3],
}

impl AccLaunch {
    /// Reads libgomp's `dims` (NULL: all 0).
    ///
    /// # Safety
    /// `dims` is NULL or points to 3 readable `u32`.
    pub unsafe fn dims(dims: *const u32) -> [u32; 3] {
        if dims.is_null() {
            return [0; 3];
        }
        // SAFETY: caller's guarantee.
        unsafe { [*dims, *dims.add(1), *dims.add(2)] }
    }
}

/// The OpenACC side of a product (`get_caps` includes `GOMP_OFFLOAD_CAP_OPENACC_200`).
pub trait OpenAcc: Plugin {
    /// An async queue (`struct goacc_asyncqueue`, opaque to libgomp: a leaked `Box`).
    type Queue: AccQueue;
    /// Per-thread data (`create_thread_data`, a leaked `Box`).
    type ThreadData: Send + 'static;

    /// `openacc_exec` / `openacc_async_exec` (with `queue`): `kernel` (a live kernel
    /// and the device that loaded it) with `launch`. Returns the dimensions launched
    /// when libgomp's `dims` array is to be updated with them.
    fn exec(
        kernel: Live<'_, KernelOf<Self>>,
        launch: &AccLaunch,
        queue: Option<&Self::Queue>,
    ) -> Result<Option<[u32; 3]>>;
    /// `openacc_exec` / `openacc_async_exec` of libgomp 12, which passes the kernel's
    /// argument array on the host (13 and later pass the device address of a block they
    /// filled, see [`OpenAcc::exec`]; `launch.devaddrs` is unused). `args` is that array
    /// as the kernel must see it (`edge::args::acc_host_block`); the product puts it on
    /// the device, runs the kernel as `exec` does and frees the block after the kernel.
    /// Default: refused with an error.
    fn exec_host_block(
        kernel: Live<'_, KernelOf<Self>>,
        args: &[*mut c_void],
        launch: &AccLaunch,
        queue: Option<&Self::Queue>,
    ) -> Result<Option<[u32; 3]>> {
        let _ = (kernel, args, launch, queue);
        Err(Error::invalid(
            "OpenACC kernels of libgomp 12 are not supported by this plugin",
        ))
    }
    /// `openacc_create_thread_data` for device `ord`.
    fn thread_data(ord: c_int) -> Result<Self::ThreadData>;
    /// `openacc_async_construct` on device `ord`.
    fn queue(ord: c_int) -> Result<Self::Queue>;
    /// `openacc_get_property`.
    fn property(ord: c_int, prop: u32) -> Result<AccProperty>;
    /// The calling thread's data (what `openacc_create_thread_data` made for it), or
    /// `None` when libgomp keeps none for it (`GOMP_PLUGIN_acc_thread`).
    fn current_thread_data() -> Option<&'static Self::ThreadData> {
        let f = crate::libgomp::host::host()?.acc_thread?;
        // SAFETY: GOMP_PLUGIN_acc_thread returns what the exported
        // openacc_create_thread_data returned for this thread (a leaked
        // `Box<Self::ThreadData>`, alive until openacc_destroy_thread_data), or NULL;
        // libgomp destroys it only after the thread is done with OpenACC.
        unsafe { f().cast::<Self::ThreadData>().as_ref() }
    }
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
