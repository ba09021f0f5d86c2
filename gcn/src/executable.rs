//! A gcn image loaded on one device: the HSA code object reader over the image bytes,
//! the executable made from it (created, the code object loaded for the agent, frozen,
//! validated), its kernels and the address table for libgomp ([`super::table`]).
//!
//! Ownership: an [`Image`] belongs to its device's image list, from `load_image` to
//! `unload_image` (or `fini_device`); it owns the executable, the reader and the bytes
//! the reader reads (kept until the reader is destroyed, as the HSA spec requires),
//! and the module's heap.
//! The kernel records are boxed so their addresses, the handles libgomp keeps, stay
//! put. Thread-safety: immutable after loading; `Send + Sync` like the HSA owners it
//! holds (`crate::hsa::executable`).
//!
//! **Unverified on hardware**: the call sequence follows the HSA 1.1 specification
//! (`hsa_code_object_reader_create_from_memory`, `hsa_executable_create_alt`,
//! `hsa_executable_load_agent_code_object`, `hsa_executable_freeze`,
//! `hsa_executable_validate`, `hsa_executable_get_symbol_by_name`) and was run only
//! against the stand-in runtime of tests/fallback/stub_libhsa.c.

use super::code_object::CodeObject;
use super::descriptor::Descriptor;
use super::metadata::KernelMeta;
use super::table::{self, ICVS_SYMBOL, VAR_ENTRY, VAR_TABLE_SYMBOL};
use crate::hsa::executable::{CodeObjectReader, Executable};
use crate::hsa::memory::Allocation;
use crate::hsa::runtime::Runtime;
use crate::hsa::sys::*;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::abi::AddrPair;
use gomp_plugin::sync::Lock;

/// A kernel of a loaded image; its address is the handle in libgomp's table.
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
}

/// The addresses of the kernel records of every loaded image: `can_run` and `run` get
/// handles from libgomp and check them here before reading one.
static LIVE_KERNELS: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

/// The kernel whose handle is `h`, if an image holding it is loaded.
///
/// # Safety
/// The record stays valid only while its image stays loaded (libgomp does not unload
/// an image while it runs one of its kernels).
pub unsafe fn live_kernel<'a>(h: usize) -> Option<&'a Kernel> {
    let live = LIVE_KERNELS.locked();
    // SAFETY: registered addresses are boxed records of loaded images (caller).
    live.contains(&h).then(|| unsafe { &*(h as *const Kernel) })
}

/// An image loaded on one device.
pub struct Image {
    /// The `target_data` pointer libgomp identifies the image by.
    pub key: usize,
    // Destroyed before the reader it was loaded from (see `destroy`).
    exec: Executable,
    reader: CodeObjectReader,
    /// The offload kernels, in host-table order.
    pub kernels: Vec<Box<Kernel>>,
    /// `_init_array` and `_fini_array`, when the image has them.
    pub cdtors: [Option<Box<Kernel>>; 2],
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
    /// heap `heap`, returning it and the address table for libgomp. On an error, what
    /// was created is released (the heap included).
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
                let _ = img.destroy();
                Err(e)
            }
        }
    }

    /// Finds the kernels, reads the tables and registers the kernel handles; returns
    /// libgomp's address table.
    fn fill(
        &mut self,
        agent: hsa_agent_t,
        desc: &Descriptor,
        co: &CodeObject,
        want_rev: bool,
    ) -> Result<Vec<AddrPair>> {
        for k in table::offload_kernels(&desc.kernels) {
            let k = self.kernel(agent, co, k)?;
            self.kernels.push(k);
        }
        for (i, name) in table::CDTOR_KERNELS.iter().enumerate() {
            if let Some(k) = desc.kernels.iter().find(|k| k.name == *name) {
                self.cdtors[i] = Some(self.kernel(agent, co, k)?);
            }
        }
        if want_rev {
            self.rev_table = self.read_rev_table(agent)?;
        }
        let vars = self.read_var_table(agent, desc.global_variable_count as usize)?;
        let icvs = self
            .exec
            .variable(agent, ICVS_SYMBOL)?
            .map(|(a, n)| AddrPair {
                start: a as usize,
                end: a as usize + n as usize,
            });
        let handles: Vec<usize> = self
            .kernels
            .iter()
            .map(|k| &**k as *const Kernel as usize)
            .collect();
        LIVE_KERNELS.locked().extend(&handles);
        Ok(table::assemble(&handles, &vars, icvs))
    }

    /// The record of kernel `k`: its kernel object from the executable, its metadata
    /// from the code object.
    fn kernel(
        &self,
        agent: hsa_agent_t,
        co: &CodeObject,
        k: &super::descriptor::Kernel,
    ) -> Result<Box<Kernel>> {
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
        Ok(Box::new(Kernel {
            name: k.name.clone(),
            object,
            meta: co.metadata(&k.name).cloned(),
            vgprs: k.vgpr_count,
            oacc_dims: k.oacc_dims,
            heap: self.heap.addr(),
        }))
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
                &format!("hsa_memory_copy (reading {VAR_TABLE_SYMBOL})"),
            )
        }?;
        table::var_pairs(&raw, nvars)
    }

    /// `.offload_func_table`'s device addresses, one per offload function; `None`
    /// when the image has no such table or it is all zero (no reverse offload).
    fn read_rev_table(&self, agent: hsa_agent_t) -> Result<Option<Vec<u64>>> {
        let Some((addr, _)) = self.exec.variable(agent, table::FUNC_TABLE_SYMBOL)? else {
            return Ok(None);
        };
        let mut raw = vec![0u8; self.kernels.len() * 8];
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

    /// The kernel records' handles, for the live registry.
    fn unregister(&self) {
        let mut live = LIVE_KERNELS.locked();
        live.retain(|h| {
            !self
                .kernels
                .iter()
                .any(|k| &**k as *const Kernel as usize == *h)
        });
    }

    /// Frees the heap, destroys the executable and the reader (`unload_image`,
    /// `fini_device`); returns the first error.
    pub fn destroy(self) -> Result<()> {
        self.unregister();
        let Image {
            exec, reader, heap, ..
        } = self;
        let r = heap.free_as("hsa_memory_free (module heap)");
        let r = r.and(exec.destroy());
        r.and(reader.destroy())
    }
}
