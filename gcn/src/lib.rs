//! gomp-plugin-gcn: `libgomp-plugin-gcn.so.1`, GCC's OpenMP offload plugin for AMD
//! GPUs, on the HSA runtime loaded at run time; the gcn backend of the `gomp_plugin`
//! framework ([`plugin`] implements its traits). **Experimental: implemented from the contract
//! (`docs/plugin-abi.md`) and the public HSA 1.x API, unverified on AMD
//! hardware** (none was available to this project).
//!
//! Implemented: runtime loading and GPU-agent discovery (this file); reading and
//! checking gcn images ([`descriptor`], [`code_object`], [`mach`], the kernel metadata
//! in [`metadata`] over [`msgpack`]); opening a device (its memory regions,
//! [`device`]); device memory, copies, memset and `is_accessible_ptr` ([`memory`]);
//! loading an image into an HSA executable and building libgomp's address table
//! ([`executable`], [`table`]); running kernels by GCC's gcn launch protocol
//! (docs/gcn-launch.md): the pure parts in [`launch`] and [`config`], the ring drain in
//! [`console`], queues, dispatch, completion, exit codes, reverse offload and
//! `async_run` in [`run`]; OpenACC (kernel execution, async queues, properties) in
//! [`openacc`].
//!
//! Not implemented: OpenACC's CUDA interop (`openacc_cuda_*`, CUDA only); images with indirect functions; 2-D/3-D copies; managed
//! memory.
//!
//! Verified: the pure parts by unit tests on real GCC 16 images; everything that talks
//! to HSA only against the stand-in runtime of tests/fallback/stub_libhsa.c, which plays
//! the device side of the protocol (gcn/tests/, tests/host_fallback.sh section 2c), and,
//! for the no-GPU path, Debian's real ROCr runtime without `/dev/kfd` — never on an AMD
//! GPU.
//!
//! Thread-safety: the agent list is computed once (a `OnceCell`); open devices are in
//! the framework's registry.

pub mod code_object;
pub mod config;
pub mod console;
pub mod descriptor;
pub mod device;
pub mod dispatch;
pub mod executable;
pub mod launch;
pub mod mach;
pub mod memory;
pub mod metadata;
pub mod msgpack;
pub mod openacc;
pub mod plugin;
pub mod run;
pub mod table;

pub mod hsa;

// The exported `GOMP_OFFLOAD_*` entry points: the framework's shells
// (`src/edge/exports/`), written once for every product, compiled here over this
// backend (they call `super::Backend`). OpenACC without the CUDA-interop shells
// (`openacc_cuda.rs`, which GCC's gcn plugin does not export either); no interop or
// page-locked memory: the backend does not offer them (see `plugin`).
/// The backend every exported shell calls.
type Backend = plugin::Gcn;
#[path = "../../src/edge/exports/can_run.rs"]
mod can_run_exports;
#[path = "../../src/edge/exports/openacc.rs"]
mod openacc_exports;
#[path = "../../src/edge/exports/openmp.rs"]
mod openmp_exports;
/// `GOMP_OFFLOAD_async_run`'s implementation, for tests that link this library: there
/// the exported name denotes its IFUNC resolver (src/edge/exports/openmp.rs).
pub use openmp_exports::async_run;

use crate::hsa::runtime::{self, Runtime};
use crate::hsa::sys::*;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::abi::*;
use once_cell::sync::OnceCell;
use std::ffi::c_void;

/// Obsolete: once made the plugin report the GPU agents it found although it could not
/// run kernels. Every GPU agent is a device now; the variable is accepted and ignored
/// (a `GOMP_DEBUG` line says so).
pub const EXPERIMENTAL_ENV: &str = "GOMP_PLUGIN_RS_GCN_EXPERIMENTAL";

/// One GPU agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// The runtime's opaque handle.
    pub handle: u64,
    /// `HSA_AGENT_INFO_NAME`, e.g. "gfx90a".
    pub name: String,
}

static AGENTS: OnceCell<std::result::Result<Vec<Agent>, String>> = OnceCell::new();

unsafe extern "C" fn collect(agent: hsa_agent_t, data: *mut c_void) -> hsa_status_t {
    // SAFETY: `data` is the `(&Runtime, Vec<Agent>)` that `discover` passes, live for
    // the whole iteration, used by this thread only.
    let (rt, out) = unsafe { &mut *(data as *mut (&Runtime, Vec<Agent>)) };
    let mut kind: hsa_device_type_t = 0;
    // SAFETY: valid agent from the runtime; out-pointer sized for the attribute.
    let st = unsafe {
        (rt.hsa_agent_get_info)(
            agent,
            hsa_agent_info_t_HSA_AGENT_INFO_DEVICE,
            (&mut kind as *mut hsa_device_type_t).cast(),
        )
    };
    if st != hsa_status_t_HSA_STATUS_SUCCESS || kind != hsa_device_type_t_HSA_DEVICE_TYPE_GPU {
        return hsa_status_t_HSA_STATUS_SUCCESS;
    }
    let mut name = [0u8; 64];
    // SAFETY: HSA_AGENT_INFO_NAME writes at most 64 bytes.
    let st = unsafe {
        (rt.hsa_agent_get_info)(
            agent,
            hsa_agent_info_t_HSA_AGENT_INFO_NAME,
            name.as_mut_ptr().cast(),
        )
    };
    let name = if st == hsa_status_t_HSA_STATUS_SUCCESS {
        let n = name.iter().position(|&c| c == 0).unwrap_or(64);
        String::from_utf8_lossy(&name[..n]).into_owned()
    } else {
        "?".into()
    };
    out.push(Agent {
        handle: agent.handle,
        name,
    });
    hsa_status_t_HSA_STATUS_SUCCESS
}

fn discover() -> std::result::Result<Vec<Agent>, String> {
    let rt = runtime::load()?;
    let mut data: (&Runtime, Vec<Agent>) = (rt, Vec::new());
    // SAFETY: `collect` matches the callback type and only uses `data` during the call.
    let st = unsafe {
        (rt.hsa_iterate_agents)(
            Some(collect),
            (&mut data as *mut (&Runtime, Vec<Agent>)).cast(),
        )
    };
    if st != hsa_status_t_HSA_STATUS_SUCCESS {
        return Err(format!("hsa_iterate_agents error: {}", rt.status_text(st)));
    }
    Ok(data.1)
}

/// The GPU agents, found once per process; an error says why there are none usable.
pub fn agents() -> std::result::Result<&'static [Agent], &'static str> {
    AGENTS
        .get_or_init(discover)
        .as_ref()
        .map(Vec::as_slice)
        .map_err(String::as_str)
}

/// What [`num_devices`] reports for the agents found under `requires_mask`; the text
/// is the `GOMP_DEBUG` line. Reverse offload is supported; unified addresses, unified
/// shared memory and self maps are not (0 devices). Pure.
pub fn devices_for(found: &[Agent], requires_mask: u32) -> (i32, String) {
    let names: Vec<&str> = found.iter().map(|a| a.name.as_str()).collect();
    if found.is_empty() {
        return (0, "HSA runtime loaded, but no GPU agent: 0 devices".into());
    }
    let unsupported = requires_mask
        & (REQUIRES_UNIFIED_ADDRESS | REQUIRES_UNIFIED_SHARED_MEMORY | REQUIRES_SELF_MAPS);
    if unsupported != 0 {
        return (0, format!("GPU agents {names:?}, but the program requires {unsupported:#x}, which this plugin does not support: 0 devices"));
    }
    (
        found.len() as i32,
        format!(
            "{} GPU agent(s) {names:?}: {} device(s)",
            found.len(),
            found.len()
        ),
    )
}

/// `get_num_devices`: the GPU agents; 0 when the runtime is missing or broken
/// (`hsa_init` failing, e.g. without `/dev/kfd`) or has no GPU agent, with one
/// `GOMP_DEBUG` line saying why. Never exits (GCC's plugin exits with status 1 when
/// `hsa_init` fails).
pub fn num_devices(requires_mask: u32) -> i32 {
    if std::env::var_os(EXPERIMENTAL_ENV).is_some() {
        log::debug!("{EXPERIMENTAL_ENV} is obsolete and ignored: every GPU agent is a device");
    }
    match agents() {
        Err(e) => {
            log::debug!("no HSA devices: {e}");
            0
        }
        Ok(found) => {
            let (n, why) = devices_for(found, requires_mask);
            log::debug!("{why}");
            if n > 0 {
                <plugin::Gcn as gomp_plugin::Plugin>::registry().ensure_len(n as usize);
            }
            n
        }
    }
}

/// The agent of device number `ord`.
pub fn agent(ord: i32) -> Result<&'static Agent> {
    let found = agents().map_err(|e| Error::invalid(format!("no gcn device {ord}: {e}")))?;
    usize::try_from(ord)
        .ok()
        .and_then(|i| found.get(i))
        .ok_or_else(|| Error::invalid(format!("no gcn device {ord} (there are {})", found.len())))
}

/// Reads and checks a gcn image: descriptor, code object, kernel descriptors, and (when
/// `device_target` is given) that the image's target is the device's. (The version word
/// is checked by the exported `load_image` first, `gomp_plugin::device::check_image_version`.)
///
/// # Safety
/// `target_data` is NULL or a `gcn_image_desc` (see [`descriptor::read`]).
pub unsafe fn check_image(
    target_data: *const c_void,
    device_target: Option<&str>,
) -> Result<(descriptor::Descriptor, code_object::CodeObject)> {
    // SAFETY: caller's contract.
    let d = unsafe { descriptor::read(target_data)? };
    let co = code_object::CodeObject::parse(&d.image)?;
    for k in co.check_kernels(d.kernels.iter().map(|k| k.name.as_str()))? {
        log::debug!(
            "gcn image: kernel '{k}' has no kernel descriptor '{k}.kd': loaded, not launchable"
        );
    }
    if let Some(dev) = device_target {
        if !co
            .target
            .is_some_and(|t| t == dev || mach::is_generic(co.mach))
        {
            return Err(Error::invalid(format!(
                "gcn image is for {}, the device is {dev}",
                co.target_name()
            )));
        }
    }
    Ok((d, co))
}

#[cfg(test)]
pub mod image_tests;
