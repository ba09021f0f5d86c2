//! Open gcn devices: `init_device` finds the agent's memory regions, creates the
//! device's [`Core`] and its [`Launcher`] (the synchronous HSA queue, settings);
//! `load_image` gives each module its heap and runs its `_init_array` kernel;
//! `unload_image` and `fini_device` run `_fini_array` and destroy the image;
//! `fini_device` also stops the async thread and frees the blocks libgomp left.
//!
//! [`OpenDevice`] is the opened device and implements `gomp_plugin::Device` (images,
//! kernels, launches, close); its core is its [`Core`] (held as `Arc<Core>`, as nvptx's
//! open device holds its core), which implements `gomp_plugin::DeviceCore` (the memory
//! entry points reach it directly). Its fields are private: the rest of the crate uses
//! [`OpenDevice::ord`], [`OpenDevice::launcher`] and `Device::core`.
//!
//! Ownership: the framework's registry owns each [`OpenDevice`] (`Arc`, so a call that
//! got one keeps it alive while another thread closes it); a device owns its memory
//! and images. Thread-safety: each device's image list (the framework's `LoadedImages`) is behind a mutex; libgomp also
//! serializes init/fini/load/unload per device.
//!
//! **Unverified on hardware** (see `device/mod.rs`, `image/mod.rs`).

use crate::device::{self, Core};
use crate::discovery::agent;
use crate::hsa::sys::*;
use crate::hsa::table::{self, Runtime};
use crate::image::{cdtors, check_image, Image, Kernel};
use crate::launch::run::Launcher;
use crate::launch::{Dims, Grid, Kind, CDTOR_DIMS};
use gomp_plugin::device::LoadedImage;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::images::LoadedImages;
use gomp_plugin::libgomp::target_args::LaunchRequest;
use std::ffi::c_void;
use std::sync::Arc;

/// One open device.
///
/// Owns: its core (`Arc<Core>`: the agent's regions, device memory, copies), the
/// loaded images and its [`Launcher`] (queues, kernel arguments, ephemeral memory,
/// settings). Fields are private; the rest of the crate uses the accessors.
///
/// Held by: the framework's registry (`Arc<OpenDevice>`) from `init_device` until
/// `fini_device`, by every libgomp call in flight on the device, and by each OpenACC
/// queue on it ([`crate::openacc::queue::AccQueue`]).
///
/// Threading: any libgomp thread may call it at once; the image list is locked, the
/// launcher and the core are thread-safe.
pub struct OpenDevice {
    /// libgomp's device number.
    ord: i32,
    /// The agent.
    agent: hsa_agent_t,
    /// The agent's name, e.g. "gfx90a".
    name: String,
    /// Its core: memory regions, device memory, copies (shared, as nvptx's).
    core: Arc<Core>,
    /// Images loaded on it (the framework's list: found by libgomp's key, unloaded in
    /// reverse load order at close).
    images: LoadedImages<Image>,
    /// Queues, kernel arguments, ephemeral memory, settings.
    launcher: Arc<Launcher>,
    rt: &'static Runtime,
}

impl OpenDevice {
    /// Opens device `ord`: its agent's regions and memory. The framework's registry
    /// keeps the result (and refuses to open an open device).
    pub fn open(ord: i32) -> Result<OpenDevice> {
        let a = agent(ord)?;
        let rt = table::loaded().ok_or_else(|| Error::invalid("the HSA runtime is not loaded"))?;
        let agent = hsa_agent_t { handle: a.handle };
        let regions = device::find_regions(rt, agent)?;
        let full = crate::hsa::safe::agent::profile(rt, agent)? == hsa_profile_t_HSA_PROFILE_FULL;
        log::debug!(
            "device {ord}: {} opened ({} profile; device memory region {:#x}, kernarg region {}, fine-grained region {})",
            a.name,
            if full { "full" } else { "base" },
            regions.device.handle,
            regions.kernarg.map_or("none".into(), |r| format!("{:#x}", r.handle)),
            regions.fine.map_or("none".into(), |r| format!("{:#x}", r.handle)),
        );
        let launcher = Launcher::open(rt, agent, &a.name, &regions)?;
        log::debug!(
            "device {ord}: {} compute units, libgomp {} LDS layout; {:?}",
            launcher.cu,
            launcher.gcc,
            launcher.cfg
        );
        Ok(OpenDevice {
            ord,
            agent,
            name: a.name.clone(),
            core: Arc::new(Core::new(rt, agent, regions, full)),
            images: LoadedImages::new(),
            launcher: Arc::new(launcher),
            rt,
        })
    }

    /// libgomp's number of the device.
    #[inline]
    pub fn ord(&self) -> i32 {
        self.ord
    }

    /// The device's launcher (its queues, kernel arguments, ephemeral memory and
    /// settings), owned by the device; thread-safe.
    #[inline]
    pub fn launcher(&self) -> &Launcher {
        &self.launcher
    }

    /// Runs the image's `_init_array` (`which` 0) or `_fini_array` (1), if it has it
    /// ([`cdtors::run_cdtors`]), through the launcher, waited for.
    fn run_cdtor(&self, img: &Image, which: usize) -> Result<()> {
        cdtors::run_cdtors(img.cdtors[which].as_ref(), |k| {
            let e = self
                .launcher
                .launch(self.ord, None, k, 0, CDTOR_DIMS, Kind::Cdtor)?;
            self.launcher.finish(e);
            Ok(())
        })
    }

    /// Runs `_fini_array`, then unloads the image.
    fn unload(&self, img: Image) -> Result<()> {
        let r = self.run_cdtor(&img, 1);
        r.and(img.unload())
    }

    /// The grid of an OpenMP launch request; `None`: skip.
    fn grid(&self, req: &LaunchRequest) -> Option<Dims> {
        let l = &self.launcher;
        match crate::launch::omp_grid(
            req,
            l.cu,
            self.name == "gfx900",
            l.cfg.num_threads.is_some(),
        ) {
            Grid::Run(d) => Some(d),
            Grid::Default(d) => {
                log::debug!(
                    "device {}: no launch geometry in the target arguments; using 1 team of 1 thread",
                    self.ord
                );
                Some(d)
            }
            Grid::Skip => None,
        }
    }
}

impl gomp_plugin::Device for OpenDevice {
    type Kernel = Kernel;
    type Core = Core;

    fn core(&self) -> &Core {
        &self.core
    }

    /// Closes the device: destroys its images, frees the blocks still allocated.
    fn close(&self) -> Result<()> {
        let n = self.images.len();
        let unloaded = self.images.unload_all(|img| self.unload(img));
        self.launcher.close();
        let blocks = self.core.release_all();
        log::debug!(
            "device {}: closed ({n} image(s) unloaded, {blocks} block(s) freed)",
            self.ord
        );
        unloaded.map(|_| ())
    }

    /// Checks the image against this device (descriptor, code object, kernel
    /// descriptors, target), loads it into an HSA executable, runs its constructors;
    /// when libgomp asks (the program requires reverse offload), the reverse-offload
    /// table is a copy of the image's `.offload_func_table` (NULL when it has none or
    /// it is all zero).
    unsafe fn load_image(
        self: &Arc<Self>,
        _version: u32,
        target_data: *const c_void,
        want_rev: bool,
        _host_ind_fns: *const u64,
    ) -> Result<LoadedImage<Kernel>> {
        // SAFETY: caller's contract.
        let (desc, co) = unsafe { check_image(target_data, Some(&self.name))? };
        let key = target_data as usize;
        self.images.ensure_absent(key)?;
        let (nk, nv) = (desc.kernels.len(), desc.global_variable_count);
        let heap = self.launcher.resources.new_heap()?;
        let (img, table) = Image::load(self.rt, self.agent, key, desc, &co, heap, want_rev)?;
        log::debug!(
            "device {}: loaded image {target_data:p} for {} ({nk} kernel(s) of which {} offload function(s), {nv} variable(s)); table of {} entries",
            self.ord,
            co.target_name(),
            img.kernels.len(),
            img.kernels.len() + table.len()
        );
        for k in &img.kernels {
            if let Some(m) = &k.meta {
                log::debug!(
                    "  kernel {}: object {:#x}, kernargs {} bytes (align {}), group {} bytes, private {} bytes, wavefront {}",
                    k.name, k.object, m.kernarg_segment_size, m.kernarg_segment_align,
                    m.group_segment_fixed_size, m.private_segment_fixed_size, m.wavefront_size
                );
            }
        }
        if let Err(e) = self.run_cdtor(&img, 0) {
            let _ = img.unload();
            return Err(e);
        }
        let kernels = img.kernels.clone();
        let rev_fn_table = match &img.rev_table {
            None => std::ptr::null_mut(),
            Some(t) => {
                let p = gomp_plugin::libgomp::report::malloc(t.len() * 8).cast::<u64>();
                // SAFETY: `p` has room for the entries; libgomp frees it.
                unsafe { std::ptr::copy_nonoverlapping(t.as_ptr(), p, t.len()) };
                p
            }
        };
        self.images.add(key, img);
        Ok(LoadedImage {
            kernels,
            table,
            rev_fn_table,
        })
    }

    /// `unload_image`: destroys the image libgomp knows as `target_data`.
    fn unload_image(&self, target_data: *const c_void) -> Result<()> {
        let img = self.images.remove(target_data as usize)?;
        self.unload(img)
    }

    /// Runs an OpenMP target region and waits for it (docs/gcn-launch.md §3-§4): the
    /// grid from the request, the launch, the console drain, the exit/abort decoding.
    fn run(&self, k: &Arc<Kernel>, req: &LaunchRequest) -> Result<()> {
        let Some(dims) = self.grid(req) else {
            // A skipped kernel: a table reserved for it goes back.
            self.launcher.resources.release_table(req.vars);
            return Ok(());
        };
        let e = self
            .launcher
            .launch(self.ord, None, k, req.vars, dims, Kind::OpenMp)?;
        self.launcher.finish(e);
        Ok(())
    }

    /// Queues the region on the device's async thread; libgomp hears of its end
    /// through `GOMP_PLUGIN_target_task_completion(async_data)`.
    fn run_async(
        self: &Arc<Self>,
        k: &Arc<Kernel>,
        req: &LaunchRequest,
        async_data: *mut c_void,
    ) -> Result<()> {
        let Some(dims) = self.grid(req) else {
            // A skipped kernel: complete at once (the stock plugin never completes it);
            // a table reserved for it goes back.
            self.launcher.resources.release_table(req.vars);
            gomp_plugin::libgomp::target::task_completion(async_data as usize);
            return Ok(());
        };
        self.launcher
            .launch_async(self.ord, Arc::clone(k), req.vars, dims, async_data as usize)
    }
}
