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
    lib: Library,
    proc_addr: Option<ProcAddr>,
}

impl Resolver {
    fn find(&self, api: &str, versioned: &str) -> Option<*mut c_void> {
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
        // SAFETY: looking up a symbol does not run code; the pointer is only used through
        // the declared signature of the versioned name.
        unsafe { self.lib.get::<*mut c_void>(versioned.as_bytes()) }
            .ok()
            .map(|s| *s)
            .filter(|p| !p.is_null())
    }
}

macro_rules! driver_table {
    (
        required { $( $name:ident = $sym:literal ( $($ty:ty),* ); )* }
        optional { $( $oname:ident = $osym:literal ( $($oty:ty),* ); )* }
    ) => {
        /// The resolved driver entry points. Created once per process by [`load`] and
        /// never freed (libcuda stays loaded); shared read-only by all threads.
        pub struct Driver {
            _lib: Library,
            missing_optional: Vec<&'static str>,
            $( #[doc = $sym] pub $name: unsafe extern "C" fn($($ty),*) -> CUresult, )*
            $( #[doc = $osym] pub $oname: unsafe extern "C" fn($($oty),*) -> CUresult, )*
        }

        impl Driver {
            fn resolve(r: Resolver) -> Result<Driver, String> {
                let mut missing_optional = Vec::new();
                $(
                    let p = r.find(stringify!($name), $sym)
                        .ok_or_else(|| format!("'libcuda.so.1' is missing '{}'", $sym))?;
                    // SAFETY: `p` is the driver's `$sym`, whose C signature is the one declared.
                    let $name = unsafe {
                        std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($ty),*) -> CUresult>(p)
                    };
                )*
                $(
                    let $oname = match r.find(stringify!($oname), $osym) {
                        // SAFETY: as above, the declared signature is `$osym`'s.
                        Some(p) => unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($oty),*) -> CUresult>(p)
                        },
                        None => {
                            unsafe extern "C" fn stand_in($(_: $oty),*) -> CUresult {
                                CUDA_ERROR_NOT_SUPPORTED as CUresult
                            }
                            missing_optional.push(stringify!($oname));
                            stand_in
                        }
                    };
                )*
                Ok(Driver { _lib: r.lib, missing_optional, $($name,)* $($oname,)* })
            }
        }
    };
}

driver_table! {
    required {
        cuInit = "cuInit" (u32);
        cuDriverGetVersion = "cuDriverGetVersion" (*mut i32);
        cuGetErrorString = "cuGetErrorString" (CUresult, *mut *const c_char);
        cuDeviceGetCount = "cuDeviceGetCount" (*mut i32);
        cuDeviceGet = "cuDeviceGet" (*mut CUdevice, i32);
        cuDeviceGetAttribute = "cuDeviceGetAttribute" (*mut i32, CUdevice_attribute, CUdevice);
        cuDeviceGetName = "cuDeviceGetName" (*mut c_char, i32, CUdevice);
        cuDevicePrimaryCtxRetain = "cuDevicePrimaryCtxRetain" (*mut CUcontext, CUdevice);
        cuDevicePrimaryCtxRelease = "cuDevicePrimaryCtxRelease_v2" (CUdevice);
        cuCtxGetCurrent = "cuCtxGetCurrent" (*mut CUcontext);
        cuCtxSetCurrent = "cuCtxSetCurrent" (CUcontext);
        cuCtxGetDevice = "cuCtxGetDevice" (*mut CUdevice);
        cuCtxSetLimit = "cuCtxSetLimit" (CUlimit, usize);
        cuLinkCreate = "cuLinkCreate_v2" (u32, *mut CUjit_option, *mut *mut c_void, *mut CUlinkState);
        cuLinkAddData = "cuLinkAddData_v2" (CUlinkState, CUjitInputType, *mut c_void, usize, *const c_char, u32, *mut CUjit_option, *mut *mut c_void);
        cuLinkComplete = "cuLinkComplete" (CUlinkState, *mut *mut c_void, *mut usize);
        cuLinkDestroy = "cuLinkDestroy" (CUlinkState);
        cuModuleLoadData = "cuModuleLoadData" (*mut CUmodule, *const c_void);
        cuModuleUnload = "cuModuleUnload" (CUmodule);
        cuModuleGetFunction = "cuModuleGetFunction" (*mut CUfunction, CUmodule, *const c_char);
        cuModuleGetGlobal = "cuModuleGetGlobal_v2" (*mut CUdeviceptr, *mut usize, CUmodule, *const c_char);
        cuFuncGetAttribute = "cuFuncGetAttribute" (*mut i32, CUfunction_attribute, CUfunction);
        cuFuncSetAttribute = "cuFuncSetAttribute" (CUfunction, CUfunction_attribute, i32);
        cuLaunchKernel = "cuLaunchKernel" (CUfunction, u32, u32, u32, u32, u32, u32, u32, CUstream, *mut *mut c_void, *mut *mut c_void);
        cuMemAlloc = "cuMemAlloc_v2" (*mut CUdeviceptr, usize);
        cuMemFree = "cuMemFree_v2" (CUdeviceptr);
        cuMemcpyHtoDAsync = "cuMemcpyHtoDAsync_v2" (CUdeviceptr, *const c_void, usize, CUstream);
        cuMemcpyDtoHAsync = "cuMemcpyDtoHAsync_v2" (*mut c_void, CUdeviceptr, usize, CUstream);
        cuMemcpyDtoDAsync = "cuMemcpyDtoDAsync_v2" (CUdeviceptr, CUdeviceptr, usize, CUstream);
        cuMemsetD8Async = "cuMemsetD8Async" (CUdeviceptr, u8, usize, CUstream);
        cuMemcpy2DAsync = "cuMemcpy2DAsync_v2" (*const CUDA_MEMCPY2D, CUstream);
        cuMemcpy2DUnaligned = "cuMemcpy2DUnaligned_v2" (*const CUDA_MEMCPY2D);
        cuMemcpy3DAsync = "cuMemcpy3DAsync_v2" (*const CUDA_MEMCPY3D, CUstream);
        cuMemHostAlloc = "cuMemHostAlloc" (*mut *mut c_void, usize, u32);
        cuMemFreeHost = "cuMemFreeHost" (*mut c_void);
        cuMemHostGetDevicePointer = "cuMemHostGetDevicePointer_v2" (*mut CUdeviceptr, *mut c_void, u32);
        cuPointerGetAttribute = "cuPointerGetAttribute" (*mut c_void, CUpointer_attribute, CUdeviceptr);
        cuStreamCreate = "cuStreamCreate" (*mut CUstream, u32);
        cuStreamDestroy = "cuStreamDestroy_v2" (CUstream);
        cuStreamSynchronize = "cuStreamSynchronize" (CUstream);
        cuStreamQuery = "cuStreamQuery" (CUstream);
        cuStreamWaitEvent = "cuStreamWaitEvent" (CUstream, CUevent, u32);
        cuMemGetInfo = "cuMemGetInfo_v2" (*mut usize, *mut usize);
        cuDeviceTotalMem = "cuDeviceTotalMem_v2" (*mut usize, CUdevice);
        cuEventCreate = "cuEventCreate" (*mut CUevent, u32);
        cuEventDestroy = "cuEventDestroy_v2" (CUevent);
        cuEventRecord = "cuEventRecord" (CUevent, CUstream);
        cuEventQuery = "cuEventQuery" (CUevent);
        cuEventSynchronize = "cuEventSynchronize" (CUevent);
    }
    optional {
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
    }
}

impl Driver {
    /// True when the optional entry point `name` was found in the driver.
    pub fn has(&self, name: &str) -> bool {
        !self.missing_optional.contains(&name)
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
            Driver::resolve(Resolver { lib, proc_addr })
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
        $crate::cuda::check(($crate::cuda::driver::get().$f)($($a),*), stringify!($f))
    };
}
