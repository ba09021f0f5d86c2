//! The trait a backend implements for its product: [`Plugin`] (its name, devices and the
//! entry points that name no device); beside it [`crate::Device`] (one open device)
//! and, for products that offer OpenACC, [`crate::OpenAcc`] with its
//! [`crate::AccQueue`]. The exported shells
//! (the rows of `src/edge/table.rs`) call only these. A default method answers "not implemented"
//! the way libgomp expects (an error message and the entry point's failure value), so
//! a backend implements what it supports and nothing else.
//!
//! Threading: libgomp calls entry points from any host thread, concurrently for
//! different devices and (for OpenMP `nowait` and OpenACC queues) for the same device;
//! every implementation must be `Send + Sync` and do its own locking.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::libgomp::abi::{ATV_ALL, MEMSPACE_LOW_LAT};
use crate::libgomp::interop::{self, InteropObj};
use crate::libgomp::version::Libgomp;
use crate::rect::Rect;
use crate::registry::Registry;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Arc;

/// The kernel type of product `P` (its device's [`Device::Kernel`]).
pub type KernelOf<P> = <<P as Plugin>::Device as Device>::Kernel;

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
    /// How the stock plugin names its images in version errors ("PTX", "GCN").
    const IMAGE_KIND: &'static str;
    /// The newest image device-data version the plugin reads (`GOMP_VERSION_*`).
    const IMAGE_VERSION: u32;
    /// What `get_caps` adds for libgomp 17 ([`crate::libgomp::abi::CAP_UNIFIED_ADDRESS`],
    /// [`crate::libgomp::abi::CAP_REVERSE_OFFLOAD`]): the `requires` clauses every
    /// device of the product meets, which libgomp 17 checks itself (its
    /// `get_num_devices` passes no mask). Default: none.
    const CAPS_17: u32 = 0;
    /// The oldest libgomp release whose images and launch protocol the product
    /// implements; under an older known one the product reports 0 devices.
    const OLDEST_LIBGOMP: Libgomp = Libgomp::V12;

    /// The product's open devices.
    fn registry() -> &'static Registry<Self::Device>;
    /// Reads the product's settings, its table of variables through
    /// [`crate::settings::read`], once per process (later calls find them read). The
    /// exported `get_num_devices` calls it first, before [`Plugin::num_devices`] looks
    /// for a driver, so both products read their environment at the same moment and a
    /// bad value is reported once, also on a machine without a GPU.
    fn read_settings();
    /// `get_num_devices`: usable devices under the program's `requires` mask; 0 when
    /// there is no usable driver or device (never an error), -1 when devices exist but
    /// cannot meet the mask. Must size the registry (see [`Registry::ensure_len`]).
    fn num_devices(requires_mask: u32) -> i32;
    /// Opens device `ord` (called by `init_device` through the registry).
    fn open(ord: i32) -> Result<Self::Device>;

    /// `get_dev_caps` (libgomp 17): capabilities of device `ord` beyond `get_caps`;
    /// [`crate::libgomp::abi::CAP_SHARED_MEM`] when it can use the host's pageable
    /// memory, which libgomp 17 asks for `requires unified_shared_memory` and
    /// `self_maps`. Called before the device is opened. Default: none (0).
    fn dev_caps(_ord: i32) -> u32 {
        0
    }
    /// `get_numa_node` (libgomp 17): the host NUMA node closest to device `ord`, -1 when
    /// unknown. Called before the device is opened. Default: unknown.
    fn numa_node(_ord: i32) -> i32 {
        -1
    }
    /// `supported_teams_dim (ord, 0)` (libgomp 17): the most teams device `ord` runs in
    /// dimension 0 (launches are one-dimensional: the others answer 1). Called before the
    /// device is opened. Default: 1.
    fn teams_dim0(_ord: i32) -> i32 {
        1
    }
    /// `supported_threads_dim (ord, 0)` (libgomp 17): the most threads a team of device
    /// `ord` has in dimension 0. Default: 1.
    fn threads_dim0(_ord: i32) -> i32 {
        1
    }
    /// `memspace_validate` (libgomp 17): whether the device code serves allocators on
    /// `memspace` (`omp_memspace_handle_t`) with access trait value `access`. Default:
    /// the predefined spaces (0-4) except low-latency memory with access all.
    fn memspace_valid(memspace: u64, access: i32) -> bool {
        memspace <= MEMSPACE_LOW_LAT && !(memspace == MEMSPACE_LOW_LAT && access == ATV_ALL)
    }
    /// `get_uid`: the device's unique id, if the driver tells one.
    fn uid(_ord: i32) -> Option<String> {
        None
    }
    /// The open device `ord`, made ready for calls on this thread.
    fn device(ord: i32) -> Result<Arc<Self::Device>> {
        Self::registry().get(ord)
    }
    /// `can_run`: whether a live kernel can run on its device (false: libgomp runs the
    /// region on the host).
    fn can_run(_kernel: &KernelOf<Self>) -> bool {
        true
    }
    /// `session_allocate_target_var_table` (libgomp 17, docs/plugin-abi.md §12.2): the
    /// host memory, 16-byte aligned and readable by device `ord` at the launch, that
    /// libgomp is to write the table of `size` bytes of the session at `session` into;
    /// the session's launch then receives that address as its table. Only a product
    /// whose table row exports the entry point implements it.
    fn allocate_table(_session: *mut c_void, _ord: i32, _size: usize) -> Result<*mut c_void> {
        Err(Error::not_implemented(
            Self::NAME,
            "session_allocate_target_var_table",
            "target-variable tables in plugin memory",
        ))
    }
    /// `page_locked_host_alloc`: page-locked host memory, `None` when out of memory.
    fn page_locked_host_alloc(_size: usize) -> Result<Option<*mut c_void>> {
        Err(Error::not_implemented(
            Self::NAME,
            "page_locked_host_alloc",
            "page-locked host memory",
        ))
    }
    /// `page_locked_host_free`; NULL (0) is accepted.
    fn page_locked_host_free(_ptr: usize) -> Result<()> {
        Err(Error::not_implemented(
            Self::NAME,
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
        Err(Error::not_implemented(
            Self::NAME,
            "memcpy2d/3d",
            "rectangular copy",
        ))
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
        Err(Error::not_implemented(Self::NAME, "interop", "interop"))
    }
    /// `get_interop_*`: property `prop` of an object this plugin initialised.
    fn interop_property(_obj: &InteropObj, _prop: c_int) -> Result<interop::InteropValue> {
        Err(Error::not_implemented(Self::NAME, "get_interop", "interop"))
    }
    /// `get_interop_type_desc`: the C type of a property (`obj` may be absent).
    fn interop_type_desc(_obj: Option<&InteropObj>, _prop: c_int) -> Option<&'static CStr> {
        None
    }
}
