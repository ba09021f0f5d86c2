//! The interop `prefer_type` decoder on arbitrary bytes: never panics and only ever
//! picks a runtime the plugin serves.
#![no_main]
use gomp_plugin_nvptx::interop::{choose_fr, FR_CUDA, FR_CUDA_DRIVER, FR_HIP};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let fr = choose_fr(data);
    assert!([FR_CUDA, FR_CUDA_DRIVER, FR_HIP].contains(&fr));
});
