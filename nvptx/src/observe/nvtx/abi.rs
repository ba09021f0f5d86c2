//! The part of NVTX v3's injection ABI the plugin uses, declared by hand from NVIDIA's
//! published headers (`nvToolsExt.h`, `nvToolsExtCuda.h` and `nvtxDetail/nvtxTypes.h`
//! of NVTX 3, as the `nvtx-sys` 2.0.0 crate ships them; Apache-2.0 WITH
//! LLVM-exception). Why not that crate: `nvtx-sys` runs bindgen in its build script,
//! which needs libclang at build time (a build without it fails: "Unable to find
//! libclang"), something a user building this plugin with only Rust and a C linker
//! does not have (see `docs/nvtx.md`).
//!
//! The protocol (NVTX v3's "load sequence"): the program (here the plugin) reads
//! `NVTX_INJECTION64_PATH`, `dlopen`s that library and calls its
//! `InitializeInjectionNvtx2` with a function that hands out export tables
//! ([`GetExportTable`]); through the callbacks table the tool asks for each module's
//! function table ([`GetModuleFunctionTable`]): an array of pointers to the program's
//! function-pointer slots, indexed by callback id, which the tool fills with its own
//! implementations. The program then calls a slot when it is filled and does nothing
//! when it is empty.
//!
//! Every type here is plain data or a function-pointer type; nothing owns anything.
//! The test fixture `tests/fixtures/nvtx/inject.c` is written against NVIDIA's headers
//! (vendored beside it), so a mistake here fails `nvptx/tests/nvtx.rs`.

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `NVTX_VERSION`: the API version of the headers this follows.
pub const NVTX_VERSION: u16 = 3;

/// `nvtxDomainHandle_t`: an opaque handle the tool hands out (NULL: the default domain).
pub type DomainHandle = *mut c_void;

/// `nvtxRangeId_t`.
pub type RangeId = u64;

/// `NVTX_COLOR_ARGB`.
pub const COLOR_ARGB: i32 = 1;
/// `NVTX_PAYLOAD_UNKNOWN`.
pub const PAYLOAD_NONE: i32 = 0;
/// `NVTX_PAYLOAD_TYPE_UNSIGNED_INT64`.
pub const PAYLOAD_U64: i32 = 1;
/// `NVTX_MESSAGE_TYPE_ASCII`.
pub const MESSAGE_ASCII: i32 = 1;

/// `nvtxEventAttributes_t` (`nvtxEventAttributes_v2`): 48 bytes on LP64. Of the payload
/// union only the 64-bit unsigned member is used, of the message union the ASCII
/// pointer. Plain data, built on the caller's stack for one call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EventAttributes {
    /// `NVTX_VERSION`.
    pub version: u16,
    /// `NVTX_EVENT_ATTRIB_STRUCT_SIZE`: the size of this struct.
    pub size: u16,
    /// The category (named with `nvtxDomainNameCategoryA`), 0: none.
    pub category: u32,
    /// `nvtxColorType_t`.
    pub color_type: i32,
    /// ARGB.
    pub color: u32,
    /// `nvtxPayloadType_t`.
    pub payload_type: i32,
    /// Reserved, 0.
    pub reserved0: i32,
    /// `payload.ullValue`.
    pub payload: u64,
    /// `nvtxMessageType_t`.
    pub message_type: i32,
    /// `message.ascii`: a NUL-terminated string, read during the call.
    pub message: *const c_char,
}

/// `NVTX_EVENT_ATTRIB_STRUCT_SIZE`.
pub const EVENT_ATTRIBUTES_SIZE: u16 = std::mem::size_of::<EventAttributes>() as u16;

/// `NvtxGetExportTableFunc_t`: what `InitializeInjectionNvtx2` is given.
pub type GetExportTable = unsafe extern "C" fn(export_table_id: u32) -> *const c_void;

/// `NvtxInitializeInjectionNvtxFunc_t`: the tool's entry point; non-zero on success.
pub type InitializeInjection = unsafe extern "C" fn(get: GetExportTable) -> c_int;

/// The tool's entry point's exported name.
pub const INITIALIZE_INJECTION: &[u8] = b"InitializeInjectionNvtx2\0";

/// `NVTX_ETID_CALLBACKS`.
pub const ETID_CALLBACKS: u32 = 1;
/// `NVTX_ETID_VERSIONINFO`.
pub const ETID_VERSIONINFO: u32 = 3;

/// A function-pointer slot the tool fills (`NvtxFunctionPointer`, stored as a data
/// pointer: same size and representation on the platforms NVTX supports).
pub type Slot = *mut c_void;

/// `NvtxFunctionTable`'s target: an array of pointers to slots.
pub type FunctionTable = *mut *mut Slot;

/// `GetModuleFunctionTable` of `NvtxExportTableCallbacks`: the module's table and its
/// size (entries, the invalid entry 0 included, the terminating NULL not); 0 for an
/// unknown module.
pub type GetModuleFunctionTable = unsafe extern "C" fn(
    module: c_int,
    out_table: *mut FunctionTable,
    out_size: *mut c_uint,
) -> c_int;

/// `NvtxExportTableCallbacks`.
#[repr(C)]
pub struct ExportTableCallbacks {
    /// `sizeof(NvtxExportTableCallbacks)`.
    pub struct_size: usize,
    /// The module tables.
    pub get_module_function_table: GetModuleFunctionTable,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
pub struct ExportTableVersionInfo {
    /// `sizeof(NvtxExportTableVersionInfo)`.
    pub struct_size: usize,
    /// `NVTX_VERSION`.
    pub version: u32,
    /// Reserved, 0.
    pub reserved0: u32,
    /// Set by the tool; ignored (as NVIDIA's implementation does).
    pub set_injection_nvtx_version: unsafe extern "C" fn(version: u32),
}

/// `NvtxCallbackModule` values and the sizes of their tables (`NVTX_CBID_*_SIZE`), in
/// module order: CORE, CUDA, OPENCL, CUDART, CORE2, SYNC.
pub const MODULES: [(c_int, usize); 6] = [(1, 16), (2, 9), (3, 15), (4, 7), (5, 16), (6, 7)];

/// `NVTX_CB_MODULE_CORE`'s index in [`MODULES`], and its callback ids used.
pub const CORE: usize = 0;
/// `NVTX_CBID_CORE_NameOsThreadA`: `void (uint32_t threadId, const char *name)`.
pub const CORE_NAME_OS_THREAD_A: usize = 14;

/// `NVTX_CB_MODULE_CUDA`'s index in [`MODULES`], and its callback id used.
pub const CUDA: usize = 1;
/// `NVTX_CBID_CUDA_NameCuStreamA`: `void (CUstream stream, const char *name)`.
pub const CUDA_NAME_CU_STREAM_A: usize = 5;

/// `NVTX_CB_MODULE_CORE2`'s index in [`MODULES`], and its callback ids used.
pub const CORE2: usize = 4;
/// `NVTX_CBID_CORE2_DomainMarkEx`.
pub const CORE2_MARK_EX: usize = 1;
/// `NVTX_CBID_CORE2_DomainRangeStartEx`.
pub const CORE2_RANGE_START_EX: usize = 2;
/// `NVTX_CBID_CORE2_DomainRangeEnd`.
pub const CORE2_RANGE_END: usize = 3;
/// `NVTX_CBID_CORE2_DomainRangePushEx`.
pub const CORE2_RANGE_PUSH_EX: usize = 4;
/// `NVTX_CBID_CORE2_DomainRangePop`.
pub const CORE2_RANGE_POP: usize = 5;
/// `NVTX_CBID_CORE2_DomainNameCategoryA`.
pub const CORE2_NAME_CATEGORY_A: usize = 8;
/// `NVTX_CBID_CORE2_DomainCreateA`.
pub const CORE2_DOMAIN_CREATE_A: usize = 12;

/// The slots' function types (`*_impl_fntype`).
pub type NameOsThreadA = unsafe extern "C" fn(tid: u32, name: *const c_char);
/// `nvtxNameCuStreamA`'s.
pub type NameCuStreamA = unsafe extern "C" fn(stream: *mut c_void, name: *const c_char);
/// `nvtxDomainMarkEx`'s.
pub type DomainMarkEx = unsafe extern "C" fn(d: DomainHandle, a: *const EventAttributes);
/// `nvtxDomainRangeStartEx`'s.
pub type DomainRangeStartEx =
    unsafe extern "C" fn(d: DomainHandle, a: *const EventAttributes) -> RangeId;
/// `nvtxDomainRangeEnd`'s.
pub type DomainRangeEnd = unsafe extern "C" fn(d: DomainHandle, id: RangeId);
/// `nvtxDomainRangePushEx`'s.
pub type DomainRangePushEx =
    unsafe extern "C" fn(d: DomainHandle, a: *const EventAttributes) -> c_int;
/// `nvtxDomainRangePop`'s.
pub type DomainRangePop = unsafe extern "C" fn(d: DomainHandle) -> c_int;
/// `nvtxDomainNameCategoryA`'s.
pub type DomainNameCategoryA =
    unsafe extern "C" fn(d: DomainHandle, category: u32, name: *const c_char);
/// `nvtxDomainCreateA`'s.
pub type DomainCreateA = unsafe extern "C" fn(name: *const c_char) -> DomainHandle;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attributes_have_the_headers_layout() {
        assert_eq!(EVENT_ATTRIBUTES_SIZE, 48);
        assert_eq!(std::mem::offset_of!(EventAttributes, payload), 24);
        assert_eq!(std::mem::offset_of!(EventAttributes, message_type), 32);
        assert_eq!(std::mem::offset_of!(EventAttributes, message), 40);
        assert_eq!(std::mem::size_of::<ExportTableCallbacks>(), 16);
        assert_eq!(std::mem::size_of::<ExportTableVersionInfo>(), 24);
    }
}
