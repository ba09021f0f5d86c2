//! A gcn image loaded on one device: the HSA code object reader over the image bytes,
//! the executable made from it (created, the code object loaded for the agent, frozen,
//! validated), its kernels and the address table for libgomp ([`super::table`]).
//!
//! Ownership: an [`Image`] belongs to its device's image list, from `load_image` to
//! `unload_image` (or `fini_device`); it owns the executable, the reader and the bytes
//! the reader reads (kept until the reader is destroyed, as the HSA spec requires).
//! The kernel records are shared (`Arc`) with the framework's live set, which checks
//! the handles libgomp passes back (their addresses). Thread-safety: immutable after
//! loading; HSA executables and symbols may be used from any thread (HSA spec), hence
//! the `Send`/`Sync` below.
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
use crate::hsa::runtime::Runtime;
use crate::hsa::sys::*;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::abi::AddrPair;
use std::ffi::{c_void, CString};
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
    /// Whether its image has a reverse-offload table (its launches may post
    /// reverse-offload requests: the console is polled more often).
    pub reverse_offload: bool,
}

/// An image loaded on one device.
pub struct Image {
    /// The `target_data` pointer libgomp identifies the image by.
    pub key: usize,
    exec: hsa_executable_t,
    reader: hsa_code_object_reader_t,
    _code: Vec<u8>,
    /// The offload kernels, in host-table order.
    pub kernels: Vec<Arc<Kernel>>,
    /// `_init_array` and `_fini_array`, when the image has them.
    pub cdtors: [Option<Arc<Kernel>>; 2],
    /// The module's heap (allocated by the device, freed with the image).
    pub heap: u64,
    /// The device addresses of `.offload_func_table` (reverse offload), when asked.
    pub rev_table: Option<Vec<u64>>,
}

// SAFETY: executable and reader handles may be used from any thread (HSA spec); the
// image is immutable after loading.
unsafe impl Send for Image {}
// SAFETY: as above.
unsafe impl Sync for Image {}

fn cname(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| Error::invalid(format!("symbol name {name:?} contains NUL")))
}

/// Looks up `name` in a frozen executable; `None` if it has no such symbol.
fn symbol(
    rt: &Runtime,
    exec: hsa_executable_t,
    agent: hsa_agent_t,
    name: &str,
) -> Result<Option<hsa_executable_symbol_t>> {
    let c = cname(name)?;
    let mut sym = hsa_executable_symbol_t { handle: 0 };
    // SAFETY: NUL-terminated name, agent and out-pointer valid for the call.
    let st = unsafe { (rt.hsa_executable_get_symbol_by_name)(exec, c.as_ptr(), &agent, &mut sym) };
    if st == hsa_status_t_HSA_STATUS_ERROR_INVALID_SYMBOL_NAME {
        return Ok(None);
    }
    rt.check(st, &format!("hsa_executable_get_symbol_by_name('{name}')"))?;
    Ok(Some(sym))
}

/// Reads a symbol attribute of type `T`.
fn info<T: Default>(
    rt: &Runtime,
    sym: hsa_executable_symbol_t,
    what: hsa_executable_symbol_info_t,
    name: &str,
) -> Result<T> {
    let mut v = T::default();
    // SAFETY: out-pointer of the attribute's type (the caller picks `T` per the spec).
    let st = unsafe { (rt.hsa_executable_symbol_get_info)(sym, what, (&mut v as *mut T).cast()) };
    rt.check(
        st,
        &format!("hsa_executable_symbol_get_info('{name}', {what})"),
    )?;
    Ok(v)
}

/// A variable's device address and size, `None` if the executable lacks it.
fn variable(
    rt: &Runtime,
    exec: hsa_executable_t,
    agent: hsa_agent_t,
    name: &str,
) -> Result<Option<(u64, u32)>> {
    let Some(sym) = symbol(rt, exec, agent, name)? else {
        return Ok(None);
    };
    let addr: u64 = info(
        rt,
        sym,
        hsa_executable_symbol_info_t_HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS,
        name,
    )?;
    let size: u32 = info(
        rt,
        sym,
        hsa_executable_symbol_info_t_HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE,
        name,
    )?;
    Ok(Some((addr, size)))
}

impl Image {
    /// Loads the checked image `desc` (code object `co`) for `agent`, returning it and
    /// the address table for libgomp after the kernels' entries (the kernels are
    /// [`Image::kernels`]). On an error, what was created is released.
    pub fn load(
        rt: &'static Runtime,
        agent: hsa_agent_t,
        key: usize,
        desc: Descriptor,
        co: &CodeObject,
        heap: u64,
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
        let mut reader = hsa_code_object_reader_t { handle: 0 };
        // SAFETY: `desc.image` outlives the reader (moved into the Image below, which
        // destroys the reader before dropping the bytes).
        let st = unsafe {
            (rt.hsa_code_object_reader_create_from_memory)(
                desc.image.as_ptr().cast(),
                desc.image.len(),
                &mut reader,
            )
        };
        rt.check(st, "hsa_code_object_reader_create_from_memory")?;
        let mut img = Image {
            key,
            exec: hsa_executable_t { handle: 0 },
            reader,
            _code: Vec::new(),
            kernels: Vec::new(),
            cdtors: [None, None],
            heap,
            rev_table: None,
        };
        match img.fill(rt, agent, &desc, co, want_rev) {
            Ok(t) => {
                img._code = desc.image;
                Ok((img, t))
            }
            Err(e) => {
                let _ = img.destroy(rt);
                Err(e)
            }
        }
    }

    fn fill(
        &mut self,
        rt: &Runtime,
        agent: hsa_agent_t,
        desc: &Descriptor,
        co: &CodeObject,
        want_rev: bool,
    ) -> Result<Vec<AddrPair>> {
        // SAFETY: out-pointer to a field; no options.
        let st = unsafe {
            (rt.hsa_executable_create_alt)(
                hsa_profile_t_HSA_PROFILE_FULL,
                hsa_default_float_rounding_mode_t_HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                std::ptr::null(),
                &mut self.exec,
            )
        };
        rt.check(st, "hsa_executable_create_alt")?;
        // SAFETY: live executable and reader; no options, no loaded-object out-pointer.
        let st = unsafe {
            (rt.hsa_executable_load_agent_code_object)(
                self.exec,
                agent,
                self.reader,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        };
        rt.check(st, "hsa_executable_load_agent_code_object")?;
        // SAFETY: live executable; no options.
        let st = unsafe { (rt.hsa_executable_freeze)(self.exec, std::ptr::null()) };
        rt.check(st, "hsa_executable_freeze")?;
        if rt.has("hsa_executable_validate") {
            let mut result = 0u32;
            // SAFETY: frozen executable; out-pointer to a local.
            let st = unsafe { (rt.hsa_executable_validate)(self.exec, &mut result) };
            rt.check(st, "hsa_executable_validate")?;
            if result != 0 {
                return Err(Error::Invalid(format!(
                    "hsa_executable_validate: the executable failed validation (result {result:#x})"
                )));
            }
        }
        let kernel = |k: &super::descriptor::Kernel| -> Result<Kernel> {
            let kd = format!("{}.kd", k.name);
            // A kernel without a descriptor (a reverse-offload region's device stub)
            // gets object 0: it is in libgomp's table but cannot be launched.
            let object: u64 = match symbol(rt, self.exec, agent, &kd)? {
                Some(sym) => info(
                    rt,
                    sym,
                    hsa_executable_symbol_info_t_HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                    &kd,
                )?,
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
                heap: self.heap,
                reverse_offload: false,
            })
        };
        let offload = table::offload_kernels(&desc.kernels)
            .into_iter()
            .map(kernel)
            .collect::<Result<Vec<_>>>()?;
        for (slot, name) in self.cdtors.iter_mut().zip(table::CDTOR_KERNELS) {
            if let Some(k) = desc.kernels.iter().find(|k| k.name == name) {
                *slot = Some(Arc::new(kernel(k)?));
            }
        }
        if want_rev {
            self.rev_table = self.read_rev_table(rt, agent, offload.len())?;
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
        let nvars = desc.global_variable_count as usize;
        let vars = if nvars == 0 {
            Vec::new()
        } else {
            let (addr, _) = variable(rt, self.exec, agent, VAR_TABLE_SYMBOL)?.ok_or_else(|| {
                Error::invalid(format!(
                    "gcn image: {nvars} variable(s) but no symbol '{VAR_TABLE_SYMBOL}'"
                ))
            })?;
            let mut raw = vec![0u8; nvars * VAR_ENTRY];
            // SAFETY: `raw` is writable for its length; `addr` is the loaded table.
            let st = unsafe {
                (rt.hsa_memory_copy)(raw.as_mut_ptr().cast(), addr as *const c_void, raw.len())
            };
            rt.check(st, &format!("hsa_memory_copy (reading {VAR_TABLE_SYMBOL})"))?;
            table::var_pairs(&raw, nvars)?
        };
        let icvs = variable(rt, self.exec, agent, ICVS_SYMBOL)?.map(|(a, n)| AddrPair {
            start: a as usize,
            end: a as usize + n as usize,
        });
        Ok(table::assemble(&vars, icvs))
    }

    /// `.offload_func_table`'s device addresses, one per offload function (`n`);
    /// `None` when the image has no such table or it is all zero (no reverse offload).
    fn read_rev_table(
        &self,
        rt: &Runtime,
        agent: hsa_agent_t,
        n: usize,
    ) -> Result<Option<Vec<u64>>> {
        let Some((addr, _)) = variable(rt, self.exec, agent, table::FUNC_TABLE_SYMBOL)? else {
            return Ok(None);
        };
        let mut t = vec![0u64; n];
        // SAFETY: `t` is writable for its length; `addr` is the loaded table, which
        // holds one address per offload function.
        let st = unsafe {
            (rt.hsa_memory_copy)(t.as_mut_ptr().cast(), addr as *const c_void, t.len() * 8)
        };
        rt.check(st, "hsa_memory_copy (reading .offload_func_table)")?;
        Ok(t.iter().any(|&a| a != 0).then_some(t))
    }

    /// Destroys the executable and the reader (`unload_image`, `fini_device`).
    pub fn destroy(self, rt: &Runtime) -> Result<()> {
        let mut r = Ok(());
        if self.heap != 0 {
            // SAFETY: the heap was allocated for this image and is freed once.
            let st = unsafe { (rt.hsa_memory_free)(self.heap as *mut c_void) };
            r = rt.check(st, "hsa_memory_free (module heap)");
        }
        if self.exec.handle != 0 {
            // SAFETY: the executable is ours and destroyed once (self is consumed).
            let st = unsafe { (rt.hsa_executable_destroy)(self.exec) };
            r = r.and(rt.check(st, "hsa_executable_destroy"));
        }
        // SAFETY: as above, for the reader; the bytes it reads are dropped after.
        let st = unsafe { (rt.hsa_code_object_reader_destroy)(self.reader) };
        r.and(rt.check(st, "hsa_code_object_reader_destroy"))
    }
}
