//! A gcn image: reading and checking it as libgomp passes it to `load_image`
//! ([`check`], over mkoffload's [`descriptor`], the [`code_object`], its target
//! ([`mach`]) and kernel metadata ([`metadata`], MessagePack by `rmpv`); pure), and, here, the
//! image loaded on one device: the HSA code object reader over the image bytes,
//! the executable made from it (created, the code object loaded for the agent, frozen,
//! validated), its kernels, their constructor and destructor kernels ([`cdtors`], run
//! by the open device through its launcher) and the address table for libgomp
//! ([`address_table`]).
//!
//! Ownership: an [`Image`] belongs to its device's image list, from `load_image` to
//! `unload_image` (or `fini_device`); it owns the executable, the reader and the bytes
//! the reader reads (kept until the reader is destroyed, as the HSA spec requires),
//! and the module's heap. The kernel records are shared (`Arc`) with the framework's
//! live set, which checks the handles libgomp passes back (their addresses).
//! Thread-safety: immutable after loading; `Send + Sync` like the HSA owners it holds
//! (`crate::hsa::safe::executable`).
//!
//! **Unverified on hardware**: the call sequence follows the HSA 1.1 specification
//! (`hsa_code_object_reader_create_from_memory`, `hsa_executable_create_alt`,
//! `hsa_executable_load_agent_code_object`, `hsa_executable_freeze`,
//! `hsa_executable_validate`, `hsa_executable_get_symbol_by_name`) and was run only
//! against the stand-in runtime of tests/fallback/stub_libhsa.c.

pub mod address_table;
pub mod cdtors;
pub mod check;
pub mod code_object;
pub mod descriptor;
pub mod mach;
pub mod metadata;

pub use check::check_image;

use self::address_table::{ICVS_SYMBOL, VAR_ENTRY, VAR_TABLE_SYMBOL};
use crate::hsa::safe::executable::{CodeObjectReader, Executable};
use crate::hsa::safe::memory::Allocation;
use crate::hsa::sys::*;
use crate::hsa::table::Runtime;
use code_object::CodeObject;
use descriptor::Descriptor;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::abi::AddrPair;
use metadata::KernelMeta;
use std::sync::Arc;

/// A kernel of a loaded image (the backend's `gomp_plugin::Device::Kernel`); its
/// address is the handle in libgomp's table. Usable while its image is loaded.
#[derive(Debug)]
pub struct Kernel {
    /// Name, e.g. `main._omp_fn.0`.
    pub name: String,
    /// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT` of `<name>.kd`: what an AQL dispatch
    /// packet's `kernel_object` takes; 0 when the code object has no descriptor for
    /// it (a reverse-offload region's device stub: never launched).
    pub object: u64,
    /// The code object's metadata for it (kernarg size, LDS, ...), if present.
    pub meta: Option<KernelMeta>,
    /// `vgpr_count` from mkoffload's kernel table (caps threads per team).
    pub vgprs: i32,
    /// `oacc_dims` from mkoffload's kernel table: the compile-time OpenACC gang,
    /// worker and vector counts (0: not fixed at compile time).
    pub oacc_dims: [i32; 3],
    /// Device address of its module's heap (`struct heap`).
    pub heap: u64,
    /// Whether it is an offload kernel of an image with a reverse-offload table (its
    /// launches may post reverse-offload requests: the console is polled more often);
    /// false for `_init_array` and `_fini_array`.
    pub reverse_offload: bool,
}

/// An image loaded on one device.
pub struct Image {
    /// The `target_data` pointer libgomp identifies the image by.
    pub key: usize,
    // Destroyed before the reader it was loaded from (see `destroy`).
    exec: Executable,
    reader: CodeObjectReader,
    /// The offload kernels, in host-table order.
    pub kernels: Vec<Arc<Kernel>>,
    /// `_init_array` and `_fini_array`, when the image has them.
    pub cdtors: [Option<Arc<Kernel>>; 2],
    /// The module's heap (allocated by the device, freed with the image).
    heap: Allocation,
    /// The device addresses of `.offload_func_table` (reverse offload), when asked.
    pub rev_table: Option<Vec<u64>>,
}

/// Makes an executable of `reader`'s code object for `agent`: created, loaded,
/// frozen, validated.
fn load_executable(
    rt: &'static Runtime,
    agent: hsa_agent_t,
    reader: &CodeObjectReader,
) -> Result<Executable> {
    let exec = Executable::create(rt)?;
    exec.load(agent, reader)?;
    exec.freeze()?;
    let result = exec.validate()?;
    if result != 0 {
        return Err(Error::Invalid(format!(
            "hsa_executable_validate: the executable failed validation (result {result:#x})"
        )));
    }
    Ok(exec)
}

impl Image {
    /// Loads the checked image `desc` (code object `co`) for `agent` with the module
    /// heap `heap`, returning it and the address table for libgomp after the kernels'
    /// entries (the kernels are [`Image::kernels`]). On an error, what was created is
    /// released (the heap included).
    #[allow(clippy::too_many_arguments)]
    pub fn load(
        rt: &'static Runtime,
        agent: hsa_agent_t,
        key: usize,
        mut desc: Descriptor,
        co: &CodeObject,
        heap: Allocation,
        want_rev: bool,
    ) -> Result<(Image, Vec<AddrPair>)> {
        if desc.ind_func_count > 0 {
            return Err(gomp_plugin::Error::not_implemented("gcn",
                "load_image",
                &format!(
                    "an image with {} indirect function(s) (`declare target indirect`: the device-side map)",
                    desc.ind_func_count
                ),
            ));
        }
        let reader = CodeObjectReader::from_bytes(rt, std::mem::take(&mut desc.image))?;
        let exec = load_executable(rt, agent, &reader)?;
        let mut img = Image {
            key,
            exec,
            reader,
            kernels: Vec::new(),
            cdtors: [None, None],
            heap,
            rev_table: None,
        };
        match img.fill(agent, &desc, co, want_rev) {
            Ok(t) => Ok((img, t)),
            Err(e) => {
                let _ = img.unload();
                Err(e)
            }
        }
    }

    /// Finds the kernels and reads the tables; returns libgomp's address table after
    /// the kernels' entries.
    fn fill(
        &mut self,
        agent: hsa_agent_t,
        desc: &Descriptor,
        co: &CodeObject,
        want_rev: bool,
    ) -> Result<Vec<AddrPair>> {
        let offload = address_table::offload_kernels(&desc.kernels)
            .into_iter()
            .map(|k| self.kernel(agent, co, k))
            .collect::<Result<Vec<_>>>()?;
        for (i, k) in cdtors::find(&desc.kernels).into_iter().enumerate() {
            if let Some(k) = k {
                self.cdtors[i] = Some(Arc::new(self.kernel(agent, co, k)?));
            }
        }
        if want_rev {
            self.rev_table = self.read_rev_table(agent, offload.len())?;
        }
        let reverse_offload = self.rev_table.is_some();
        self.kernels = offload
            .into_iter()
            .map(|k| {
                Arc::new(Kernel {
                    reverse_offload,
                    ..k
                })
            })
            .collect();
        let vars = self.read_var_table(agent, desc.global_variable_count as usize)?;
        let icvs = self
            .exec
            .variable(agent, ICVS_SYMBOL)?
            .map(|(a, n)| AddrPair {
                start: a as usize,
                end: a as usize + n as usize,
            });
        Ok(address_table::assemble(&vars, icvs))
    }

    /// The record of kernel `k`: its kernel object from the executable, its metadata
    /// from the code object.
    fn kernel(
        &self,
        agent: hsa_agent_t,
        co: &CodeObject,
        k: &self::descriptor::KernelEntry,
    ) -> Result<Kernel> {
        let kd = format!("{}.kd", k.name);
        // A kernel without a descriptor (a reverse-offload region's device stub)
        // gets object 0: it is in libgomp's table but cannot be launched.
        let object: u64 = match self.exec.kernel_object(agent, &kd)? {
            Some(object) => object,
            None if co.kernel_descriptor(&k.name).is_none() => 0,
            None => {
                let name = &k.name;
                return Err(Error::invalid(format!(
                    "gcn image: the loaded executable has no kernel symbol '{kd}' (kernel '{name}')"
                )));
            }
        };
        Ok(Kernel {
            name: k.name.clone(),
            object,
            meta: co.metadata(&k.name).cloned(),
            vgprs: k.vgpr_count,
            oacc_dims: k.oacc_dims,
            heap: self.heap.addr(),
            reverse_offload: false,
        })
    }

    /// The `nvars` (start, end) pairs of the loaded variable table.
    fn read_var_table(&self, agent: hsa_agent_t, nvars: usize) -> Result<Vec<AddrPair>> {
        if nvars == 0 {
            return Ok(Vec::new());
        }
        let (addr, _) = self
            .exec
            .variable(agent, VAR_TABLE_SYMBOL)?
            .ok_or_else(|| {
                Error::invalid(format!(
                    "gcn image: {nvars} variable(s) but no symbol '{VAR_TABLE_SYMBOL}'"
                ))
            })?;
        let mut raw = vec![0u8; nvars * VAR_ENTRY];
        // SAFETY: `addr` is the loaded table, which holds `nvars` entries.
        unsafe {
            self.exec.read(
                addr,
                &mut raw,
                ("hsa_memory_copy", || {
                    format!(" (reading {VAR_TABLE_SYMBOL})")
                }),
            )
        }?;
        address_table::var_pairs(&raw, nvars)
    }

    /// `.offload_func_table`'s device addresses, one per offload function (`n`);
    /// `None` when the image has no such table or it is all zero (no reverse offload).
    fn read_rev_table(&self, agent: hsa_agent_t, n: usize) -> Result<Option<Vec<u64>>> {
        let Some((addr, _)) = self
            .exec
            .variable(agent, address_table::FUNC_TABLE_SYMBOL)?
        else {
            return Ok(None);
        };
        let mut raw = vec![0u8; n * 8];
        // SAFETY: `addr` is the loaded table, which holds one address per offload
        // function.
        unsafe {
            self.exec.read(
                addr,
                &mut raw,
                "hsa_memory_copy (reading .offload_func_table)",
            )
        }?;
        let t: Vec<u64> = raw
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
            .collect();
        Ok(t.iter().any(|&a| a != 0).then_some(t))
    }

    /// Frees the heap, destroys the executable and the reader (`unload_image`,
    /// `fini_device`; the destructors are the caller's, `OpenDevice::unload`); returns
    /// the first error. The same verb as nvptx's `Image::unload`.
    pub fn unload(self) -> Result<()> {
        let Image {
            exec, reader, heap, ..
        } = self;
        let r = heap.free_as("hsa_memory_free (module heap)");
        let r = r.and(exec.destroy());
        r.and(reader.destroy())
    }
}
