//! The gcn backend's face to the framework: [`Gcn`] implements [`gomp_plugin::Plugin`]
//! and [`gomp_plugin::OpenAcc`] (through `openacc/`'s functions); the opened device,
//! `open.rs`'s `OpenDevice`, implements [`gomp_plugin::Device`], its core, `device/`'s
//! `Core`, [`gomp_plugin::DeviceCore`]. Offered: devices, images,
//! memory, `is_accessible_ptr`, `can_run`, `run` and `async_run` (docs/gcn-launch.md,
//! see `launch/run.rs`), reverse offload, OpenACC (`openacc/`). Not offered: interop,
//! OpenACC's CUDA interop, page-locked host memory, rectangular copies and managed memory (the framework's defaults answer "not
//! implemented").
//!
//! Thread-safety: state lives in the framework's registry and in each device.

use crate::image::Kernel;
use crate::open::OpenDevice;
use crate::openacc::{
    exec, property,
    queue::AccQueue,
    thread::{self, ThreadData},
};
use gomp_plugin::kernels::Live;
use gomp_plugin::libgomp::abi::*;
use gomp_plugin::libgomp::version::Libgomp;
use gomp_plugin::openacc::{AccLaunch, AccProperty};
use gomp_plugin::registry::Registry;
use gomp_plugin::settings::ProcessSettings;
use gomp_plugin::{OpenAcc, Plugin, Result};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// The gcn product. A unit type: all state is in [`REGISTRY`] and the devices.
pub struct Gcn;

/// Opened devices by ordinal (sized by `get_num_devices`).
static REGISTRY: Registry<OpenDevice> = Registry::new("gcn");

impl Plugin for Gcn {
    type Device = OpenDevice;
    const NAME: &'static str = "gcn";
    const TAG: &'static str = " (gcn, experimental)";
    const GPUS: &'static str = "AMD GPUs";
    /// OpenMP and OpenACC, as GCC's own gcn plugin.
    const CAPS: u32 = CAP_OPENMP_400 | CAP_OPENACC_200;
    /// Reverse offload only: get_num_devices under libgomp 13-16 refuses
    /// `requires unified_address` (and shared memory), accepts `reverse_offload`.
    const CAPS_17: u32 = CAP_REVERSE_OFFLOAD;
    const TARGET_TYPE: c_int = TARGET_TYPE_GCN;
    const IMAGE_KIND: &'static str = "GCN";
    const IMAGE_VERSION: u32 = VERSION_GCN;
    // GCC 12's gcn images and launch protocol differ (GOMP_VERSION_GCN 2) and are
    // not implemented: under libgomp 12 the plugin reports 0 devices.
    const OLDEST_LIBGOMP: Libgomp = Libgomp::V13;

    fn registry() -> &'static Registry<OpenDevice> {
        &REGISTRY
    }

    fn read_settings() {
        crate::config::Config::process();
    }

    /// The GPU agents; 0 without a working HSA runtime or GPU agent, with a `GOMP_DEBUG`
    /// line saying why.
    fn num_devices(requires_mask: u32) -> i32 {
        crate::discovery::num_devices(requires_mask, |n| REGISTRY.ensure_len(n))
    }

    fn open(ord: i32) -> Result<OpenDevice> {
        OpenDevice::open(ord)
    }

    /// Twice the device's compute units (128 when the runtime does not tell), as the
    /// stock plugin answers: the teams ours launches by default (docs/gcn-launch.md).
    fn teams_dim0(ord: i32) -> i32 {
        crate::discovery::compute_units(ord).map_or(128, |cu| 2 * cu as i32)
    }

    /// 16 wavefronts: the largest work-group GCC's gcn code runs (an OpenMP thread is
    /// a wavefront).
    fn threads_dim0(_ord: i32) -> i32 {
        16
    }

    /// GCC's gcn device code serves every memory space but low-latency memory (a
    /// work-group's LDS) with access all.
    fn memspace_valid(memspace: u64, access: i32) -> bool {
        !(memspace == MEMSPACE_LOW_LAT && access == ATV_ALL)
    }

    /// The table goes after the output ring of a kernarg block reserved for the
    /// session's launch ([`crate::launch::launch_resources::LaunchResources::reserve_table`]).
    fn allocate_table(session: *mut c_void, ord: i32, size: usize) -> Result<*mut c_void> {
        Self::device(ord)?
            .launcher()
            .resources
            .reserve_table(session as usize, size)
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

/// The device of a synchronous `openacc_exec`: the calling thread's (its OpenACC
/// thread data), else device `loaded_on`, the one that loaded the kernel.
fn exec_device(loaded_on: i32) -> Result<Arc<OpenDevice>> {
    let ord = Gcn::current_thread_data().map_or(loaded_on, |t| t.ord);
    Gcn::registry().get(ord)
}

/// OpenACC on gcn devices: the entry points' implementations are `openacc/`'s
/// functions (kernel execution, per-thread data, async queues, properties).
impl OpenAcc for Gcn {
    type Queue = AccQueue;
    type ThreadData = ThreadData;

    /// See [`exec::exec`].
    fn exec(
        kernel: Live<'_, Kernel>,
        launch: &AccLaunch,
        queue: Option<&AccQueue>,
    ) -> Result<Option<[u32; 3]>> {
        let dev = match queue {
            Some(q) => Arc::clone(q.device()),
            None => exec_device(kernel.ord)?,
        };
        exec::exec(&dev, kernel, launch, queue)
    }

    fn thread_data(ord: c_int) -> Result<ThreadData> {
        thread::thread_data(ord)
    }

    /// A queue on open device `ord`.
    fn queue(ord: c_int) -> Result<AccQueue> {
        AccQueue::create(REGISTRY.get(ord)?)
    }

    /// See [`property::get`].
    fn property(ord: c_int, prop: u32) -> Result<AccProperty> {
        property::get(ord, prop)
    }
}
