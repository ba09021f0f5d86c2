//! `GOMP_NVPTX_INFO`: one line per device opened and one when the program falls back
//! to the host, on stderr as `libgomp: nvptx info: ...` (libgomp's error stream, not
//! `GOMP_DEBUG`). A libgomp the plugin refuses is already said unconditionally by the
//! version handshake, so it has no info line of its own.

use crate::config::switches::Switches;
use gomp_plugin::libgomp::{host, report};

/// Facts of an opened device, as [`opened`] prints them.
pub struct Opened<'a> {
    /// libgomp's device number within the plugin.
    pub ord: i32,
    /// Marketing name.
    pub name: &'a str,
    /// Compute capability.
    pub cc: (i32, i32),
    /// Streaming multiprocessors.
    pub sms: i32,
    /// `cuDriverGetVersion` (e.g. 13000), 0 if unknown.
    pub driver: i32,
    /// Soft-stack bytes per warp.
    pub soft_stack: usize,
    /// `GOMP_NVPTX_HEAP_SIZE` if set.
    pub heap: Option<usize>,
    /// Whether the device has a stream-ordered memory pool.
    pub pool: bool,
}

/// The device line.
pub fn opened_line(o: &Opened<'_>, libgomp: &str, cache: &str) -> String {
    format!(
        "nvptx info: device {}: {} (sm_{}{}, {} SMs); gomp-plugin-rs {} for {libgomp}; \
         CUDA driver {}.{}; {cache}; soft stack {} bytes/warp; heap {}; {}",
        o.ord,
        o.name,
        o.cc.0,
        o.cc.1,
        o.sms,
        env!("CARGO_PKG_VERSION"),
        o.driver / 1000,
        o.driver % 1000 / 10,
        o.soft_stack,
        o.heap
            .map_or("driver default (8 MiB)".to_string(), |h| format!(
                "{h} bytes"
            )),
        if o.pool {
            "stream-ordered memory pool"
        } else {
            "cuMemAlloc (no memory pools)"
        }
    )
}

/// Prints the device line when `GOMP_NVPTX_INFO` is on; `jit_cache`
/// (`crate::config::switches::jit_cache`) and `link_cache` describe the driver's JIT
/// cache and the linked-image cache.
pub fn opened(on: &Switches, o: &Opened<'_>, jit_cache: &str, link_cache: &str) {
    if on.info {
        let cache = format!("{jit_cache}; {link_cache}");
        report::error(&opened_line(o, &host::detected().to_string(), &cache));
    }
}

/// The line of an image loaded on device `ord`: its PTX objects and kernels, how its
/// module was made (`how`), the time that took and the whole load's.
pub fn image_line(
    ord: i32,
    image: usize,
    objects: usize,
    kernels: usize,
    how: &str,
    module_ms: f64,
    load_ms: f64,
) -> String {
    format!(
        "nvptx info: device {ord}: image {image:#x}: {objects} PTX object(s), {kernels} kernel(s); \
         {how} in {module_ms:.1} ms; load_image {load_ms:.1} ms"
    )
}

/// Prints [`image_line`] when `GOMP_NVPTX_INFO` is on.
pub fn image(on: &Switches, line: impl FnOnce() -> String) {
    if on.info {
        report::error(&line());
    }
}

/// Prints `text`, a fact of device `ord` found after its open (e.g. the ways of waiting
/// it measured), when `GOMP_NVPTX_INFO` is on.
pub fn device(on: &Switches, ord: i32, text: &str) {
    if on.info {
        report::error(&format!("nvptx info: device {ord}: {text}"));
    }
}

/// Prints why the program runs on the host when `GOMP_NVPTX_INFO` is on.
pub fn fallback(on: &Switches, why: &str) {
    if on.info {
        report::error(&format!(
            "nvptx info: gomp-plugin-rs {}: no offloading to NVIDIA GPUs, the program runs on the host: {why}",
            env!("CARGO_PKG_VERSION")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_line() {
        let o = Opened {
            ord: 0,
            name: "NVIDIA H100 80GB HBM3",
            cc: (9, 0),
            sms: 132,
            driver: 13000,
            soft_stack: 131072,
            heap: None,
            pool: true,
        };
        let l = opened_line(
            &o,
            "libgomp 16",
            "JIT cache disabled (CUDA_CACHE_DISABLE=1)",
        );
        assert!(
            l.starts_with(
                "nvptx info: device 0: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs); gomp-plugin-rs "
            ),
            "{l}"
        );
        for part in [
            "for libgomp 16;",
            "CUDA driver 13.0;",
            "JIT cache disabled",
            "soft stack 131072 bytes/warp",
            "heap driver default (8 MiB)",
            "stream-ordered memory pool",
        ] {
            assert!(l.contains(part), "{part}: {l}");
        }
        let l = opened_line(
            &Opened {
                heap: Some(1 << 28),
                driver: 12040,
                ..o
            },
            "libgomp 14",
            "x",
        );
        assert!(
            l.contains("heap 268435456 bytes") && l.contains("CUDA driver 12.4"),
            "{l}"
        );
    }

    #[test]
    fn image() {
        assert_eq!(
            image_line(1, 0x1000, 41, 4, "linked-image cache hit", 0.94, 1.96),
            "nvptx info: device 1: image 0x1000: 41 PTX object(s), 4 kernel(s); \
             linked-image cache hit in 0.9 ms; load_image 2.0 ms"
        );
    }
}
