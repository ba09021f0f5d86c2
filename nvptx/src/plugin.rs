//! The nvptx backend's face to the framework: [`Nvptx`] implements
//! [`gomp_plugin::Plugin`] and [`gomp_plugin::OpenAcc`]; the OpenACC queue implements
//! the framework's queue trait (the device's is with [`OpenDevice`]), by calling this
//! crate's concepts.
//! Device discovery (driver load, `requires` checks, UUIDs) is `discovery.rs`'s.
//!
//! Thread-safety: everything is reached through the framework's registry (a read-mostly
//! lock) or through values libgomp owns; no state of its own.

use crate::config::Config;
use crate::cuda::safe::query;
use crate::cuda::{sys::*, table};
use crate::device;
use crate::discovery;
use crate::host::ranges as host_ranges;
use crate::image::Kernel;
use crate::interop;
use crate::observe::nvtx;
use crate::open::OpenDevice;
use crate::openacc::{exec, property, queue::AccQueue, thread};
use gomp_plugin::kernels::Live;
use gomp_plugin::libgomp::abi::*;
use gomp_plugin::libgomp::interop::{InteropObj, InteropValue};
use gomp_plugin::openacc::{AccLaunch, AccProperty};
use gomp_plugin::rect::Rect;
use gomp_plugin::registry::Registry;
use gomp_plugin::settings::ProcessSettings;
use gomp_plugin::DeviceCore;
use gomp_plugin::{Error, Plugin, Result};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Arc;

/// The nvptx product. A unit type: all state is in [`REGISTRY`] and the devices.
pub struct Nvptx;

/// Opened devices by ordinal (sized by `get_num_devices`).
static REGISTRY: Registry<OpenDevice> = Registry::new("nvptx");

/// The open device `ord`, context current on this thread.
pub fn device(ord: i32) -> Result<Arc<OpenDevice>> {
    REGISTRY.get(ord)
}

/// The open device `ord` with its context current, if it is open.
pub fn device_if_open(ord: i32) -> Option<Arc<OpenDevice>> {
    REGISTRY.get(ord).ok()
}

impl Plugin for Nvptx {
    type Device = OpenDevice;
    const NAME: &'static str = "nvptx";
    const TAG: &'static str = "";
    const GPUS: &'static str = "NVIDIA GPUs";
    const CAPS: u32 = CAP_OPENMP_400 | CAP_OPENACC_200;
    /// Unified addresses (CUDA's unified virtual addressing, every device of a 64-bit
    /// process) and reverse offload (`GOMP_PLUGIN_target_rev` through the device's
    /// reverse-offload queue): what get_num_devices accepts under libgomp 13-16.
    const CAPS_17: u32 = CAP_UNIFIED_ADDRESS | CAP_REVERSE_OFFLOAD;
    const TARGET_TYPE: c_int = TARGET_TYPE_NVIDIA_PTX;
    const IMAGE_KIND: &'static str = "PTX";
    const IMAGE_VERSION: u32 = VERSION_NVIDIA_PTX;

    fn registry() -> &'static Registry<OpenDevice> {
        &REGISTRY
    }

    /// Reads the settings ([`Config::process`]) and attaches the NVTX tool they name, if
    /// any ([`nvtx::attach`]).
    fn read_settings() {
        nvtx::attach(&Config::process().observe);
    }

    /// 0 when there is no usable driver or GPU, -1 when devices exist but cannot meet
    /// `mask` (spec §1.5): [`discovery::num_devices`], the registry sized by the
    /// driver's device count.
    fn num_devices(mask: u32) -> i32 {
        discovery::num_devices(mask, |n| REGISTRY.ensure_len(n))
    }

    fn open(ord: i32) -> Result<OpenDevice> {
        OpenDevice::open(ord)
    }

    /// Shared memory when the device can access the host's pageable memory (HMM or
    /// ATS, `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`): the rule get_num_devices
    /// applies to `requires unified_shared_memory` / `self_maps` under libgomp 15-16,
    /// per device.
    fn dev_caps(ord: i32) -> u32 {
        match discovery::driver_device(ord) {
            Some(dev)
                if device::attr_or_zero(dev, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS) != 0 =>
            {
                CAP_SHARED_MEM
            }
            _ => 0,
        }
    }

    /// SMs x registers per SM / 32 (270336 on an H100): the stock plugin's figure (the
    /// teams of one warp that would fit at once if each thread used one register), so
    /// programs see the same number with either plugin; 1 without a driver.
    fn teams_dim0(ord: i32) -> i32 {
        let Some(dev) = discovery::driver_device(ord) else {
            return 1;
        };
        let sms = device::attr_or_zero(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
        let per_sm =
            device::attr_or_zero(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
        (sms * (per_sm / 32)).max(1)
    }

    /// The warps of the largest block: an OpenMP thread of GCC's nvptx code is a warp.
    fn threads_dim0(ord: i32) -> i32 {
        let Some(dev) = discovery::driver_device(ord) else {
            return 1;
        };
        (device::attr_or_zero(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK) / 32).max(1)
    }

    /// The `numa_node` Linux gives the device's PCI function
    /// (/sys/bus/pci/devices/DOMAIN:BUS:DEVICE.0/numa_node, from the driver's PCI
    /// attributes); -1 when the driver, the attributes or the file do not tell (Linux
    /// itself writes -1 there on a machine with one node).
    fn numa_node(ord: i32) -> i32 {
        let Some(dev) = discovery::driver_device(ord) else {
            return -1;
        };
        let a = |x| query::attribute(dev, x).ok().filter(|&v| v >= 0);
        let (Some(domain), Some(bus), Some(slot)) = (
            a(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
            a(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
            a(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
        ) else {
            return -1;
        };
        discovery::numa_node_of(&format!(
            "/sys/bus/pci/devices/{domain:04x}:{bus:02x}:{slot:02x}.0/numa_node"
        ))
    }

    /// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, or `None` if the driver cannot tell.
    fn uid(ord: i32) -> Option<String> {
        table::loaded()?;
        let dev = query::device(ord).ok()?;
        query::uuid(dev).map(|u| discovery::format_uuid(&u))
    }

    /// From the first open device's pinned pool.
    fn page_locked_host_alloc(size: usize) -> Result<Option<*mut c_void>> {
        let dev = REGISTRY.any()?;
        let dev = dev.shared();
        dev.memory().pinned_alloc(size, || dev.activate())
    }

    /// Back to the pinned pool of the device that allocated `p`: the first open device's
    /// (where `page_locked_host_alloc` takes it) if it holds `p`, else the one the
    /// host-range registry names; an error if none does.
    fn page_locked_host_free(p: usize) -> Result<()> {
        if p == 0 {
            return Ok(());
        }
        let first = REGISTRY.any()?;
        let f = first.shared();
        if f.memory().pinned_try_free(p, || f.activate())? {
            return Ok(());
        }
        match host_ranges::global().find(p).map(|r| r.origin) {
            Some(host_ranges::Origin::Pool(ord)) if ord != f.ord() => {
                let d = device(ord)?;
                let d = d.shared();
                d.memory().pinned_free(p, || d.activate())
            }
            _ => f.memory().pinned_free(p, || f.activate()),
        }
    }

    unsafe fn copy_rect(r: &Rect) -> Result<()> {
        let dev = device(r.device())?;
        let dev = dev.shared();
        // SAFETY: the host sides are valid for the block (caller).
        unsafe {
            match r.depth {
                None => crate::rect::copy2d(
                    dev.launch(),
                    &crate::rect::desc2d(r.dst, r.src, r.width, r.height),
                ),
                Some(d) => crate::rect::copy3d(
                    dev.launch(),
                    &crate::rect::desc3d(r.dst, r.src, r.width, r.height, d),
                ),
            }
        }
    }

    unsafe fn interop(
        obj: &mut InteropObj,
        ord: c_int,
        flag: u32,
        targetsync: bool,
        prefer_type: *const c_char,
    ) -> Result<()> {
        let dev = device(ord)?;
        let dev = dev.shared();
        let (settings, launch) = (dev.settings(), dev.launch());
        // SAFETY: forwarded caller guarantee.
        unsafe { interop::interop(settings, launch, obj, flag, targetsync, prefer_type) }
    }

    fn interop_property(obj: &InteropObj, prop: c_int) -> Result<InteropValue> {
        let dev = device(obj.device_num)?;
        let (dev, ctx) = (dev.shared().device().cu_dev(), dev.shared().context());
        Ok(interop::property(obj, prop, dev, ctx))
    }

    fn interop_type_desc(obj: Option<&InteropObj>, prop: c_int) -> Option<&'static CStr> {
        interop::type_desc(obj.map_or(interop::FR_CUDA, |o| o.fr), prop)
    }
}

/// The device of an OpenACC launch: the queue's, else the calling thread's, made
/// current.
fn acc_device(queue: Option<&AccQueue>) -> Result<Arc<device::Core>> {
    let dev = match queue {
        Some(q) => q.dev.clone(),
        None => <Nvptx as gomp_plugin::OpenAcc>::current_thread_data()
            .map(|t| t.dev.clone())
            .ok_or_else(|| Error::invalid("openacc_exec: thread has no OpenACC device"))?,
    };
    dev.activate()?;
    Ok(dev)
}

impl gomp_plugin::OpenAcc for Nvptx {
    type Queue = AccQueue;
    type ThreadData = thread::ThreadData;

    fn exec(
        kernel: Live<'_, Kernel>,
        launch: &AccLaunch,
        queue: Option<&AccQueue>,
    ) -> Result<Option<[u32; 3]>> {
        let dev = acc_device(queue)?;
        let stream = match queue {
            Some(q) => Some(q.ordered_stream()?),
            None => None,
        };
        exec::exec(&dev, kernel.kernel, launch, stream).map(Some)
    }

    fn exec_host_block(
        kernel: Live<'_, Kernel>,
        args: &[*mut c_void],
        launch: &AccLaunch,
        queue: Option<&AccQueue>,
    ) -> Result<Option<[u32; 3]>> {
        let on_device = |devaddrs: CUdeviceptr| AccLaunch {
            devaddrs,
            ..*launch
        };
        if args.is_empty() {
            return Self::exec(kernel, &on_device(0), queue);
        }
        let dev = acc_device(queue)?;
        let bytes = std::mem::size_of_val(args);
        let block = dev.alloc(bytes)?;
        let launch = on_device(block);
        let host = args.as_ptr();
        // SAFETY: `host` is readable for `bytes` (a live slice) and each copy has read it
        // when it returns; the block holds the array for the kernel. Without a queue,
        // exec orders the launch after the copy (a deferred copy included) and waits
        // for the kernel; on a queue, the copy and launch are ordered on its stream, and
        // the block is freed after them in the same order (below).
        let r = unsafe {
            match queue {
                Some(q) => q
                    .host2dev(block, host.cast(), bytes)
                    .and_then(|()| Self::exec(kernel, &launch, Some(q))),
                None => dev
                    .host2dev(block, host.cast(), bytes)
                    .and_then(|()| Self::exec(kernel, &launch, None)),
            }
        };
        let freed = match queue {
            // Once the queue's copy and kernel have run, without waiting for them here;
            // if the free cannot be queued, after waiting for the queue.
            Some(q) => q.free_after(block).or_else(|e| {
                log::debug!("openacc_async_exec: argument block freed after a wait ({e})");
                q.synchronize().and_then(|()| dev.free(block))
            }),
            None => dev.free(block),
        };
        r.and_then(|d| freed.map(|()| d))
    }

    fn thread_data(ord: c_int) -> Result<thread::ThreadData> {
        let dev = Arc::clone(device(ord)?.shared());
        dev.settings().use_openacc();
        Ok(thread::ThreadData { dev })
    }

    fn queue(ord: c_int) -> Result<AccQueue> {
        AccQueue::create(device(ord)?)
    }

    fn property(ord: c_int, prop: u32) -> Result<AccProperty> {
        Ok(
            // The free memory of an open device is what the program can still
            // allocate: the driver's free memory and what the plugin's caches hold.
            match property::get(ord, prop, || {
                device_if_open(ord).map(|d| d.shared().memory().held_unused())
            })? {
                property::Value::Size(n) => AccProperty::Size(n),
                property::Value::Str(s) => AccProperty::Str(s),
                property::Value::None => AccProperty::None,
            },
        )
    }

    fn native_device() -> *mut c_void {
        Self::current_thread_data().map_or(std::ptr::null_mut(), |t| {
            // The device's own copy (alive while the thread's device is open), not
            // a temporary's address.
            (t.dev.device().cu_dev_ref() as *const CUdevice)
                .cast_mut()
                .cast()
        })
    }

    fn native_context() -> *mut c_void {
        Self::current_thread_data().map_or(std::ptr::null_mut(), |t| t.dev.context().cast())
    }
}
