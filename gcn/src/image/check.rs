//! Reading and checking a gcn image as libgomp passes it to `load_image`: mkoffload's
//! descriptor ([`super::descriptor`]), the code object ([`super::code_object`]), its
//! kernel descriptors and its target ([`super::mach`]). Pure (reads the caller's
//! memory only); thread-safe.

use super::{code_object, descriptor, mach};
use gomp_plugin::error::{Error, Result};
use std::ffi::c_void;

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

/// Unit tests of the image reader (this file's [`check_image`] and the descriptor, code
/// object, target and metadata readers it calls) on real code objects built by GCC 16's
/// amdgcn offload compiler (tests/fixtures/gcn/README says how), on corrupted copies of
/// them, and on random truncations and byte flips (nothing may panic).
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use code_object::CodeObject;
    use descriptor::{RawDescriptor, RawImage, RawKernel};
    use std::ffi::CString;

    fn fixture(target: &str) -> Vec<u8> {
        fixture_file(&format!("vadd-{target}.hsaco.xz"))
    }

    /// The decompressed bytes of tests/fixtures/gcn/`file`.
    pub fn fixture_file(file: &str) -> Vec<u8> {
        let path = format!(
            "{}/../tests/fixtures/gcn/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let out = std::process::Command::new("xz")
            .args(["-dc", &path])
            .output()
            .expect("run xz (scripts/setup installs xz-utils)");
        assert!(out.status.success(), "xz -dc {path} failed");
        out.stdout
    }

    const KERNELS: [&str; 3] = ["_init_array", "_fini_array", "main._omp_fn.0"];

    #[test]
    fn real_images_parse_with_target_and_kernels() {
        for (t, flags, generic) in [
            ("gfx90a", 0x53f, 0),
            ("gfx908", 0x630, 0),
            ("gfx10-3-generic", 0x100_0053, 1),
        ] {
            let b = fixture(t);
            assert!(
                b.len() > 100_000 && b.len() < 2_000_000,
                "{t}: {} bytes",
                b.len()
            );
            let co = CodeObject::parse(&b).unwrap();
            assert_eq!(co.target, Some(t));
            assert_eq!(co.flags, flags);
            assert_eq!(co.generic_version, generic);
            assert_eq!(mach::is_generic(co.mach), generic != 0);
            let mut k = co.kernels();
            k.sort_unstable();
            assert_eq!(k, ["_fini_array", "_init_array", "main._omp_fn.0"], "{t}");
            assert!(co.check_kernels(KERNELS).unwrap().is_empty());
            let kd = co.kernel_descriptor("main._omp_fn.0").unwrap();
            assert_eq!(kd.size, 64);
        }
    }

    #[test]
    fn kernels_without_descriptor_are_named() {
        let co = CodeObject::parse(&fixture("gfx90a")).unwrap();
        assert_eq!(
            co.check_kernels(["main._omp_fn.0", "main._omp_fn.1.nohost.0"])
                .unwrap(),
            ["main._omp_fn.1.nohost.0"],
            "loaded, not launchable"
        );
    }

    fn err(b: &[u8]) -> String {
        CodeObject::parse(b).unwrap_err().to_string()
    }

    #[test]
    fn corrupt_headers_are_rejected_clearly() {
        let good = fixture("gfx90a");
        let mut b = good.clone();
        b[0] = b'X';
        assert!(err(&b).contains("not an ELF file"));
        let mut b = good.clone();
        b[4] = 1;
        assert!(err(&b).contains("want ELF64"));
        let mut b = good.clone();
        b[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
        assert!(err(&b).contains("e_machine 62 (want EM_AMDGPU, 224)"));
        let mut b = good.clone();
        b[7] = 0;
        assert!(err(&b).contains("OS ABI 0"));
        let mut b = good.clone();
        b[48] = 0; // MACH 0
        assert!(err(&b).contains("names no GPU target"));
        let mut b = good.clone();
        b[48] = 0x01; // a MACH value nobody assigned: parsed, named unknown
        let co = CodeObject::parse(&b).unwrap();
        assert_eq!(co.target, None);
        assert_eq!(co.target_name(), "unknown (EF_AMDGPU_MACH 0x1)");
        let mut b = good.clone();
        b[40..48].copy_from_slice(&u64::MAX.to_le_bytes()); // e_shoff
        assert!(
            err(&b).contains(&format!(
                "section header table ({} entries at offset {})",
                u16::from_le_bytes([b[60], b[61]]),
                u64::MAX
            )),
            "{}",
            err(&b)
        );
        let mut b = good.clone();
        b[58] = 63; // e_shentsize
        assert!(
            err(&b).contains("section header table") && err(&b).contains("entry size"),
            "{}",
            err(&b)
        );
        let mut b = good.clone();
        b[5] = 2; // ELFDATA2MSB
        assert!(err(&b).contains("not little-endian"));
        let mut b = good.clone();
        b[6] = 2; // EI_VERSION
        assert!(err(&b).contains("ELF version 2 (want 1)"), "{}", err(&b));
        assert!(err(&good[..10]).contains("shorter than an ELF64 header"));
    }

    #[test]
    fn truncated_images_are_rejected() {
        let good = fixture("gfx908");
        for n in [64, 4096, good.len() / 2, good.len() - 1] {
            let e = err(&good[..n]);
            assert!(
                e.starts_with("invalid gcn code object: section header table")
                    && e.ends_with(&format!("(in a {n}-byte image)")),
                "{n}: {e}"
            );
        }
    }

    #[test]
    fn random_truncation_and_flips_never_panic() {
        let good = fixture("gfx10-3-generic");
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..300 {
            let n = (next() as usize) % (good.len() + 1);
            let _ = CodeObject::parse(&good[..n]);
            let mut b = good.clone();
            for _ in 0..8 {
                // Flip bytes in the headers and tables, where parsing looks.
                let at = if next() % 2 == 0 {
                    (next() as usize) % 64
                } else {
                    (next() as usize) % b.len()
                };
                b[at] ^= next() as u8;
            }
            let _ = CodeObject::parse(&b).map(|co| co.check_kernels(KERNELS));
        }
    }

    #[test]
    fn descriptor_is_read_and_checked_like_libgomp_passes_it() {
        let img = fixture("gfx90a");
        let names: Vec<CString> = KERNELS.iter().map(|k| CString::new(*k).unwrap()).collect();
        let kernels: Vec<RawKernel> = names
            .iter()
            .map(|n| RawKernel {
                name: n.as_ptr(),
                oacc_dims: [0; 3],
                sgpr_count: 62,
                vgpr_count: 48,
            })
            .collect();
        let raw_img = RawImage {
            size: img.len(),
            image: img.as_ptr().cast(),
        };
        let desc = RawDescriptor {
            gcn_image: &raw_img,
            kernel_count: 3,
            kernel_infos: kernels.as_ptr(),
            ind_func_count: 0,
            global_variable_count: 0,
        };
        let p = (&desc as *const RawDescriptor).cast::<c_void>();
        // SAFETY: `desc` and everything it points to live until the end of the test.
        let d = unsafe { descriptor::read(p) }.unwrap();
        assert_eq!(d.image, img);
        assert_eq!(d.kernels[2].name, "main._omp_fn.0");
        assert_eq!(d.kernels[2].vgpr_count, 48);
        // SAFETY: as above.
        let (_, co) = unsafe { check_image(p, Some("gfx90a")) }.unwrap();
        assert_eq!(co.target, Some("gfx90a"));
        // SAFETY: as above.
        let e = unsafe { check_image(p, Some("gfx1100")) }
            .unwrap_err()
            .to_string();
        assert_eq!(e, "gcn image is for gfx90a, the device is gfx1100");
        // SAFETY: as above.
        let e = gomp_plugin::device::check_image_version(
            "GCN",
            gomp_plugin::libgomp::abi::VERSION_GCN,
            (3 << 16) | 4,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "Offload data incompatible with GCN plugin (expected 3, received 4)"
        );
        // SAFETY: NULL is accepted and refused.
        assert!(unsafe { descriptor::read(std::ptr::null()) }.is_err());
        let bad = RawDescriptor {
            kernel_infos: std::ptr::null(),
            ..desc
        };
        // SAFETY: `bad` lives until the end of the test.
        let e = unsafe { descriptor::read((&bad as *const RawDescriptor).cast()) }
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad kernel table"), "{e}");
    }

    #[test]
    fn metadata_notes_of_real_images() {
        for t in ["gfx90a", "gfx908", "gfx10-3-generic"] {
            let co = CodeObject::parse(&fixture(t)).unwrap();
            let mut names: Vec<&str> = co.kernel_meta.iter().map(|k| k.name.as_str()).collect();
            names.sort_unstable();
            assert_eq!(
                names,
                ["_fini_array", "_init_array", "main._omp_fn.0"],
                "{t}"
            );
            let m = co.metadata("main._omp_fn.0").unwrap();
            assert_eq!(m.symbol, "main._omp_fn.0.kd");
            assert_eq!(
                (m.kernarg_segment_size, m.kernarg_segment_align),
                (8, 8),
                "{t}"
            );
            assert_eq!(m.private_segment_fixed_size, 0, "{t}");
            assert!(m.wavefront_size == 32 || m.wavefront_size == 64, "{t}");
            assert_eq!(co.metadata("_init_array").unwrap().kernarg_segment_size, 0);
        }
        let m = CodeObject::parse(&fixture("gfx90a")).unwrap();
        let m = m.metadata("main._omp_fn.0").unwrap().clone();
        assert_eq!(m.group_segment_fixed_size, 0x600);
        assert_eq!((m.wavefront_size, m.max_flat_workgroup_size), (64, 1024));
        assert_eq!((m.sgpr_count, m.vgpr_count), (62, 48));
    }

    #[test]
    fn corrupt_metadata_note_is_rejected() {
        let good = fixture("gfx90a");
        // The first note's description size, made larger than the section.
        let at = good
            .windows(7)
            .position(|w| w == b"AMDGPU\0")
            .expect("note owner")
            - 12;
        let mut b = good.clone();
        b[at + 4..at + 8].copy_from_slice(&0x10000u32.to_le_bytes());
        assert!(err(&b).contains("metadata note"), "{}", err(&b));
        // The msgpack map itself, broken: a reserved byte in place of its first byte.
        let mut b = good.clone();
        b[at + 20] = 0xc1;
        assert!(err(&b).contains("msgpack"), "{}", err(&b));
    }
}
