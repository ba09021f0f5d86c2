//! The gcn backend's face to the framework: [`Gcn`] implements [`gomp_plugin::Plugin`]
//! and the open [`Device`] implements [`gomp_plugin::Device`]. Offered: devices, images,
//! memory, `is_accessible_ptr`; `can_run` says false, so libgomp runs target regions on
//! the host (kernel dispatch is not implemented: see `dispatch`). Not offered: OpenACC,
//! interop, page-locked host memory, rectangular copies and managed memory (the
//! framework's defaults answer "not implemented").
//!
//! Thread-safety: state lives in the framework's registry and in each device.

use crate::device::Device;
use gomp_plugin::blocks::DevPtr;
use gomp_plugin::device::LoadedImage;
use gomp_plugin::libgomp::abi::*;
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
    /// OpenMP only: OpenACC is not offered by this plugin (GCC's own gcn plugin offers it).
    const CAPS: u32 = CAP_OPENMP_400;
    const TARGET_TYPE: c_int = TARGET_TYPE_GCN;
    const IMAGE_KIND: &'static str = "GCN";
    const IMAGE_VERSION: u32 = VERSION_GCN;

    fn registry() -> &'static Registry<Device> {
        &REGISTRY
    }

    /// 0 without a working HSA runtime or GPU agent, and 0 by default even with one
    /// (see [`crate::EXPERIMENTAL_ENV`]); a `GOMP_DEBUG` line says why.
    fn num_devices(requires_mask: u32) -> i32 {
        crate::num_devices(requires_mask)
    }

    fn open(ord: i32) -> Result<Device> {
        Device::open(ord)
    }

    /// Never: kernel dispatch is not implemented, so libgomp runs every target region
    /// on the host.
    fn can_run(_kernel: *mut c_void) -> bool {
        false
    }
}

impl gomp_plugin::Device for Device {
    fn close(&self) -> Result<()> {
        Device::close(self)
    }

    /// Checks the image (descriptor, code object, kernel descriptors, target), loads it
    /// into an HSA executable; reverse offload is never offered (`get_num_devices`
    /// refuses the requirement), so the reverse-offload table is NULL.
    unsafe fn load_image(
        self: &Arc<Self>,
        _version: u32,
        data: *const c_void,
        _want_rev: bool,
        _host_ind_fns: *const u64,
    ) -> Result<LoadedImage> {
        // SAFETY: libgomp passes mkoffload's descriptor (caller).
        let table = unsafe { Device::load_image(self, data)? };
        Ok(LoadedImage {
            table,
            rev_fn_table: std::ptr::null_mut(),
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

    unsafe fn run(
        &self,
        _kernel: *mut c_void,
        _vars: *mut c_void,
        _args: *mut *mut c_void,
    ) -> Result<()> {
        Err(crate::dispatch::launch_protocol_missing("run"))
    }

    unsafe fn run_async(
        self: &Arc<Self>,
        _kernel: *mut c_void,
        _vars: *mut c_void,
        _args: *mut *mut c_void,
        _async_data: *mut c_void,
    ) -> Result<()> {
        Err(crate::dispatch::launch_protocol_missing("async_run"))
    }
}
