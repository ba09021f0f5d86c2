//! Finding the devices: the CUDA driver loaded and initialised, its devices counted,
//! and what `get_num_devices` reports for them under libgomp's `requires` mask; the
//! queries libgomp makes of a device before it opens it (its driver handle, its NUMA
//! node from sysfs, its UUID's text). Devices are numbered in the driver's order.
//!
//! Thread-safety: functions; the driver is loaded once per process (`cuda::table`).

use crate::cuda::safe::query;
use crate::cuda::{sys::*, table};
use crate::observe::info;
use gomp_plugin::libgomp::abi::*;
use gomp_plugin::libgomp::host;
use gomp_plugin::libgomp::version::Libgomp;
use gomp_plugin::settings::ProcessSettings;
use gomp_plugin::{Error, Result};

/// The driver loaded and initialised, and its device count.
fn count_devices() -> Result<i32> {
    table::load().map_err(Error::invalid)?;
    query::init()?;
    let n = query::device_count()?;
    let ver = query::driver_version().unwrap_or(0);
    log::debug!(
        "CUDA driver {}.{}, {n} device(s)",
        ver / 1000,
        ver % 1000 / 10
    );
    Ok(n)
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

/// `get_num_devices`: the driver's devices; 0 when there is no usable driver or GPU,
/// -1 when devices exist but cannot meet `mask` (spec §1.5), with a `GOMP_DEBUG` line
/// (and a `GOMP_NVPTX_INFO` one) saying why. `on_count` is called with the driver's
/// device count once it is known (the registry's size), before `mask` is checked.
pub fn num_devices(mask: u32, on_count: impl FnOnce(usize)) -> i32 {
    let on = &crate::config::Config::process().observe;
    let n = match count_devices() {
        Ok(n) => n,
        Err(e) => {
            log::debug!("no CUDA devices: {e}");
            info::fallback(
                on,
                &match table::loaded() {
                    None => format!("no usable CUDA driver ({e})"),
                    Some(_) => format!("CUDA driver error ({e})"),
                },
            );
            return 0;
        }
    };
    on_count(n.max(0) as usize);
    if n == 0 {
        info::fallback(
            on,
            "the CUDA driver reports no device (CUDA_VISIBLE_DEVICES?)",
        );
        return 0;
    }
    let usm = REQUIRES_UNIFIED_SHARED_MEMORY | REQUIRES_SELF_MAPS;
    let unsupported = mask & !(REQUIRES_UNIFIED_ADDRESS | REQUIRES_REVERSE_OFFLOAD | usm);
    if unsupported != 0 {
        log::debug!("requires mask {mask:#x}: unknown clause bits {unsupported:#x}; host fallback");
        info::fallback(on, &format!(
            "the program's 'requires' (mask {mask:#x}) has clauses the plugin does not know ({unsupported:#x})"
        ));
        return -1;
    }
    if mask & usm != 0 {
        let pageable = (0..n).all(|i| {
            query::device(i).is_ok_and(|dev| {
                query::attribute(dev, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS).unwrap_or(0) != 0
            })
        });
        if !pageable || host::libgomp().is_none_or(|v| v < Libgomp::V15) {
            log::debug!("unified shared memory needs pageable memory access on every device");
            info::fallback(
                on,
                "'requires unified_shared_memory' or 'self_maps' needs pageable memory access on every device (and libgomp 15 or newer)",
            );
            return -1;
        }
    }
    n
}

/// The driver's handle of device `ord`, for the queries libgomp makes before it opens
/// the device; `None` without a loaded driver or such a device.
pub fn driver_device(ord: i32) -> Option<CUdevice> {
    table::loaded()?;
    query::device(ord).ok()
}

/// The NUMA node in a sysfs `numa_node` file at `path`: its number, -1 when the file is
/// missing or says something else (Linux writes -1 for "no node").
pub fn numa_node_of(path: &str) -> i32 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .filter(|&n| n >= 0)
        .unwrap_or(-1)
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

    #[test]
    fn numa_node_file() {
        let d = std::env::temp_dir().join(format!("numa-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("numa_node");
        let path = f.to_str().unwrap();
        for (text, want) in [("1\n", 1), ("0", 0), ("-1\n", -1), ("x", -1)] {
            std::fs::write(&f, text).unwrap();
            assert_eq!(super::numa_node_of(path), want, "{text:?}");
        }
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(super::numa_node_of(path), -1);
    }
}
