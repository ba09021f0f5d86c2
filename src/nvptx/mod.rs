//! The nvptx core: devices, images, memory and launches on NVIDIA GPUs through the CUDA
//! driver. Depends on `cuda` and `libgomp`; called only by the exported edge.

pub mod async_queue;
pub mod config;
pub mod descriptor;
pub mod device;
pub mod events;
pub mod host_lock;
pub mod host_memory;
pub mod host_ranges;
pub mod idle_pool;
pub mod image;
pub mod indirect_table;
pub mod interop;
pub mod kernel_copy;
pub mod large_blocks;
pub mod launch;
pub mod link;
pub mod memory;
pub mod openacc;
pub mod pinned_pool;
pub mod pool;
pub mod ptx_names;
pub mod rect;
pub mod reverse;
pub mod run;
pub mod small_blocks;
pub mod stacks;
pub mod staging;
pub mod streams;

use crate::cu;
use crate::cuda::{driver, sys::*};
use crate::error::{Error, Result};
use crate::libgomp::abi::*;
use crate::libgomp::host;
use crate::libgomp::version::{Detected, Libgomp};
use device::Device;
use std::ffi::c_void;
use std::sync::{Arc, RwLock};

/// Opened devices by ordinal; `None` until `init_device`. Sized by `get_num_devices`.
static DEVICES: RwLock<Vec<Option<Arc<Device>>>> = RwLock::new(Vec::new());

/// The libgomp release we serve (`None` if refused or absent).
pub fn libgomp() -> Option<Libgomp> {
    match host::detected() {
        Detected::Known(v) => Some(v),
        _ => None,
    }
}

fn count_devices() -> Result<i32> {
    let d = driver::load().map_err(Error::invalid)?;
    // SAFETY: plain initialisation call.
    if let Err(e) = unsafe { cu!(cuInit(0)) } {
        return Err(e.into());
    }
    let mut n = 0;
    // SAFETY: out-pointer to a local.
    unsafe { cu!(cuDeviceGetCount(&mut n)) }?;
    let mut ver = 0;
    // SAFETY: out-pointer to a local.
    let _ = unsafe { (d.cuDriverGetVersion)(&mut ver) };
    log::debug!(
        "CUDA driver {}.{}, {n} device(s)",
        ver / 1000,
        ver % 1000 / 10
    );
    Ok(n)
}

/// `get_num_devices`: the number of usable devices for a program whose `requires`
/// clauses are `mask`, 0 when there is no usable driver or GPU, -1 when devices exist
/// but cannot meet `mask`.
pub fn num_devices(mask: u32) -> i32 {
    let n = match count_devices() {
        Ok(n) => n,
        Err(e) => {
            log::debug!("no CUDA devices: {e}");
            return 0;
        }
    };
    {
        let mut devs = DEVICES.write().unwrap_or_else(|e| e.into_inner());
        if devs.len() < n as usize {
            devs.resize(n as usize, None);
        }
    }
    if n == 0 {
        return 0;
    }
    let usm = REQUIRES_UNIFIED_SHARED_MEMORY | REQUIRES_SELF_MAPS;
    let unsupported = mask & !(REQUIRES_UNIFIED_ADDRESS | REQUIRES_REVERSE_OFFLOAD | usm);
    if unsupported != 0 {
        log::debug!("requires mask {mask:#x}: unknown clause bits {unsupported:#x}; host fallback");
        return -1;
    }
    if mask & usm != 0 {
        let pageable = (0..n).all(|i| {
            let mut dev = 0;
            // SAFETY: out-pointer to a local.
            unsafe { cu!(cuDeviceGet(&mut dev, i)) }.is_ok()
                && device::attr_or_zero(dev, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS) != 0
        });
        if !pageable || libgomp().is_none_or(|v| v < Libgomp::V15) {
            log::debug!("unified shared memory needs pageable memory access on every device");
            return -1;
        }
    }
    n
}

/// The opened device `ord`, with its context made current on this thread.
pub fn device(ord: i32) -> Result<Arc<Device>> {
    let d = DEVICES
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(ord as usize)
        .cloned()
        .flatten()
        .ok_or_else(|| Error::invalid(format!("nvptx device {ord} is not initialized")))?;
    d.activate()?;
    Ok(d)
}

/// Device `ord` with its context made current, if it is open.
pub fn device_if_open(ord: i32) -> Option<Arc<Device>> {
    let d = DEVICES
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(usize::try_from(ord).ok()?)
        .cloned()
        .flatten()?;
    d.activate().ok()?;
    Some(d)
}

/// The first initialised device (for calls that name none, like page-locked host
/// allocation), with its context made current.
pub fn any_device() -> Result<Arc<Device>> {
    let d = DEVICES
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .flatten()
        .next()
        .cloned()
        .ok_or_else(|| Error::invalid("no nvptx device is initialized"))?;
    d.activate()?;
    Ok(d)
}

/// `page_locked_host_free`: gives `p` back to the pinned pool of the device that
/// allocated it (found through the host-range registry; the first open device if the
/// registry does not know it).
pub fn pinned_free(p: usize) -> Result<()> {
    if p == 0 {
        return Ok(());
    }
    match host_ranges::global().find(p).map(|r| r.origin) {
        Some(host_ranges::Origin::Pool(ord)) => device(ord)?.pinned_free(p),
        _ => any_device()?.pinned_free(p),
    }
}

/// `init_device`: opens device `ord`. Fails if it is already open or out of range.
pub fn init_device(ord: i32) -> Result<()> {
    let mut devs = DEVICES.write().unwrap_or_else(|e| e.into_inner());
    let slot = devs
        .get_mut(ord as usize)
        .ok_or_else(|| Error::invalid(format!("no nvptx device {ord}")))?;
    if slot.is_some() {
        return Err(Error::invalid(format!(
            "nvptx device {ord} is already initialized"
        )));
    }
    *slot = Some(Arc::new(Device::open(ord)?));
    Ok(())
}

/// `fini_device`: releases device `ord`. A device that is not open is fine.
pub fn fini_device(ord: i32) -> Result<()> {
    let dev = DEVICES
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .get_mut(ord as usize)
        .and_then(Option::take);
    match dev {
        Some(d) => d.close(),
        None => Ok(()),
    }
}

fn check_image_version(version: u32) -> Result<()> {
    if version_dev(version) > VERSION_NVIDIA_PTX {
        return Err(Error::invalid(format!(
            "Offload data incompatible with PTX plugin (expected {VERSION_NVIDIA_PTX}, received {})",
            version_dev(version)
        )));
    }
    Ok(())
}

/// `load_image`: loads an image and returns its address table (malloc'd for libgomp)
/// and the entry count.
///
/// # Safety
/// Pointers as libgomp passes them: `data` a valid image descriptor, `table` and
/// `rev_fn_table` (if non-NULL) writable, `host_ind_fns` NULL or the image's indirect
/// function addresses.
pub unsafe fn load_image(
    ord: i32,
    version: u32,
    data: *const c_void,
    table: *mut *mut AddrPair,
    rev_fn_table: *mut *mut u64,
    host_ind_fns: *const u64,
) -> Result<i32> {
    check_image_version(version)?;
    if table.is_null() {
        return Err(Error::invalid("load_image: no table pointer"));
    }
    let dev = device(ord)?;
    // SAFETY: forwarded caller guarantees.
    let (img, pairs) = unsafe { image::Image::load(&dev, version, data.cast(), host_ind_fns) }?;
    let rev = if rev_fn_table.is_null() {
        std::ptr::null_mut()
    } else {
        reverse::setup(&dev, &img, img.fns.len())?
    };
    let out = crate::libgomp::report::malloc(pairs.len() * std::mem::size_of::<AddrPair>())
        .cast::<AddrPair>();
    // SAFETY: `out` has room for `pairs.len()` entries; `table` is writable (caller).
    unsafe {
        std::ptr::copy_nonoverlapping(pairs.as_ptr(), out, pairs.len());
        *table = out;
        if !rev_fn_table.is_null() {
            *rev_fn_table = rev;
        }
    }
    log::debug!(
        "device {ord}: loaded image {:#x} ({} kernel(s), {} variable(s))",
        img.key,
        img.fns.len(),
        pairs.len() - img.fns.len() - 1
    );
    dev.images
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(img);
    Ok(pairs.len() as i32)
}

/// `unload_image`: runs the image's destructors and unloads it.
pub fn unload_image(ord: i32, version: u32, data: *const c_void) -> Result<()> {
    check_image_version(version)?;
    let dev = device(ord)?;
    let img = {
        let mut imgs = dev.images.lock().unwrap_or_else(|e| e.into_inner());
        let i = imgs
            .iter()
            .position(|m| m.key == data as usize)
            .ok_or_else(|| Error::invalid(format!("unload_image: image {data:p} is not loaded")))?;
        imgs.remove(i)
    };
    img.unload(&dev)
}

/// `get_uid`: the device's UUID as `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, or
/// `None` if the driver cannot tell.
pub fn uid(ord: i32) -> Option<String> {
    let d = driver::loaded()?;
    let mut dev = 0;
    // SAFETY: out-pointer to a local.
    unsafe { cu!(cuDeviceGet(&mut dev, ord)) }.ok()?;
    let mut u = CUuuid { bytes: [0; 16] };
    // SAFETY: out-pointer to a local; stand-ins return NOT_SUPPORTED without writing.
    let ok = unsafe {
        (d.cuDeviceGetUuid_v2)(&mut u, dev) == 0 || (d.cuDeviceGetUuid)(&mut u, dev) == 0
    };
    ok.then(|| format_uuid(&u.bytes.map(|b| b as u8)))
}

/// Formats 16 bytes as NVIDIA's `GPU-` UUID string.
pub fn format_uuid(b: &[u8; 16]) -> String {
    let h: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuid_format() {
        let b: [u8; 16] = std::array::from_fn(|i| (i * 17) as u8);
        assert_eq!(
            super::format_uuid(&b),
            "GPU-00112233-4455-6677-8899-aabbccddeeff"
        );
    }
}
