//! The GPU target named by an AMDGPU code object's `e_flags`: the `EF_AMDGPU_MACH`
//! field (bits 0-7), the generic-target version (bits 24-31) and the xnack/sramecc
//! feature settings (code object v4+). Values from LLVM's `BinaryFormat/ELF.h` (also
//! ROCm's `amd_hsa_elf.h`); the ones GCC 16 can produce were checked against real
//! images (tests/fixtures/gcn). Pure data; thread-safe.

/// `EF_AMDGPU_MACH`: the processor field mask.
pub const EF_AMDGPU_MACH: u32 = 0xff;
/// Shift of the generic-target version (`EF_AMDGPU_GENERIC_VERSION`).
pub const GENERIC_VERSION_SHIFT: u32 = 24;

/// The target name of a MACH value (e.g. 0x3f -> "gfx90a"), `None` if unknown.
pub fn name(mach: u32) -> Option<&'static str> {
    Some(match mach {
        0x020 => "gfx600",
        0x021 => "gfx601",
        0x022 => "gfx700",
        0x023 => "gfx701",
        0x024 => "gfx702",
        0x025 => "gfx703",
        0x026 => "gfx704",
        0x028 => "gfx801",
        0x029 => "gfx802",
        0x02a => "gfx803",
        0x02b => "gfx810",
        0x02c => "gfx900",
        0x02d => "gfx902",
        0x02e => "gfx904",
        0x02f => "gfx906",
        0x030 => "gfx908",
        0x031 => "gfx909",
        0x032 => "gfx90c",
        0x033 => "gfx1010",
        0x034 => "gfx1011",
        0x035 => "gfx1012",
        0x036 => "gfx1030",
        0x037 => "gfx1031",
        0x038 => "gfx1032",
        0x039 => "gfx1033",
        0x03a => "gfx602",
        0x03b => "gfx705",
        0x03c => "gfx805",
        0x03d => "gfx1035",
        0x03e => "gfx1034",
        0x03f => "gfx90a",
        0x040 => "gfx940",
        0x041 => "gfx1100",
        0x042 => "gfx1013",
        0x043 => "gfx1150",
        0x044 => "gfx1103",
        0x045 => "gfx1036",
        0x046 => "gfx1101",
        0x047 => "gfx1102",
        0x048 => "gfx1200",
        0x04a => "gfx1151",
        0x04b => "gfx941",
        0x04c => "gfx942",
        0x04e => "gfx1201",
        0x04f => "gfx950",
        0x051 => "gfx9-generic",
        0x052 => "gfx10-1-generic",
        0x053 => "gfx10-3-generic",
        0x054 => "gfx11-generic",
        0x055 => "gfx1152",
        0x059 => "gfx12-generic",
        0x05f => "gfx9-4-generic",
        _ => return None,
    })
}

/// Whether a MACH value is a generic target (runs on a family of processors).
pub fn is_generic(mach: u32) -> bool {
    name(mach).is_some_and(|n| n.ends_with("-generic"))
}
