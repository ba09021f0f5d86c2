//! AMDGPU code objects (the `.hsaco` ELF files mkoffload embeds): parsing and the
//! checks the plugin can make without a GPU. [`CodeObject::parse`] reads the ELF
//! header, the target (`e_flags`) and the dynamic and static symbol tables, refusing
//! anything malformed with a clear error and never reading out of bounds, and the
//! kernel metadata notes ([`super::metadata`]);
//! [`CodeObject::check_kernels`] verifies that every kernel descriptor
//! (`<name>.kd`, 64 bytes) of a kernel libgomp names is well formed, and says which
//! kernels have none (the device stub of a reverse-offload region, `<fn>.nohost.N`,
//! which GCC lists in the kernel table but never compiles as a kernel). Pure; owned
//! data; thread-safe.

use super::mach;
use super::metadata::{self, KernelMeta};
use gomp_plugin::error::{Error, Result};

/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = 224;
/// `ELFOSABI_AMDGPU_HSA`.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// Size of a kernel descriptor (`amd_kernel_code_t` successor, code object v3+).
pub const KERNEL_DESCRIPTOR_SIZE: u64 = 64;

const SHT_PROGBITS: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_NOTE: u32 = 7;
const SHT_DYNSYM: u32 = 11;
const STT_OBJECT: u8 = 1;

/// One symbol of the code object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// Name.
    pub name: String,
    /// `st_value`.
    pub value: u64,
    /// `st_size`.
    pub size: u64,
    /// `ELF64_ST_TYPE(st_info)`.
    pub kind: u8,
}

/// A parsed code object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeObject {
    /// `e_flags`.
    pub flags: u32,
    /// The `EF_AMDGPU_MACH` value.
    pub mach: u32,
    /// The target name (e.g. "gfx90a", "gfx10-3-generic"), `None` for a MACH value this
    /// plugin does not know.
    pub target: Option<&'static str>,
    /// Generic-target version (`e_flags` bits 24-31), 0 for a specific processor.
    pub generic_version: u32,
    /// `EI_ABIVERSION` (code object version minus 2 for v4 and later).
    pub abi_version: u8,
    /// Symbols of `.dynsym` then `.symtab`.
    pub symbols: Vec<Symbol>,
    /// The kernels the metadata notes describe, in note order.
    pub kernel_meta: Vec<KernelMeta>,
    /// `(address, file offset, size)` of each section with file contents (PROGBITS).
    pub loaded: Vec<(u64, u64, u64)>,
}

fn bad(what: impl std::fmt::Display) -> Error {
    Error::invalid(format!("invalid gcn code object: {what}"))
}

fn slice<'a>(b: &'a [u8], off: u64, len: u64, what: &str) -> Result<&'a [u8]> {
    let end = off
        .checked_add(len)
        .ok_or_else(|| bad(format!("{what} overflows")))?;
    if end > b.len() as u64 {
        return Err(bad(format!(
            "{what} (bytes {off}..{end}) lies outside the {} byte image",
            b.len()
        )));
    }
    Ok(&b[off as usize..end as usize])
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or_default())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or_default())
}

struct Section {
    kind: u32,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
    entsize: u64,
}

impl CodeObject {
    /// Parses `b`; errors name what is wrong.
    pub fn parse(b: &[u8]) -> Result<CodeObject> {
        let (flags, m) = check_header(b)?;
        let sections = sections(b)?;
        let symbols = symbols(b, &sections)?;
        let mut kernel_meta = Vec::new();
        for s in sections.iter().filter(|s| s.kind == SHT_NOTE) {
            let sec = slice(b, s.offset, s.size, "note section")?;
            kernel_meta.extend(metadata::from_note_section(sec)?);
        }
        let loaded = sections
            .iter()
            .filter(|s| s.kind == SHT_PROGBITS && s.addr != 0)
            .map(|s| (s.addr, s.offset, s.size))
            .collect();
        Ok(CodeObject {
            flags,
            mach: m,
            target: mach::name(m),
            generic_version: flags >> mach::GENERIC_VERSION_SHIFT,
            abi_version: b[8],
            symbols,
            kernel_meta,
            loaded,
        })
    }

    /// The target name, or `unknown (EF_AMDGPU_MACH 0x..)`.
    pub fn target_name(&self) -> String {
        self.target
            .map(str::to_string)
            .unwrap_or_else(|| format!("unknown (EF_AMDGPU_MACH {:#x})", self.mach))
    }

    /// The kernel descriptor symbol of `kernel` (`<kernel>.kd`), if present.
    pub fn kernel_descriptor(&self, kernel: &str) -> Option<&Symbol> {
        let want = format!("{kernel}.kd");
        self.symbols.iter().find(|s| s.name == want)
    }

    /// The file bytes of `[addr, addr+len)` as laid out before loading (relocations not
    /// applied), if one section holds them all; `b` is the image parsed.
    pub fn file_bytes<'a>(&self, b: &'a [u8], addr: u64, len: u64) -> Option<&'a [u8]> {
        let &(start, off, size) = self.loaded.iter().find(|(a, _, n)| {
            addr >= *a
                && addr
                    .checked_add(len)
                    .zip(a.checked_add(*n))
                    .is_some_and(|(e, end)| e <= end)
        })?;
        slice(b, off + (addr - start), len, "section bytes")
            .ok()
            .filter(|_| size >= len)
    }

    /// The symbol called `name`, if any.
    pub fn symbol(&self, name: &str) -> Option<&Symbol> {
        self.symbols.iter().find(|s| s.name == name)
    }

    /// The metadata of `kernel` (its `.name`), if the notes describe it.
    pub fn metadata(&self, kernel: &str) -> Option<&KernelMeta> {
        self.kernel_meta.iter().find(|k| k.name == kernel)
    }

    /// Names of all kernels (symbols `<name>.kd`), in table order, without repeats.
    pub fn kernels(&self) -> Vec<&str> {
        let mut v: Vec<&str> = Vec::new();
        for s in &self.symbols {
            if let Some(n) = s.name.strip_suffix(".kd") {
                if s.kind == STT_OBJECT && !v.contains(&n) {
                    v.push(n);
                }
            }
        }
        v
    }

    /// Checks that the kernel descriptor of each of `names`, where it has one, is a
    /// 64-byte object; returns the names without a descriptor (they cannot be
    /// launched; GCC's plugin too loads such images and refuses only a launch).
    pub fn check_kernels<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<&'a str>> {
        let mut missing = Vec::new();
        for n in names {
            match self.kernel_descriptor(n) {
                None => missing.push(n),
                Some(s) if s.kind != STT_OBJECT || s.size != KERNEL_DESCRIPTOR_SIZE => {
                    return Err(bad(format!(
                        "kernel descriptor '{n}.kd' is not a {KERNEL_DESCRIPTOR_SIZE}-byte object (type {}, size {})",
                        s.kind, s.size
                    )))
                }
                Some(_) => {}
            }
        }
        Ok(missing)
    }
}

/// Checks the ELF header of an AMDGPU HSA code object; returns `e_flags` and its
/// `EF_AMDGPU_MACH` part.
fn check_header(b: &[u8]) -> Result<(u32, u32)> {
    if b.len() < 64 {
        return Err(bad(format!(
            "{} bytes, shorter than an ELF64 header",
            b.len()
        )));
    }
    if &b[..4] != b"\x7fELF" {
        return Err(bad("not an ELF file"));
    }
    if b[4] != 2 {
        return Err(bad(format!("ELF class {} (want ELF64)", b[4])));
    }
    if b[5] != 1 {
        return Err(bad("not little-endian"));
    }
    let machine = u16_at(b, 18);
    if machine != EM_AMDGPU {
        return Err(bad(format!(
            "e_machine {machine} (want EM_AMDGPU, {EM_AMDGPU})"
        )));
    }
    if b[7] != ELFOSABI_AMDGPU_HSA {
        return Err(bad(format!("OS ABI {} (want AMDGPU HSA, 64)", b[7])));
    }
    let flags = u32_at(b, 48);
    let m = flags & mach::EF_AMDGPU_MACH;
    if m == 0 {
        return Err(bad("e_flags names no GPU target (EF_AMDGPU_MACH 0)"));
    }
    Ok((flags, m))
}

/// The section headers of `b` (header already checked).
fn sections(b: &[u8]) -> Result<Vec<Section>> {
    let shoff = u64_at(b, 40);
    let shentsize = u16_at(b, 58) as u64;
    let shnum = u16_at(b, 60) as u64;
    if shnum > 0 && shentsize != 64 {
        return Err(bad(format!("section header size {shentsize} (want 64)")));
    }
    let table = slice(b, shoff, shnum * 64, "section header table")?;
    Ok(table
        .chunks_exact(64)
        .map(|s| Section {
            kind: u32_at(s, 4),
            addr: u64_at(s, 16),
            offset: u64_at(s, 24),
            size: u64_at(s, 32),
            link: u32_at(s, 40),
            entsize: u64_at(s, 56),
        })
        .collect())
}

/// The symbols of every dynamic and static symbol table, in that order (the null
/// symbol of each left out).
fn symbols(b: &[u8], sections: &[Section]) -> Result<Vec<Symbol>> {
    let mut symbols = Vec::new();
    for want in [SHT_DYNSYM, SHT_SYMTAB] {
        for s in sections.iter().filter(|s| s.kind == want) {
            if s.entsize != 24 {
                return Err(bad(format!("symbol entry size {} (want 24)", s.entsize)));
            }
            let syms = slice(b, s.offset, s.size, "symbol table")?;
            let strs = sections
                .get(s.link as usize)
                .ok_or_else(|| bad(format!("symbol table links to section {}", s.link)))?;
            let strs = slice(b, strs.offset, strs.size, "string table")?;
            for e in syms.chunks_exact(24).skip(1) {
                let at = u32_at(e, 0) as usize;
                let name = strs
                    .get(at..)
                    .and_then(|t| t.split(|&c| c == 0).next())
                    .filter(|_| at < strs.len())
                    .ok_or_else(|| bad(format!("symbol name offset {at} out of range")))?;
                symbols.push(Symbol {
                    name: String::from_utf8_lossy(name).into_owned(),
                    kind: e[4] & 0xf,
                    value: u64_at(e, 8),
                    size: u64_at(e, 16),
                });
            }
        }
    }
    Ok(symbols)
}
