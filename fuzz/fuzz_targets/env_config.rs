//! Environment-variable parsing on arbitrary values: never panics, always yields
//! settings within their documented bounds.
#![no_main]
use gomp_plugin::settings::ProcessSettings;
use gomp_plugin_nvptx::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parts: Vec<&str> = text.splitn(4, '\n').collect();
    let get = |k: &str| {
        let i = match k {
            "GOMP_NVPTX_JIT" => 0,
            "GOMP_NVPTX_LOWLAT_POOL" => 1,
            "GOMP_NVPTX_SOFT_STACK_SIZE" => 2,
            _ => 3,
        };
        parts.get(i).map(|s| s.to_string())
    };
    let c = Config::from_lookup(get, |_| {});
    assert!(c.jit_opt_level.is_none_or(|l| l <= 4));
    assert!(c.lowlat_pool <= 1 << 20);
    assert!(c.soft_stack >= 1024 && c.soft_stack % 16 == 0);
    let s = c.staging;
    assert!((1..=64).contains(&s.threads) && (2..=16).contains(&s.buffers));
    assert!(s.chunk % 4096 == 0 && ((64 << 10)..=(256 << 20)).contains(&s.chunk));
    assert!(s.threads * s.buffers * s.chunk <= 4 << 30);
    assert!(c.device_cache <= 1 << 40 && c.pinned_cache <= 1 << 40);
    if let gomp_plugin_nvptx::image::link_cache::Setting::On { limit, .. } = c.link_cache {
        assert!((1..=1 << 40).contains(&limit));
    }
});
