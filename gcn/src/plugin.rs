//! The gcn backend's face to the framework: [`Gcn`] implements [`gomp_plugin::Plugin`]
//! and the open [`Device`] implements [`gomp_plugin::Device`]. Offered: devices, images,
//! memory, `is_accessible_ptr`, `can_run`, `run` and `async_run` (docs/gcn-launch.md,
//! see `run.rs`), reverse offload, OpenACC (`openacc.rs`). Not offered: interop,
//! OpenACC's CUDA interop, page-locked host memory, rectangular copies and managed memory (the framework's defaults answer "not
//! implemented").
//!
//! Thread-safety: state lives in the framework's registry and in each device.

use crate::device::Device;
use crate::executable::Kernel;
use crate::launch::{Dims, Grid, Kind};
use gomp_plugin::blocks::DevPtr;
use gomp_plugin::device::LoadedImage;
use gomp_plugin::libgomp::abi::*;
use gomp_plugin::libgomp::target_args::LaunchRequest;
use gomp_plugin::libgomp::version::Libgomp;
use gomp_plugin::registry::Registry;
use gomp_plugin::{Plugin, Result};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// The gcn product. A unit type: all state is in [`REGISTRY`] and the devices.
pub struct Gcn;

/// Opened devices by ordinal (sized by `get_num_devices`).
static REGISTRY: Registry<Device> = Registry::new("gcn");

impl Plugin for Gcn {
    type Device = Device;
    const NAME: &'static str = "gcn";
    const TAG: &'static str = " (gcn, experimental)";
    const GPUS: &'static str = "AMD GPUs";
    /// OpenMP and OpenACC, as GCC's own gcn plugin.
    const CAPS: u32 = CAP_OPENMP_400 | CAP_OPENACC_200;
    const TARGET_TYPE: c_int = TARGET_TYPE_GCN;
    const IMAGE_KIND: &'static str = "GCN";
    const IMAGE_VERSION: u32 = VERSION_GCN;
    // GCC 12's gcn images and launch protocol differ (GOMP_VERSION_GCN 2) and are
    // not implemented: under libgomp 12 the plugin reports 0 devices.
    const OLDEST_LIBGOMP: Libgomp = Libgomp::V13;

    fn registry() -> &'static Registry<Device> {
        &REGISTRY
    }

    /// The GPU agents; 0 without a working HSA runtime or GPU agent, with a `GOMP_DEBUG`
    /// line saying why.
    fn num_devices(requires_mask: u32) -> i32 {
        crate::num_devices(requires_mask)
    }

    fn open(ord: i32) -> Result<Device> {
        Device::open(ord)
    }

    /// True for a kernel of a loaded image whose explicit kernel arguments fit the
    /// protocol (one pointer); false otherwise (libgomp then runs the region on the
    /// host).
    fn can_run(k: &Kernel) -> bool {
        k.object != 0
            && k.meta
                .as_ref()
                .is_none_or(|m| m.kernarg_segment_size <= crate::launch::MAX_EXPLICIT_KERNARGS)
    }
}

impl gomp_plugin::Device for Device {
    type Kernel = Kernel;

    fn close(&self) -> Result<()> {
        Device::close(self)
    }

    /// Checks the image (descriptor, code object, kernel descriptors, target), loads it
    /// into an HSA executable, runs its constructors; when libgomp asks (the program
    /// requires reverse offload), the reverse-offload table is the image's
    /// `.offload_func_table` (NULL when it has none or it is all zero).
    unsafe fn load_image(
        self: &Arc<Self>,
        _version: u32,
        data: *const c_void,
        want_rev: bool,
        _host_ind_fns: *const u64,
    ) -> Result<LoadedImage<Kernel>> {
        // SAFETY: libgomp passes mkoffload's descriptor (caller).
        let (kernels, table, rev) = unsafe { Device::load_image(self, data, want_rev)? };
        let rev_fn_table = match rev {
            None => std::ptr::null_mut(),
            Some(t) => {
                let p = gomp_plugin::libgomp::report::malloc(t.len() * 8).cast::<u64>();
                // SAFETY: `p` has room for the entries; libgomp frees it.
                unsafe { std::ptr::copy_nonoverlapping(t.as_ptr(), p, t.len()) };
                p
            }
        };
        Ok(LoadedImage {
            kernels,
            table,
            rev_fn_table,
        })
    }

    fn unload_image(&self, data: *const c_void) -> Result<()> {
        Device::unload_image(self, data)
    }

    fn alloc(&self, size: usize) -> Result<*mut c_void> {
        Ok(self.memory.alloc(size)? as *mut c_void)
    }

    fn free(&self, ptr: *mut c_void) -> Result<()> {
        self.memory.free(ptr as DevPtr)
    }

    unsafe fn dev2host(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()> {
        // SAFETY: forwarded caller guarantee.
        unsafe { self.memory.dev2host(dst, src as DevPtr, n) }
    }

    unsafe fn host2dev(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()> {
        // SAFETY: forwarded caller guarantee.
        unsafe { self.memory.host2dev(dst as DevPtr, src, n) }
    }

    fn dev2dev(&self, dst: *mut c_void, src: *const c_void, n: usize) -> Result<()> {
        self.memory.dev2dev(dst as DevPtr, src as DevPtr, n)
    }

    fn memset(&self, ptr: *mut c_void, val: c_int, n: usize) -> Result<()> {
        self.memory.memset(ptr as DevPtr, val, n)
    }

    /// Memory allocated on the device, or any memory on a full-profile agent.
    fn is_accessible(&self, ptr: *const c_void, size: usize) -> Result<bool> {
        Ok(self.memory.is_accessible(ptr as usize, size))
    }

    /// Runs an OpenMP target region and waits for it (docs/gcn-launch.md §3-§4): the
    /// grid from the request, the launch, the console drain, the exit/abort decoding.
    fn run(&self, k: &Arc<Kernel>, req: &LaunchRequest) -> Result<()> {
        let Some(dims) = self.grid(req) else {
            return Ok(());
        };
        let e = self.launcher.launch(
            self.ord,
            None,
            k,
            req.vars,
            dims,
            Kind::OpenMp,
            k.reverse_offload,
        )?;
        self.launcher.finish(e);
        Ok(())
    }

    /// Queues the region on the device's async thread; libgomp hears of its end
    /// through `GOMP_PLUGIN_target_task_completion(async_data)`.
    fn run_async(
        self: &Arc<Self>,
        k: &Arc<Kernel>,
        req: &LaunchRequest,
        async_data: *mut c_void,
    ) -> Result<()> {
        let Some(dims) = self.grid(req) else {
            // A skipped kernel: complete at once (the stock plugin never completes it).
            gomp_plugin::libgomp::target::task_completion(async_data as usize);
            return Ok(());
        };
        self.launcher
            .launch_async(self.ord, Arc::clone(k), req.vars, dims, async_data as usize)
    }
}

impl Device {
    /// The grid of an OpenMP launch request; `None`: skip.
    fn grid(&self, req: &LaunchRequest) -> Option<Dims> {
        let l = &self.launcher;
        match crate::launch::omp_grid(
            req,
            l.cu,
            self.name == "gfx900",
            l.cfg.num_threads.is_some(),
        ) {
            Grid::Run(d) => Some(d),
            Grid::Default(d) => {
                log::debug!(
                    "device {}: no launch geometry in the target arguments; using 1 team of 1 thread",
                    self.ord
                );
                Some(d)
            }
            Grid::Skip => None,
        }
    }
}
