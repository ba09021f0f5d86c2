//! Reads the symbol-version *definitions* (`.gnu.version_d`) of an ELF64 little-endian
//! shared object from its bytes, with the `object` crate's ELF reader. Used to list
//! libgomp's version nodes; bounds-checked, so a truncated or foreign file gives `None`,
//! never a panic.

use object::elf::FileHeader64;
use object::read::elf::FileHeader as _;
use object::LittleEndian;

/// The names of all version nodes defined by the ELF image `elf` (file bytes), in file
/// order, including the file's own base node (each definition's first name). `None` if
/// `elf` is not a well-formed ELF64 LSB object or has no version definitions.
pub fn version_nodes(elf: &[u8]) -> Option<Vec<String>> {
    let header = FileHeader64::<LittleEndian>::parse(elf).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, elf).ok()?;
    let (mut defs, strtab) = sections.gnu_verdef(endian, elf).ok()??;
    let strings = sections.strings(endian, elf, strtab).ok()?;
    let mut names = Vec::new();
    while let Some((_, mut aux)) = defs.next().ok()? {
        let name = aux.next().ok()??.name(endian, strings).ok()?;
        names.push(String::from_utf8_lossy(name).into_owned());
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
        assert_eq!(nodes[0], "libgomp.so.1", "the base node first: {nodes:?}");
        assert!(nodes.iter().any(|n| n == "GOMP_1.0"), "{nodes:?}");
        assert!(nodes.iter().any(|n| n == "GOMP_PLUGIN_1.0"), "{nodes:?}");
        // The same list, in the same order, as binutils' readelf reads it (scripts/setup
        // installs binutils): each definition's first name.
        let out = std::process::Command::new("readelf")
            .args(["-V", "-W", path])
            .output()
            .expect("run readelf");
        let text = String::from_utf8_lossy(&out.stdout);
        let defs = text
            .split("Version definition section")
            .nth(1)
            .expect("readelf lists the definitions");
        let defs = defs.split("Version needs section").next().unwrap_or(defs);
        let readelf: Vec<&str> = defs
            .lines()
            .filter(|l| l.contains("Flags:") && l.contains("Name:"))
            .filter_map(|l| l.split("Name:").nth(1))
            .map(str::trim)
            .collect();
        assert_eq!(nodes, readelf);
        // Truncations anywhere never panic.
        for cut in [0, 64, 1000, bytes.len() / 2, bytes.len() - 1] {
            let _ = version_nodes(&bytes[..cut]);
        }
    }
}
