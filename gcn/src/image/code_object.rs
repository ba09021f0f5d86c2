//! AMDGPU code objects (the `.hsaco` ELF files mkoffload embeds): parsing and the
//! checks the plugin can make without a GPU. [`CodeObject::parse`] reads, with the
//! `object` crate's ELF reader, the ELF header, the target (`e_flags`), the dynamic and
//! static symbol tables and the notes, refusing anything malformed with an error that
//! says which part is wrong, and the kernel metadata notes ([`super::metadata`]);
//! [`CodeObject::check_kernels`] verifies that every kernel descriptor
//! (`<name>.kd`, 64 bytes) of a kernel libgomp names is well formed, and says which
//! kernels have none (the device stub of a reverse-offload region, `<fn>.nohost.N`,
//! which GCC lists in the kernel table but never compiles as a kernel). Pure; owned
//! data; thread-safe.

use super::mach;
use super::metadata::{self, KernelMeta};
use gomp_plugin::error::{Error, Result};
use object::elf::{self, FileHeader64};
use object::read::elf::{FileHeader as _, SectionHeader as _, SectionTable, Sym as _, SymbolTable};
use object::LittleEndian;

/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = elf::EM_AMDGPU.0;
/// `ELFOSABI_AMDGPU_HSA`.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// Size of a kernel descriptor (`amd_kernel_code_t` successor, code object v3+).
pub const KERNEL_DESCRIPTOR_SIZE: u64 = 64;

const STT_OBJECT: u8 = elf::STT_OBJECT.0;
const LE: LittleEndian = LittleEndian;

type Sections<'a> = SectionTable<'a, FileHeader64<LittleEndian>, &'a [u8]>;

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

/// An error of the ELF reader about `what` in an image of `len` bytes.
fn elf_error(what: &str, len: usize) -> impl FnOnce(object::read::Error) -> Error + '_ {
    move |e| bad(format!("{what}: {e} (in a {len}-byte image)"))
}

/// The bytes `[off, off+len)` of `b`, if they lie within it.
fn slice(b: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(off).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    b.get(start..end)
}

impl CodeObject {
    /// Parses `b`; errors name what is wrong.
    pub fn parse(b: &[u8]) -> Result<CodeObject> {
        let header = check_header(b)?;
        let flags = header.e_flags(LE).0;
        let m = flags & mach::EF_AMDGPU_MACH;
        let sections = header.sections(LE, b).map_err(elf_error(
            &format!(
                "section header table ({} entries at offset {})",
                header.e_shnum(LE),
                header.e_shoff(LE)
            ),
            b.len(),
        ))?;
        let symbols = symbols(b, &sections)?;
        let mut kernel_meta = Vec::new();
        for (i, s) in sections.enumerate() {
            let what = || format!("metadata note: section {}", i.0);
            let Some(mut notes) = s
                .notes(LE, b)
                .map_err(|e| bad(format!("{}: {e}", what())))?
            else {
                continue;
            };
            while let Some(note) = notes.next().map_err(|e| bad(format!("{}: {e}", what())))? {
                if note.name() == b"AMDGPU" && note.n_type(LE).0 == metadata::NT_AMDGPU_METADATA {
                    kernel_meta.extend(metadata::kernels(note.desc())?);
                }
            }
        }
        let loaded = sections
            .iter()
            .filter(|s| s.sh_type(LE) == elf::SHT_PROGBITS && s.sh_addr(LE) != 0)
            .map(|s| (s.sh_addr(LE), s.sh_offset(LE), s.sh_size(LE)))
            .collect();
        Ok(CodeObject {
            flags,
            mach: m,
            target: mach::name(m),
            generic_version: flags >> mach::GENERIC_VERSION_SHIFT,
            abi_version: header.e_ident().abi_version,
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
        slice(b, off.checked_add(addr - start)?, len).filter(|_| size >= len)
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

/// The ELF header of an AMDGPU HSA code object, checked: ELF64, little-endian, for
/// `EM_AMDGPU` and the HSA OS ABI, with a GPU target in `e_flags`.
fn check_header(b: &[u8]) -> Result<&FileHeader64<LittleEndian>> {
    let header = FileHeader64::<LittleEndian>::parse(b).map_err(|e| {
        // What the reader refuses, said in the words of the identification bytes.
        bad(match b {
            _ if b.len() < std::mem::size_of::<FileHeader64<LittleEndian>>() => {
                format!("{} bytes, shorter than an ELF64 header", b.len())
            }
            [m0, m1, m2, m3, ..] if [*m0, *m1, *m2, *m3] != elf::ELFMAG => {
                "not an ELF file".to_string()
            }
            [_, _, _, _, class, ..] if *class != elf::ELFCLASS64.0 => {
                format!("ELF class {class} (want ELF64)")
            }
            [_, _, _, _, _, _, version, ..] if *version != elf::EV_CURRENT.0 => {
                format!("ELF version {version} (want 1)")
            }
            _ => format!("ELF header: {e}"),
        })
    })?;
    if header.endian().is_err() {
        return Err(bad("not little-endian"));
    }
    let machine = header.e_machine(LE).0;
    if machine != EM_AMDGPU {
        return Err(bad(format!(
            "e_machine {machine} (want EM_AMDGPU, {EM_AMDGPU})"
        )));
    }
    let os_abi = header.e_ident().os_abi.0;
    if os_abi != ELFOSABI_AMDGPU_HSA {
        return Err(bad(format!("OS ABI {os_abi} (want AMDGPU HSA, 64)")));
    }
    if header.e_flags(LE).0 & mach::EF_AMDGPU_MACH == 0 {
        return Err(bad("e_flags names no GPU target (EF_AMDGPU_MACH 0)"));
    }
    Ok(header)
}

/// The symbols of every dynamic and static symbol table, in that order (the null
/// symbol of each left out).
fn symbols(b: &[u8], sections: &Sections<'_>) -> Result<Vec<Symbol>> {
    let mut symbols = Vec::new();
    for want in [elf::SHT_DYNSYM, elf::SHT_SYMTAB] {
        for (i, s) in sections.enumerate().filter(|(_, s)| s.sh_type(LE) == want) {
            let table = SymbolTable::parse(LE, b, sections, i, s).map_err(elf_error(
                &format!("symbol table (section {})", i.0),
                b.len(),
            ))?;
            for (n, sym) in table.enumerate().skip(1) {
                let name = sym.name(LE, table.strings()).map_err(|e| {
                    bad(format!(
                        "symbol {} of section {}: {e} (name offset {})",
                        n.0,
                        i.0,
                        sym.st_name(LE)
                    ))
                })?;
                symbols.push(Symbol {
                    name: String::from_utf8_lossy(name).into_owned(),
                    kind: sym.st_type().0,
                    value: sym.st_value(LE),
                    size: sym.st_size(LE),
                });
            }
        }
    }
    Ok(symbols)
}
