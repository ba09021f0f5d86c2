//! The table of HSA runtime entry points, resolved at run time from
//! `libhsa-runtime64.so.1` (or the library `HSA_RUNTIME_LIB` names, as GCC's gcn plugin
//! allows) with `dlsym`.
//!
//! A missing *required* entry makes the whole runtime unusable (0 devices); a missing
//! *optional* entry is replaced by a stand-in that returns `HSA_STATUS_ERROR`, and
//! [`Runtime::has`] says which are real. Signatures are those of `bindgen/hsa/hsa.h`
//! (HSA 1.x, stable ABI). None of these has been called on a real AMD GPU by this
//! project: no AMD hardware was available (see the README).

#![allow(non_snake_case)]

use super::sys::*;
use libloading::os::unix::{Library, RTLD_LAZY, RTLD_LOCAL};
use once_cell::sync::OnceCell;
use std::ffi::{c_char, c_void, CStr};

/// The library opened when `HSA_RUNTIME_LIB` is not set.
pub const DEFAULT_LIBRARY: &str = "libhsa-runtime64.so.1";

/// `hsa_iterate_agents` callback type.
pub type AgentCallback = unsafe extern "C" fn(hsa_agent_t, *mut c_void) -> hsa_status_t;
/// `hsa_agent_iterate_regions` callback type.
pub type RegionCallback = unsafe extern "C" fn(hsa_region_t, *mut c_void) -> hsa_status_t;

gomp_plugin::symbol_table! {
    /// The resolved runtime entry points. Created once per process by [`load`] and
    /// never freed (the runtime stays loaded); shared read-only by all threads.
    pub struct Runtime;
    required {
        hsa_init = "hsa_init" () -> hsa_status_t;
        hsa_shut_down = "hsa_shut_down" () -> hsa_status_t;
        hsa_status_string = "hsa_status_string" (hsa_status_t, *mut *const c_char) -> hsa_status_t;
        hsa_system_get_info = "hsa_system_get_info" (hsa_system_info_t, *mut c_void) -> hsa_status_t;
        hsa_iterate_agents = "hsa_iterate_agents" (Option<AgentCallback>, *mut c_void) -> hsa_status_t;
        hsa_agent_get_info = "hsa_agent_get_info" (hsa_agent_t, hsa_agent_info_t, *mut c_void) -> hsa_status_t;
        hsa_queue_create = "hsa_queue_create" (hsa_agent_t, u32, hsa_queue_type32_t, Option<unsafe extern "C" fn(hsa_status_t, *mut hsa_queue_t, *mut c_void)>, *mut c_void, u32, u32, *mut *mut hsa_queue_t) -> hsa_status_t;
        hsa_queue_destroy = "hsa_queue_destroy" (*mut hsa_queue_t) -> hsa_status_t;
        hsa_queue_load_read_index_acquire = "hsa_queue_load_read_index_acquire" (*const hsa_queue_t) -> u64;
        hsa_queue_add_write_index_release = "hsa_queue_add_write_index_release" (*const hsa_queue_t, u64) -> u64;
        hsa_signal_create = "hsa_signal_create" (hsa_signal_value_t, u32, *const hsa_agent_t, *mut hsa_signal_t) -> hsa_status_t;
        hsa_signal_destroy = "hsa_signal_destroy" (hsa_signal_t) -> hsa_status_t;
        hsa_signal_store_relaxed = "hsa_signal_store_relaxed" (hsa_signal_t, hsa_signal_value_t) -> ();
        hsa_signal_store_release = "hsa_signal_store_release" (hsa_signal_t, hsa_signal_value_t) -> ();
        hsa_signal_load_acquire = "hsa_signal_load_acquire" (hsa_signal_t) -> hsa_signal_value_t;
        hsa_signal_wait_acquire = "hsa_signal_wait_acquire" (hsa_signal_t, hsa_signal_condition_t, hsa_signal_value_t, u64, hsa_wait_state_t) -> hsa_signal_value_t;
        hsa_agent_iterate_regions = "hsa_agent_iterate_regions" (hsa_agent_t, Option<RegionCallback>, *mut c_void) -> hsa_status_t;
        hsa_region_get_info = "hsa_region_get_info" (hsa_region_t, hsa_region_info_t, *mut c_void) -> hsa_status_t;
        hsa_memory_allocate = "hsa_memory_allocate" (hsa_region_t, usize, *mut *mut c_void) -> hsa_status_t;
        hsa_memory_free = "hsa_memory_free" (*mut c_void) -> hsa_status_t;
        hsa_memory_copy = "hsa_memory_copy" (*mut c_void, *const c_void, usize) -> hsa_status_t;
        hsa_code_object_reader_create_from_memory = "hsa_code_object_reader_create_from_memory" (*const c_void, usize, *mut hsa_code_object_reader_t) -> hsa_status_t;
        hsa_code_object_reader_destroy = "hsa_code_object_reader_destroy" (hsa_code_object_reader_t) -> hsa_status_t;
        hsa_executable_create_alt = "hsa_executable_create_alt" (hsa_profile_t, hsa_default_float_rounding_mode_t, *const c_char, *mut hsa_executable_t) -> hsa_status_t;
        hsa_executable_load_agent_code_object = "hsa_executable_load_agent_code_object" (hsa_executable_t, hsa_agent_t, hsa_code_object_reader_t, *const c_char, *mut c_void) -> hsa_status_t;
        hsa_executable_freeze = "hsa_executable_freeze" (hsa_executable_t, *const c_char) -> hsa_status_t;
        hsa_executable_destroy = "hsa_executable_destroy" (hsa_executable_t) -> hsa_status_t;
        hsa_executable_get_symbol_by_name = "hsa_executable_get_symbol_by_name" (hsa_executable_t, *const c_char, *const hsa_agent_t, *mut hsa_executable_symbol_t) -> hsa_status_t;
        hsa_executable_symbol_get_info = "hsa_executable_symbol_get_info" (hsa_executable_symbol_t, hsa_executable_symbol_info_t, *mut c_void) -> hsa_status_t;
    }
    optional (hsa_status_t = hsa_status_t_HSA_STATUS_ERROR) {
        hsa_executable_validate = "hsa_executable_validate" (hsa_executable_t, *mut u32);
        hsa_memory_assign_agent = "hsa_memory_assign_agent" (*mut c_void, hsa_agent_t, u32);
    }
}

impl Runtime {
    /// `hsa_status_string` of `status`, or the number when the runtime has no text
    /// (the text of the error mapping in `error.rs`, and of `hsa_init`'s failure).
    pub fn status_text(&self, status: hsa_status_t) -> String {
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: valid out-pointer; on success the runtime points it at a static string.
        let r = unsafe { (self.hsa_status_string)(status, &mut p) };
        if r == hsa_status_t_HSA_STATUS_SUCCESS && !p.is_null() {
            // SAFETY: a NUL-terminated string owned by the runtime, never freed.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        } else {
            format!("HSA status {status:#x}")
        }
    }
}

static RUNTIME: OnceCell<Result<Runtime, String>> = OnceCell::new();

/// The library name [`load`] opens: `HSA_RUNTIME_LIB` when set, else [`DEFAULT_LIBRARY`].
pub fn library_name() -> std::ffi::OsString {
    std::env::var_os("HSA_RUNTIME_LIB").unwrap_or_else(|| DEFAULT_LIBRARY.into())
}

/// Opens the HSA runtime, resolves the table and calls `hsa_init`, once per process.
/// Thread-safe; later calls return the first outcome. Never panics on a missing or
/// broken runtime: the error says why (for the `GOMP_DEBUG` line).
pub fn load() -> Result<&'static Runtime, &'static str> {
    RUNTIME
        .get_or_init(|| {
            let name = library_name();
            let shown = name.to_string_lossy().into_owned();
            // SAFETY: the runtime's initialisers are its own; loading it is what GCC's
            // gcn plugin does too.
            let lib = unsafe { Library::open(Some(&name), RTLD_LAZY | RTLD_LOCAL) }
                .map_err(|e| format!("cannot load {shown}: {e}"))?;
            let rt = Runtime::resolve(lib, &shown, |lib, _, sym| {
                gomp_plugin::symbols::dlsym(lib, sym)
            })?;
            // SAFETY: no arguments; reference-counted initialisation of the runtime.
            let st = unsafe { (rt.hsa_init)() };
            if st != hsa_status_t_HSA_STATUS_SUCCESS {
                return Err(format!("hsa_init error: {}", rt.status_text(st)));
            }
            Ok(rt)
        })
        .as_ref()
        .map_err(|e| e.as_str())
}

/// The runtime if [`load`] succeeded earlier, else `None`. Never loads.
pub fn loaded() -> Option<&'static Runtime> {
    RUNTIME.get().and_then(|r| r.as_ref().ok())
}
