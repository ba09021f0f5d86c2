//! AMD code object parsing (ELF header, sections, symbols, notes, the metadata note's
//! MessagePack) on arbitrary bytes, seeded with GCC's real code objects
//! (scripts/fuzz-smoke puts tests/fixtures/gcn's into the corpus): never panics, and
//! what it accepts passes the header checks (an AMDGPU HSA ELF64 object with a target).
#![no_main]
use gomp_plugin_gcn::image::code_object::{CodeObject, ELFOSABI_AMDGPU_HSA, EM_AMDGPU};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(co) = CodeObject::parse(data) else {
        return;
    };
    assert_eq!(
        &data[..6],
        b"\x7fELF\x02\x01",
        "accepted a non-ELF64-LSB file"
    );
    assert_eq!(u16::from_le_bytes([data[18], data[19]]), EM_AMDGPU);
    assert_eq!(data[7], ELFOSABI_AMDGPU_HSA);
    assert_ne!(co.mach, 0, "accepted a code object without a target");
    // What the plugin does with an accepted object next (check_image, Image::load,
    // the variable table), on arbitrary section ranges: no panic.
    let _ = co.check_kernels(co.kernels());
    let _ = co.target_name();
    for &(addr, _, size) in &co.loaded {
        let _ = co.file_bytes(data, addr, size);
        let _ = co.file_bytes(data, addr.wrapping_add(size / 2), size);
    }
    for k in &co.kernel_meta {
        let _ = co.metadata(&k.name);
    }
});
