//! Offload images: reading libgomp's image descriptor ([`descriptor`]), JIT-linking its
//! PTX into a CUDA module ([`link`]), the identifiers the PTX names ([`ptx_names`]), the
//! indirect-function table ([`indirect_table`]), the constructors and destructors
//! ([`cdtors`]), and the loaded [`Image`] itself: its module, kernels and the
//! device-side globals the plugin fills in (ICVs, clock tick, indirect-function map),
//! and the table returned to libgomp (spec §5.3, [`address_table`]).
//!
//! Threading: an image is built by the thread loading it, then owned by its device's
//! image list and read (never changed) by any thread launching its kernels. Its
//! kernels are shared (`Arc`) with the framework's live set, which checks the handles
//! libgomp passes back.

pub mod address_table;
pub mod cdtors;
pub mod descriptor;
pub mod indirect_table;
pub mod launch_facts;
pub mod link;
pub mod link_cache;
pub mod ptx_names;
pub mod rev_spin;
pub mod source_lines;
pub mod trials;

use crate::cache::Key;
use crate::config::tune::RevSpin;
use crate::cuda::safe::module::{func_attribute, set_func_attribute};
use crate::cuda::safe::{query, Module, ModuleRef};
use crate::cuda::sys::*;
use crate::device::Core;
use crate::image::indirect_table::IndirectTable;
use crate::image::ptx_names::PtxNames;
use crate::observe::info;
use crate::observe::nvtx::{self, names::Labels, Kind};
use descriptor::{Descriptor, RawDescriptor};
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::abi::AddrPair;
use gomp_plugin::DeviceCore;
use launch_facts::{OccupancyByLimit, Resident, TeamIcvs, Tuning};
use once_cell::sync::OnceCell;
use std::ffi::{c_void, CStr, CString};
use std::sync::Arc;

/// A kernel of a loaded image (the backend's `gomp_plugin::Device::Kernel`). Its
/// address is the opaque handle libgomp passes back as `fn` to `run`; owned by its
/// [`Image`] and the framework's live set, usable while the image is loaded (its CUDA
/// function dies with the module).
///
/// Its CUDA function and the driver's facts about it ([`Code`]) are looked up by
/// `load_image` ([`Image::load`]'s `eager`), as GCC's plugin does, a kernel the module
/// lacks failing the load; or, with `GOMP_NVPTX_TUNE=lazykernels=1`, at its first
/// launch, a missing kernel then failing that launch. Looking a function up makes the
/// driver load its code onto the device (CUDA's lazy module loading), which for an
/// image of hundreds of kernels is most of a load from the linked-image cache; but
/// loading a kernel's code may wait until no kernel runs, so a running kernel that
/// waits for the host to launch one not yet loaded (a reverse-offload host function
/// that launches a kernel, or kernels that signal each other through host memory)
/// would never end. Hence eager by default, and always in a program that uses reverse
/// offload.
#[derive(Debug)]
pub struct Kernel {
    /// Kernel name, for diagnostics.
    pub name: String,
    /// The name as the driver is asked for it.
    cname: CString,
    /// The image's module: looked up in while the image is loaded (a kernel of an
    /// unloaded image is no longer in the live set, so nothing launches it).
    module: ModuleRef,
    /// The function and its attributes, once looked up (by the load or the first launch).
    code: OnceCell<Code>,
    /// OpenACC dimensions from the compiler.
    pub dims: [u16; 3],
    /// The occupancy calculator's (grid, block) for this kernel by block-size limit,
    /// asked on OpenACC launches (`None` inside: the driver has no calculator).
    pub occupancy: OccupancyByLimit,
    /// Resident blocks per SM by warp count (OpenMP launches).
    pub resident: Resident,
    /// The team ICVs of the kernel's image (shared by its kernels).
    pub icvs: Arc<TeamIcvs>,
    /// The launch shape chosen by trials (`launch::autotune`).
    pub tuning: Tuning,
    /// The linked-image cache's key of the kernel's image (`None` when the cache is
    /// off): the start of the key under which the kernel's chosen shape is kept.
    pub image_key: Option<Key>,
    /// Its names in NVTX ranges (`observe::nvtx::names`), made only when a tool was
    /// attached at the image's load.
    pub nvtx: Option<Labels>,
}

/// A kernel's CUDA function and what the driver says of it. `Copy`, plain data; the
/// function is valid while its image is loaded.
#[derive(Clone, Copy, Debug)]
pub struct Code {
    /// The CUDA function.
    pub func: CUfunction,
    /// The JIT's limit on threads per block for this kernel.
    pub max_threads_per_block: i32,
    /// Registers per thread.
    pub regs: i32,
}

impl Kernel {
    /// The kernel's function and attributes, looked up on the first call (then kept):
    /// the function, its opt-in to the device's low-latency pool above 48 KiB of shared
    /// memory and the `carveout` knob, its thread and register counts. Fails, with the
    /// kernel's name, when the image's module lacks it or the driver fails. Called by
    /// launches, i.e. while the image is loaded.
    pub fn code(&self, dev: &Core) -> Result<&Code> {
        self.code.get_or_try_init(|| self.look_up(dev))
    }

    /// The kernel's function and attributes when a launch has looked them up already.
    pub fn code_if_known(&self) -> Option<&Code> {
        self.code.get()
    }

    fn look_up(&self, dev: &Core) -> Result<Code> {
        let name = &self.name;
        // SAFETY: launches only reach kernels of loaded images (the live set drops an
        // image's kernels before it is unloaded).
        let func = unsafe { self.module.function(&self.cname) }?
            .ok_or_else(|| Error::invalid(format!("offload image lacks kernel '{name}'")))?;
        let static_smem = func_attr(func, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?;
        let want = static_smem as usize + dev.config().lowlat_pool;
        if want > 48 * 1024 && dev.config().lowlat_pool <= dev.props().max_smem_optin as usize {
            // Dynamic shared memory above 48 KiB must be opted in to per kernel.
            // SAFETY: plain attribute setting on a function of the loaded module.
            unsafe {
                set_func_attribute(
                    func,
                    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dev.config().lowlat_pool as i32,
                )
            }?;
        }
        if let Some(pct) = dev.config().tune.carveout {
            // SAFETY: plain attribute setting on a function of the loaded module.
            unsafe {
                set_func_attribute(
                    func,
                    CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                    pct as i32,
                )
            }?;
        }
        Ok(Code {
            func,
            max_threads_per_block: func_attr(func, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            regs: func_attr(func, CU_FUNC_ATTRIBUTE_NUM_REGS)?,
        })
    }
}

/// An image loaded on one device. Owned by the device's image list; holds the device's
/// core (what its unload gives back its memory to), as an OpenACC queue does.
pub struct Image {
    /// The `target_data` pointer libgomp identifies the image by.
    pub key: usize,
    /// The core of the device it is loaded on.
    core: Arc<Core>,
    /// The CUDA module (unloaded when the image is released).
    module: Module,
    /// Kernels, in host-table order.
    pub fns: Vec<Arc<Kernel>>,
    /// Device memory the plugin allocated for this image (indirect-function table or
    /// map).
    owned: Vec<CUdeviceptr>,
    /// Identifiers of the image's PTX: optional symbols are looked up only if named.
    names: PtxNames,
}

// SAFETY: CUDA module and function handles may be used from any host thread.
unsafe impl Send for Image {}
// SAFETY: as above; the image is immutable after loading.
unsafe impl Sync for Image {}
// SAFETY: CUDA function and module handles may be used from any host thread.
unsafe impl Send for Kernel {}
// SAFETY: as above; the kernel's mutable parts are behind their own locks and cells.
unsafe impl Sync for Kernel {}

/// One attribute of `f`, a function of a loaded module (caller: [`Kernel::code`]).
fn func_attr(f: CUfunction, a: CUfunction_attribute) -> Result<i32> {
    // SAFETY: `f` was just looked up in the image's loaded module.
    unsafe { func_attribute(f, a) }
}

/// In a program that uses reverse offload: rewrites the device runtime's request to the
/// host in the first PTX object that holds it, as `GOMP_NVPTX_TUNE=revspin` says
/// ([`rev_spin`]; nothing with `revspin=0`).
fn rewrite_rev_spin(dev: &Core, desc: &mut Descriptor) {
    let form = match dev.config().tune.revspin {
        RevSpin::Off => return,
        RevSpin::AcqRel if dev.props().cc >= (7, 0) => rev_spin::Form::AcqRel,
        RevSpin::Wait | RevSpin::AcqRel => rev_spin::Form::VolatileWait,
    };
    // The first poll's delay in the device's clock cycles (2 GHz where the driver does
    // not say the clock).
    let khz = match dev.props().clock_khz {
        k if k > 0 => k as u64,
        _ => 2_000_000,
    };
    let delay = dev.config().tune.revdelay as u64 * khz / 1_000_000;
    for obj in desc.ptx.iter_mut() {
        if let Some((r, used)) = rev_spin::rewrite(obj, form, delay) {
            log::debug!("reverse offload: GOMP_target_ext's request rewritten ({used:?}; GOMP_NVPTX_TUNE=revspin=0: as GCC wrote it)");
            *obj = std::borrow::Cow::Owned(r);
            break;
        }
    }
}

/// The `GOMP_NVPTX_INFO` line of a loaded image (`key`: its descriptor's address).
fn report_load(dev: &Core, key: usize, desc: &Descriptor, how: &str, module_ms: f64, load_ms: f64) {
    info::image(&dev.config().observe, || {
        info::image_line(
            dev.ord(),
            key,
            desc.ptx.len(),
            desc.funcs.len(),
            how,
            module_ms,
            load_ms,
        )
    });
}

impl Image {
    /// Loads the image `data` of version word `version` on `dev`, returning it and the
    /// rest of libgomp's address table after the kernels' entries (variables, then the
    /// ICV block); the kernels are [`Image::fns`]. `eager` (the default, and always
    /// when libgomp asked for the reverse-offload table): every kernel is looked up now,
    /// a missing one failing the load (see [`Kernel`]); otherwise each at its first
    /// launch. `rev`: the program uses reverse offload (libgomp asked for the table),
    /// so the device runtime's request to the host is rewritten unless
    /// `GOMP_NVPTX_TUNE=revspin=0` ([`rev_spin`]).
    ///
    /// # Safety
    /// `data` must be a descriptor as [`descriptor::read`] requires; `host_ind_fns`
    /// must be NULL or hold the image's `ind_fn_num` host addresses.
    pub unsafe fn load(
        dev: &Arc<Core>,
        version: u32,
        data: *const RawDescriptor,
        host_ind_fns: *const u64,
        eager: bool,
        rev: bool,
    ) -> Result<(Image, Vec<AddrPair>)> {
        // SAFETY: forwarded caller guarantee.
        let mut desc = unsafe { descriptor::read(version, data) }?;
        let ptx_bytes = desc.ptx.iter().map(|o| o.len() as u64).sum();
        let _range = nvtx::range(Kind::Image, Some(ptx_bytes), || {
            format!("load image ({} kernels)", desc.funcs.len()).into()
        });
        if rev {
            rewrite_rev_spin(dev, &mut desc);
        }
        let t0 = dev.observe().map(|_| crate::observe::now());
        let start = std::time::Instant::now();
        let setting = &dev.config().link_cache;
        let driver = query::driver_version().unwrap_or(0);
        let split = link::split_threads(dev.config().tune.jitthreads, driver);
        let options = link::value_options(dev.config().jit_opt_level, &dev.config().tune, split);
        let (module, how, image_key) = link_cache::load(
            &desc.ptx,
            &options,
            || link_cache::Target {
                cc: dev.props().cc,
                driver: link_cache::driver_identity(driver),
            },
            link_cache::store(setting),
        )?;
        let module_ms = start.elapsed().as_secs_f64() * 1e3;
        let t1 = t0.map(|_| crate::observe::now());
        let mut img = Image {
            key: data as usize,
            core: Arc::clone(dev),
            module,
            fns: Vec::new(),
            owned: Vec::new(),
            names: PtxNames::from_ptx(&desc.ptx),
        };
        // On an error below, the partly built image releases what it holds.
        // SAFETY: forwarded caller guarantee.
        match unsafe { img.fill(dev, &desc, host_ind_fns, image_key, eager) } {
            Ok(table) => {
                let how = how.describe();
                if let (Some(o), Some(t0), Some(t1)) = (dev.observe(), t0, t1) {
                    o.jit(
                        data as usize,
                        desc.ptx.len(),
                        desc.funcs.len(),
                        t0,
                        t1,
                        &how,
                    );
                }
                let load_ms = start.elapsed().as_secs_f64() * 1e3;
                report_load(dev, data as usize, &desc, &how, module_ms, load_ms);
                Ok((img, table))
            }
            Err(e) => {
                // Settles the device first, as an unload does.
                let _ = img.release();
                Err(e)
            }
        }
    }

    unsafe fn fill(
        &mut self,
        dev: &Core,
        desc: &Descriptor,
        host_ind_fns: *const u64,
        image_key: Option<Key>,
        eager: bool,
    ) -> Result<Vec<AddrPair>> {
        let icvs_block = self.global(address_table::ICVS_SYMBOL)?;
        let team_icvs =
            Arc::new(icvs_block.map_or_else(TeamIcvs::default, |(p, n)| TeamIcvs::at(p, n)));
        let module = self.module.borrow();
        let lines = nvtx::on().then(|| source_lines::kernel_lines(&desc.ptx));
        for f in &desc.funcs {
            let name = f.name.to_string_lossy().into_owned();
            let labels = lines.as_ref().map(|m| Labels::new(&name, m.get(&name)));
            self.fns.push(Arc::new(Kernel {
                name,
                cname: f.name.to_owned(),
                module,
                code: OnceCell::new(),
                dims: f.dims,
                occupancy: OccupancyByLimit::default(),
                resident: Resident::default(),
                icvs: team_icvs.clone(),
                tuning: Tuning::default(),
                image_key,
                nvtx: labels,
            }));
        }
        if eager {
            for f in &self.fns {
                f.code(dev)?;
            }
        }
        let vars = address_table::var_pairs(&desc.vars, |v| self.global(v))?;
        if desc.ind_fn_num > 0 && !host_ind_fns.is_null() {
            // SAFETY: forwarded caller guarantee on `host_ind_fns`.
            unsafe { self.map_indirect_functions(dev, desc.ind_fn_num as usize, host_ind_fns) }?;
        }
        // The last entry: libgomp 12 writes the device number into the image's
        // `__gomp_device_num`, 13+ the ICVs into its ICV block.
        let last = match gomp_plugin::libgomp::host::libgomp() {
            Some(v) if v.trailing_entry_is_device_num() => {
                self.global(address_table::DEVICE_NUM_SYMBOL)?
            }
            _ => icvs_block,
        };
        if let (Some((p, 8)), k) = (self.global(c"__nvptx_clocktick")?, dev.props().clock_khz) {
            if k > 0 {
                let tick: f64 = 1e-3 / k as f64;
                // SAFETY: `tick` is 8 readable bytes.
                unsafe { dev.host2dev(p, (&tick as *const f64).cast(), 8) }?;
            }
        }
        cdtors::run_cdtors(dev, |n| self.function(n), c"__do_global_ctors__entry")?;
        Ok(address_table::assemble(
            &vars,
            last.map(address_table::pair),
        ))
    }

    /// Gives the device the (host address, device address) pairs of the image's
    /// indirect functions. A libgomp 16 image (it defines `__gomp_indirect_addr_hmap`)
    /// gets the complete hash table its device runtime looks up
    /// ([`IndirectTable`]); older images get the NULL-terminated pair list in
    /// `__gomp_indirect_addr_map`. Either block is freed when the image is unloaded.
    unsafe fn map_indirect_functions(
        &mut self,
        dev: &Core,
        n: usize,
        host: *const u64,
    ) -> Result<()> {
        let hmap = self.global(c"__gomp_indirect_addr_hmap")?;
        let map = self.global(c"__gomp_indirect_addr_map")?;
        if hmap.is_none() && map.is_none() {
            return Ok(());
        }
        let (table, size) = self
            .global(c"$offload_ind_func_table")?
            .ok_or_else(|| Error::invalid("offload image lacks $offload_ind_func_table"))?;
        if size < n * 8 {
            return Err(Error::invalid(
                "offload image: $offload_ind_func_table too small",
            ));
        }
        let mut dev_addrs = vec![0u64; n];
        // SAFETY: `dev_addrs` has n*8 writable bytes.
        unsafe { dev.dev2host(dev_addrs.as_mut_ptr().cast(), table, n * 8) }?;
        // SAFETY: `host` holds n entries (caller).
        let host = unsafe { std::slice::from_raw_parts(host, n) };
        let pairs: Vec<(u64, u64)> = host.iter().copied().zip(dev_addrs).collect();
        if let Some((var, _)) = hmap {
            let t = IndirectTable::build(&pairs)?;
            self.upload_map(dev, var, &t.to_bytes())?;
            log::debug!(
                "indirect functions: {} entries in a host-built hash table of {} slots \
                 (__gomp_indirect_addr_hmap)",
                t.len(),
                t.size()
            );
        } else if let Some((var, _)) = map {
            let bytes: Vec<u8> = pairs
                .iter()
                .chain(std::iter::once(&(0, 0)))
                .flat_map(|&(h, d)| [h.to_le_bytes(), d.to_le_bytes()])
                .flatten()
                .collect();
            self.upload_map(dev, var, &bytes)?;
            log::debug!(
                "indirect functions: {n} entries in a linear map (__gomp_indirect_addr_map)"
            );
        }
        Ok(())
    }

    /// Copies `bytes` into a fresh device block owned by the image and writes the
    /// block's address into the pointer variable at `var`.
    fn upload_map(&mut self, dev: &Core, var: CUdeviceptr, bytes: &[u8]) -> Result<()> {
        let buf = dev.alloc(bytes.len())?;
        self.owned.push(buf);
        // SAFETY: `bytes` is readable for its length; `buf` holds as many bytes.
        unsafe { dev.host2dev(buf, bytes.as_ptr().cast(), bytes.len()) }?;
        // SAFETY: `buf` is 8 readable bytes; the variable is a device pointer.
        unsafe { dev.host2dev(var, (&buf as *const CUdeviceptr).cast::<c_void>(), 8) }
    }

    /// The device global `name` of this image, `None` if the image does not define it
    /// (not asked of the driver when the PTX never names it).
    pub fn global(&self, name: &CStr) -> Result<Option<(CUdeviceptr, usize)>> {
        if !self.names.mentions(name) {
            return Ok(None);
        }
        self.module.global(name)
    }

    /// The kernel `name` of this image, `None` if the image does not define it (not
    /// asked of the driver when the PTX never names it).
    pub fn function(&self, name: &CStr) -> Result<Option<CUfunction>> {
        if !self.names.mentions(name) {
            return Ok(None);
        }
        self.module.function(name)
    }

    /// Runs the image's destructors and unloads it.
    pub fn unload(self) -> Result<()> {
        let dev = Arc::clone(&self.core);
        let dtors = cdtors::run_cdtors(&dev, |n| self.function(n), c"__do_global_dtors__entry");
        self.release()?;
        dtors
    }

    /// Waits for the device's deferred copies (rule 3 of the copy order: one may still
    /// be writing the image's globals or blocks, e.g. the clock tick or the
    /// indirect-function map of a load that failed later), frees the image's device
    /// blocks, then unloads its module (the kernels' handles die with it). The copies
    /// are complete after the wait even when it fails (a failed copy), so the image is
    /// released either way; the wait's error comes first.
    pub(crate) fn release(self) -> Result<()> {
        let dev = Arc::clone(&self.core);
        let settled = dev.launch().settle();
        for &p in &self.owned {
            let _ = dev.free(p);
        }
        let Image { module, .. } = self;
        let unloaded = module.unload();
        settled?;
        unloaded?;
        Ok(())
    }
}
