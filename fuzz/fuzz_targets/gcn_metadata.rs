//! The AMD code object's metadata note (a MessagePack map) on arbitrary bytes: never
//! panics and never recurses past the depth bound; what it accepts is a map.
#![no_main]
use gomp_plugin_gcn::image::metadata;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if metadata::kernels(data).is_ok() {
        // fixmap, map 16, map 32
        assert!(
            matches!(data[0], 0x80..=0x8f | 0xde | 0xdf),
            "accepted a note that is not a map: {:#x}",
            data[0]
        );
    }
});
