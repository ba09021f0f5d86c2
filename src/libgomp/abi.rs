//! Constants and structures of the libgomp ⇄ plugin contract (libgomp-plugin.h,
//! gomp-constants.h), as specified in `docs/plugin-abi.md`.

/// Capability: host and device share memory.
pub const CAP_SHARED_MEM: u32 = 1;
/// Capability: OpenMP 4.0+ offloading.
pub const CAP_OPENMP_400: u32 = 4;
/// Capability: OpenACC 2.0.
pub const CAP_OPENACC_200: u32 = 8;
/// Capability (libgomp 17, `get_caps`): the devices meet `requires unified_address`;
/// libgomp 17 checks the program's mask against `get_caps() | get_dev_caps(device)`
/// itself (docs/plugin-abi.md §12.3). Never answered to libgomp 12-16.
pub const CAP_UNIFIED_ADDRESS: u32 = 0x20;
/// Capability (libgomp 17, `get_caps`): the devices meet `requires reverse_offload`.
pub const CAP_REVERSE_OFFLOAD: u32 = 0x40;

/// `omp_low_lat_mem_space`, the last predefined memory space (`omp_memspace_handle_t`;
/// 0-3: default, large capacity, constant, high bandwidth).
pub const MEMSPACE_LOW_LAT: u64 = 4;
/// `omp_atv_all`: the `access` trait value "every thread of the device".
pub const ATV_ALL: i32 = 7;

/// `OFFLOAD_TARGET_TYPE_NVIDIA_PTX`.
pub const TARGET_TYPE_NVIDIA_PTX: i32 = 5;

/// `requires unified_address`.
pub const REQUIRES_UNIFIED_ADDRESS: u32 = 0x10;
/// `requires unified_shared_memory`.
pub const REQUIRES_UNIFIED_SHARED_MEMORY: u32 = 0x20;
/// `requires reverse_offload`.
pub const REQUIRES_REVERSE_OFFLOAD: u32 = 0x80;
/// `requires self_maps` (15+).
pub const REQUIRES_SELF_MAPS: u32 = 0x400;

/// `GOMP_VERSION_NVIDIA_PTX`: the newest device-data version of nvptx images we read.
pub const VERSION_NVIDIA_PTX: u32 = 1;

/// The libgomp half of an image version word (`GOMP_VERSION_LIB`).
pub fn version_lib(v: u32) -> u32 {
    v >> 16
}
/// The device half of an image version word (`GOMP_VERSION_DEV`).
pub fn version_dev(v: u32) -> u32 {
    v & 0xffff
}

/// One entry of the table `load_image` returns: `[start, end)` on the device (for
/// functions, an opaque handle and handle+1). Allocated with `GOMP_PLUGIN_malloc`;
/// libgomp frees the table.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddrPair {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// `OFFLOAD_TARGET_TYPE_GCN` (AMD GCN / HSA).
pub const TARGET_TYPE_GCN: i32 = 8;

/// `GOMP_VERSION_GCN`: the newest device-data version of gcn images we read.
pub const VERSION_GCN: u32 = 3;

/// libgomp's `struct goacc_asyncqueue`, opaque to it: behind the pointer is the
/// backend's queue (a leaked `Box`).
#[repr(C)]
pub struct GoaccAsyncqueue {
    _opaque: [u8; 0],
}

/// `union goacc_property_value`: a size or a string, returned in one register.
#[repr(C)]
pub union PropertyValue {
    /// For memory sizes.
    pub size: usize,
    /// For name, vendor and driver.
    pub text: *const std::ffi::c_char,
}
