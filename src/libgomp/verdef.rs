//! Reads the symbol-version *definitions* (`.gnu.version_d`) of an ELF64 little-endian
//! shared object from its bytes. Used to list libgomp's version nodes; pure and
//! bounds-checked, so a truncated or foreign file gives an error, never a panic.

const SHT_GNU_VERDEF: u32 = 0x6fff_fffd;

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], o: usize) -> Option<usize> {
    usize::try_from(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?)).ok()
}

/// The names of all version nodes defined by the ELF image `elf` (file bytes), in file
/// order, including the file's own base node. `None` if `elf` is not a well-formed
/// ELF64 LSB object or has no version definitions.
pub fn version_nodes(elf: &[u8]) -> Option<Vec<String>> {
    if elf.get(0..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let shoff = u64_at(elf, 0x28)?;
    let shentsize = usize::from(u16_at(elf, 0x3a)?);
    let shnum = usize::from(u16_at(elf, 0x3c)?);
    let section = |i: usize| -> Option<(u32, usize, usize, u32, u32)> {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        // (type, offset, size, link, info)
        Some((
            u32_at(elf, h + 4)?,
            u64_at(elf, h + 0x18)?,
            u64_at(elf, h + 0x20)?,
            u32_at(elf, h + 0x28)?,
            u32_at(elf, h + 0x2c)?,
        ))
    };
    let (_, off, _, link, count) = (0..shnum)
        .filter_map(section)
        .find(|s| s.0 == SHT_GNU_VERDEF)?;
    let (_, stroff, strsize, _, _) = section(link as usize)?;
    let strtab = elf.get(stroff..stroff.checked_add(strsize)?)?;
    let mut names = Vec::new();
    let mut at = off;
    for _ in 0..count {
        // Elf64_Verdef: vd_version u16, vd_flags u16, vd_ndx u16, vd_cnt u16,
        // vd_hash u32, vd_aux u32, vd_next u32; first Verdaux: vda_name u32.
        let aux = at.checked_add(u32_at(elf, at + 12)? as usize)?;
        let name_off = u32_at(elf, aux)? as usize;
        let rest = strtab.get(name_off..)?;
        let end = rest.iter().position(|&c| c == 0)?;
        names.push(String::from_utf8_lossy(&rest[..end]).into_owned());
        let next = u32_at(elf, at + 16)? as usize;
        if next == 0 {
            break;
        }
        at = at.checked_add(next)?;
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_garbage() {
        assert_eq!(version_nodes(b""), None);
        assert_eq!(version_nodes(b"\x7fELF\x02\x01garbage"), None);
        assert_eq!(version_nodes(&[0u8; 4096]), None);
    }

    #[test]
    fn reads_system_libgomp() {
        // Any libgomp.so.1 on this machine defines GOMP_1.0 and GOMP_PLUGIN_1.0.
        let path = "/usr/lib/x86_64-linux-gnu/libgomp.so.1";
        // Debian's gcc depends on libgomp1, so the build machine has one.
        let bytes = std::fs::read(path).expect("the build machine's libgomp.so.1");
        let nodes = version_nodes(&bytes).expect("libgomp has version definitions");
        assert!(nodes.iter().any(|n| n == "GOMP_1.0"), "{nodes:?}");
        assert!(nodes.iter().any(|n| n == "GOMP_PLUGIN_1.0"), "{nodes:?}");
        // Truncations anywhere never panic.
        for cut in [0, 64, 1000, bytes.len() / 2, bytes.len() - 1] {
            let _ = version_nodes(&bytes[..cut]);
        }
    }
}
