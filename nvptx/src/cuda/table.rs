//! The table of CUDA driver entry points, resolved at run time from `libcuda.so.1`.
//!
//! Each entry names the API function, the exact versioned symbol whose ABI the
//! signature describes, and the signature. Resolution asks `cuGetProcAddress_v2` for the
//! API name at [`PINNED_API_VERSION`] (which yields that same versioned symbol), and
//! falls back to `dlsym` of the versioned name. A missing *required* entry makes the
//! whole driver unusable (0 devices); a missing *optional* entry is replaced by a
//! stand-in that returns `CUDA_ERROR_NOT_SUPPORTED`, and [`Driver::has`] says which are real.

#![allow(non_snake_case)]

use super::sys::*;
use libloading::os::unix::{Library, RTLD_LAZY, RTLD_LOCAL};
use once_cell::sync::OnceCell;
use std::ffi::{c_char, c_void, CString};

/// The CUDA API version whose ABI every signature in the table has (CUDA 12.0).
pub const PINNED_API_VERSION: i32 = 12000;

type ProcAddr = unsafe extern "C" fn(
    *const c_char,
    *mut *mut c_void,
    i32,
    u64,
    *mut CUdriverProcAddressQueryResult,
) -> CUresult;

/// Finds symbols in an opened libcuda: `cuGetProcAddress_v2` first, `dlsym` second.
struct Resolver {
    proc_addr: Option<ProcAddr>,
}

impl Resolver {
    fn find(&self, lib: &Library, api: &str, versioned: &str) -> Option<*mut c_void> {
        if let Some(get) = self.proc_addr {
            let name = CString::new(api).ok()?;
            let mut p: *mut c_void = std::ptr::null_mut();
            let mut status: CUdriverProcAddressQueryResult = 0;
            // SAFETY: valid C string and out-pointers; the driver fills `p`/`status`.
            let r = unsafe {
                get(
                    name.as_ptr(),
                    &mut p,
                    PINNED_API_VERSION,
                    CU_GET_PROC_ADDRESS_LEGACY_STREAM as u64,
                    &mut status,
                )
            };
            if r == 0 && status == CU_GET_PROC_ADDRESS_SUCCESS && !p.is_null() {
                return Some(p);
            }
        }
        gomp_plugin::symbols::dlsym(lib, versioned)
    }
}

gomp_plugin::symbol_table! {
    /// The resolved driver entry points. Created once per process by [`load`] and
    /// never freed (libcuda stays loaded); shared read-only by all threads.
    pub struct Driver;
    required {
        cuInit = "cuInit" (u32) -> CUresult;
        cuDriverGetVersion = "cuDriverGetVersion" (*mut i32) -> CUresult;
        cuGetErrorString = "cuGetErrorString" (CUresult, *mut *const c_char) -> CUresult;
        cuDeviceGetCount = "cuDeviceGetCount" (*mut i32) -> CUresult;
        cuDeviceGet = "cuDeviceGet" (*mut CUdevice, i32) -> CUresult;
        cuDeviceGetAttribute = "cuDeviceGetAttribute" (*mut i32, CUdevice_attribute, CUdevice) -> CUresult;
        cuDeviceGetName = "cuDeviceGetName" (*mut c_char, i32, CUdevice) -> CUresult;
        cuDevicePrimaryCtxRetain = "cuDevicePrimaryCtxRetain" (*mut CUcontext, CUdevice) -> CUresult;
        cuDevicePrimaryCtxRelease = "cuDevicePrimaryCtxRelease_v2" (CUdevice) -> CUresult;
        cuCtxGetCurrent = "cuCtxGetCurrent" (*mut CUcontext) -> CUresult;
        cuCtxSetCurrent = "cuCtxSetCurrent" (CUcontext) -> CUresult;
        cuCtxGetDevice = "cuCtxGetDevice" (*mut CUdevice) -> CUresult;
        cuCtxSetLimit = "cuCtxSetLimit" (CUlimit, usize) -> CUresult;
        cuLinkCreate = "cuLinkCreate_v2" (u32, *mut CUjit_option, *mut *mut c_void, *mut CUlinkState) -> CUresult;
        cuLinkAddData = "cuLinkAddData_v2" (CUlinkState, CUjitInputType, *mut c_void, usize, *const c_char, u32, *mut CUjit_option, *mut *mut c_void) -> CUresult;
        cuLinkComplete = "cuLinkComplete" (CUlinkState, *mut *mut c_void, *mut usize) -> CUresult;
        cuLinkDestroy = "cuLinkDestroy" (CUlinkState) -> CUresult;
        cuModuleLoadData = "cuModuleLoadData" (*mut CUmodule, *const c_void) -> CUresult;
        cuModuleUnload = "cuModuleUnload" (CUmodule) -> CUresult;
        cuModuleGetFunction = "cuModuleGetFunction" (*mut CUfunction, CUmodule, *const c_char) -> CUresult;
        cuModuleGetGlobal = "cuModuleGetGlobal_v2" (*mut CUdeviceptr, *mut usize, CUmodule, *const c_char) -> CUresult;
        cuFuncGetAttribute = "cuFuncGetAttribute" (*mut i32, CUfunction_attribute, CUfunction) -> CUresult;
        cuFuncSetAttribute = "cuFuncSetAttribute" (CUfunction, CUfunction_attribute, i32) -> CUresult;
        cuLaunchKernel = "cuLaunchKernel" (CUfunction, u32, u32, u32, u32, u32, u32, u32, CUstream, *mut *mut c_void, *mut *mut c_void) -> CUresult;
        cuMemAlloc = "cuMemAlloc_v2" (*mut CUdeviceptr, usize) -> CUresult;
        cuMemFree = "cuMemFree_v2" (CUdeviceptr) -> CUresult;
        cuMemcpyHtoDAsync = "cuMemcpyHtoDAsync_v2" (CUdeviceptr, *const c_void, usize, CUstream) -> CUresult;
        cuMemcpyDtoHAsync = "cuMemcpyDtoHAsync_v2" (*mut c_void, CUdeviceptr, usize, CUstream) -> CUresult;
        cuMemcpyDtoDAsync = "cuMemcpyDtoDAsync_v2" (CUdeviceptr, CUdeviceptr, usize, CUstream) -> CUresult;
        cuMemsetD8Async = "cuMemsetD8Async" (CUdeviceptr, u8, usize, CUstream) -> CUresult;
        cuMemcpy2DAsync = "cuMemcpy2DAsync_v2" (*const CUDA_MEMCPY2D, CUstream) -> CUresult;
        cuMemcpy2DUnaligned = "cuMemcpy2DUnaligned_v2" (*const CUDA_MEMCPY2D) -> CUresult;
        cuMemcpy3DAsync = "cuMemcpy3DAsync_v2" (*const CUDA_MEMCPY3D, CUstream) -> CUresult;
        cuMemHostAlloc = "cuMemHostAlloc" (*mut *mut c_void, usize, u32) -> CUresult;
        cuMemFreeHost = "cuMemFreeHost" (*mut c_void) -> CUresult;
        cuMemHostGetDevicePointer = "cuMemHostGetDevicePointer_v2" (*mut CUdeviceptr, *mut c_void, u32) -> CUresult;
        cuPointerGetAttribute = "cuPointerGetAttribute" (*mut c_void, CUpointer_attribute, CUdeviceptr) -> CUresult;
        cuStreamCreate = "cuStreamCreate" (*mut CUstream, u32) -> CUresult;
        cuStreamDestroy = "cuStreamDestroy_v2" (CUstream) -> CUresult;
        cuStreamSynchronize = "cuStreamSynchronize" (CUstream) -> CUresult;
        cuStreamQuery = "cuStreamQuery" (CUstream) -> CUresult;
        cuStreamWaitEvent = "cuStreamWaitEvent" (CUstream, CUevent, u32) -> CUresult;
        cuMemGetInfo = "cuMemGetInfo_v2" (*mut usize, *mut usize) -> CUresult;
        cuDeviceTotalMem = "cuDeviceTotalMem_v2" (*mut usize, CUdevice) -> CUresult;
        cuEventCreate = "cuEventCreate" (*mut CUevent, u32) -> CUresult;
        cuEventDestroy = "cuEventDestroy_v2" (CUevent) -> CUresult;
        cuEventRecord = "cuEventRecord" (CUevent, CUstream) -> CUresult;
        cuEventQuery = "cuEventQuery" (CUevent) -> CUresult;
        cuEventSynchronize = "cuEventSynchronize" (CUevent) -> CUresult;
        cuEventElapsedTime = "cuEventElapsedTime" (*mut f32, CUevent, CUevent) -> CUresult;
    }
    optional (CUresult = CUDA_ERROR_NOT_SUPPORTED as CUresult) {
        cuDeviceGetUuid_v2 = "cuDeviceGetUuid_v2" (*mut CUuuid, CUdevice);
        cuDeviceGetUuid = "cuDeviceGetUuid" (*mut CUuuid, CUdevice);
        cuMemAllocManaged = "cuMemAllocManaged" (*mut CUdeviceptr, usize, u32);
        cuMemFreeAsync = "cuMemFreeAsync" (CUdeviceptr, CUstream);
        cuMemAllocFromPoolAsync = "cuMemAllocFromPoolAsync" (*mut CUdeviceptr, usize, CUmemoryPool, CUstream);
        cuMemPoolCreate = "cuMemPoolCreate" (*mut CUmemoryPool, *const CUmemPoolProps);
        cuMemPoolDestroy = "cuMemPoolDestroy" (CUmemoryPool);
        cuMemPoolSetAttribute = "cuMemPoolSetAttribute" (CUmemoryPool, CUmemPool_attribute, *mut c_void);
        cuMemPoolGetAttribute = "cuMemPoolGetAttribute" (CUmemoryPool, CUmemPool_attribute, *mut c_void);
        cuMemPoolTrimTo = "cuMemPoolTrimTo" (CUmemoryPool, usize);
        cuMemHostRegister = "cuMemHostRegister_v2" (*mut c_void, usize, u32);
        cuMemHostUnregister = "cuMemHostUnregister" (*mut c_void);
        cuOccupancyMaxPotentialBlockSize = "cuOccupancyMaxPotentialBlockSize" (*mut i32, *mut i32, CUfunction, *mut c_void, usize, i32);
        cuOccupancyMaxActiveBlocksPerMultiprocessor = "cuOccupancyMaxActiveBlocksPerMultiprocessor" (*mut i32, CUfunction, i32, usize);
        cuStreamWriteValue32 = "cuStreamWriteValue32_v2" (CUstream, CUdeviceptr, u32, u32);
    }
}

static DRIVER: OnceCell<Result<Driver, String>> = OnceCell::new();

/// Opens `libcuda.so.1` (or `GOMP_PLUGIN_RS_LIBCUDA` when set, for tests) and resolves
/// the table, once per process. Thread-safe; later calls return the first outcome.
pub fn load() -> Result<&'static Driver, &'static str> {
    DRIVER
        .get_or_init(|| {
            let name =
                std::env::var_os("GOMP_PLUGIN_RS_LIBCUDA").unwrap_or_else(|| "libcuda.so.1".into());
            // SAFETY: libcuda's initialisers are the driver's own; loading it is what the
            // stock plugin does too.
            let lib = unsafe { Library::open(Some(&name), RTLD_LAZY | RTLD_LOCAL) }
                .map_err(|e| format!("cannot load {}: {e}", name.to_string_lossy()))?;
            // SAFETY: symbol lookup only; the type is cuGetProcAddress_v2's signature.
            let proc_addr = unsafe { lib.get::<ProcAddr>(b"cuGetProcAddress_v2") }
                .ok()
                .map(|s| *s);
            let r = Resolver { proc_addr };
            Driver::resolve(lib, "libcuda.so.1", |lib, api, sym| r.find(lib, api, sym))
        })
        .as_ref()
        .map_err(|e| e.as_str())
}

/// The driver if [`load`] succeeded earlier, else `None`. Never loads.
pub fn loaded() -> Option<&'static Driver> {
    DRIVER.get().and_then(|r| r.as_ref().ok())
}

/// The loaded driver. Only called on paths that run after a device was found, which
/// implies a successful [`load`]; panics (caught at the exported edge) otherwise.
pub fn get() -> &'static Driver {
    loaded().expect("CUDA driver used before it was loaded")
}

/// Calls a driver entry point and checks its result, naming the function on error.
/// Must be used inside an `unsafe` block whose `// SAFETY:` covers the arguments.
#[macro_export]
macro_rules! cu {
    ($f:ident ( $($a:expr),* $(,)? )) => {
        $crate::cuda::check(($crate::cuda::table::get().$f)($($a),*), stringify!($f))
    };
}
