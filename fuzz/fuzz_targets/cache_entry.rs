//! A linked-image cache entry file as read back from disk (header, payload, XXH64
//! checksum by xxhash-rust) on arbitrary bytes: never panics; what it accepts is exactly
//! the entry `encode` writes for that kind, key and payload.
#![no_main]
use gomp_plugin_nvptx::cache::{entry, Key};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The key and kind a reader asks for: the file's own (so that a well-formed input
    // can be accepted) or another's.
    let mut key = Key([0; 32]);
    if let Some(k) = data.get(16..48) {
        key.0.copy_from_slice(k);
    }
    for kind in ["cubin", "launch-shape"] {
        if let Ok(payload) = entry::decode(data, kind, &key) {
            assert_eq!(entry::encode(kind, &key, payload), data);
        }
    }
    // A well-formed entry of these bytes decodes to them; any flipped byte does not.
    let e = entry::encode("cubin", &key, data);
    assert_eq!(entry::decode(&e, "cubin", &key), Ok(data));
    if !data.is_empty() {
        let mut bad = e.clone();
        let at = entry::HEADER + usize::from(data[0]) % data.len();
        bad[at] ^= 1;
        assert!(entry::decode(&bad, "cubin", &key).is_err());
    }
});
