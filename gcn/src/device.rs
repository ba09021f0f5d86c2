//! Open gcn devices: `init_device` finds the agent's memory regions, creates the
//! device's [`Memory`] and its [`Launcher`] (the synchronous HSA queue, settings);
//! `load_image` gives each module its heap and runs its `_init_array` kernel;
//! `unload_image` and `fini_device` run `_fini_array` and destroy the image;
//! `fini_device` also stops the async thread and frees the blocks libgomp left.
//!
//! Ownership: the framework's registry owns each [`Device`] (`Arc`, so a call that
//! got one keeps it alive while another thread closes it); a device owns its memory
//! and images. Thread-safety: each device's image list is behind a mutex; libgomp also
//! serializes init/fini/load/unload per device.
//!
//! **Unverified on hardware** (see `memory.rs`, `executable.rs`).

use super::executable::{Image, Kernel};
use super::launch::{Kind, CDTOR_DIMS};
use super::memory::{self, Memory};
use super::run::Launcher;
use super::{agent, check_image};
use crate::hsa::runtime::{self, Runtime};
use crate::hsa::sys::*;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::abi::AddrPair;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// One open device.
pub struct Device {
    /// libgomp's device number.
    pub ord: i32,
    /// The agent.
    pub agent: hsa_agent_t,
    /// The agent's name, e.g. "gfx90a".
    pub name: String,
    /// Its memory.
    pub memory: Memory,
    /// Images loaded on it.
    pub images: Mutex<Vec<Image>>,
    /// Queues, kernel arguments, ephemeral memory, settings.
    pub launcher: Arc<Launcher>,
    rt: &'static Runtime,
}

impl Device {
    /// Opens device `ord`: its agent's regions and memory. The framework's registry
    /// keeps the result (and refuses to open an open device).
    pub fn open(ord: i32) -> Result<Device> {
        let a = agent(ord)?;
        let rt =
            runtime::loaded().ok_or_else(|| Error::invalid("the HSA runtime is not loaded"))?;
        let agent = hsa_agent_t { handle: a.handle };
        let regions = memory::find_regions(rt, agent)?;
        let mut profile: hsa_profile_t = 0;
        // SAFETY: out-pointer of the attribute's type (hsa_profile_t).
        let st = unsafe {
            (rt.hsa_agent_get_info)(
                agent,
                hsa_agent_info_t_HSA_AGENT_INFO_PROFILE,
                (&mut profile as *mut hsa_profile_t).cast::<c_void>(),
            )
        };
        rt.check(st, "hsa_agent_get_info(HSA_AGENT_INFO_PROFILE)")?;
        let full = profile == hsa_profile_t_HSA_PROFILE_FULL;
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
        Ok(Device {
            ord,
            agent,
            name: a.name.clone(),
            memory: Memory::new(rt, agent, regions, full),
            images: Mutex::new(Vec::new()),
            launcher: Arc::new(launcher),
            rt,
        })
    }

    /// Closes the device: destroys its images, frees the blocks still allocated.
    pub fn close(&self) -> Result<()> {
        let images = std::mem::take(&mut *self.images.lock().unwrap_or_else(|e| e.into_inner()));
        let n = images.len();
        let mut r = Ok(());
        for img in images {
            r = r.and(self.destroy_image(img));
        }
        self.launcher.close();
        let blocks = self.memory.release_all();
        log::debug!(
            "device {}: closed ({n} image(s) unloaded, {blocks} block(s) freed)",
            self.ord
        );
        r
    }

    /// `load_image`: checks the image against this device, loads it, returns its
    /// kernels, the table after their entries and the reverse-offload table.
    ///
    /// # Safety
    /// `target_data` is NULL or a `gcn_image_desc` (see `descriptor::read`).
    #[allow(clippy::type_complexity)]
    pub unsafe fn load_image(
        &self,
        target_data: *const c_void,
        want_rev: bool,
    ) -> Result<(Vec<Arc<Kernel>>, Vec<AddrPair>, Option<Vec<u64>>)> {
        // SAFETY: caller's contract.
        let (desc, co) = unsafe { check_image(target_data, Some(&self.name))? };
        let key = target_data as usize;
        if self
            .images
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|m| m.key == key)
        {
            return Err(Error::invalid(format!(
                "load_image: image {target_data:p} is already loaded"
            )));
        }
        let (nk, nv) = (desc.kernels.len(), desc.global_variable_count);
        let heap = self.launcher.new_heap()?;
        let (img, table) = Image::load(self.rt, self.agent, key, desc, &co, heap, want_rev)
            .inspect_err(|_| {
                // SAFETY: the heap just allocated, used by nothing.
                unsafe { (self.rt.hsa_memory_free)(heap as *mut c_void) };
            })?;
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
            let _ = img.destroy(self.rt);
            return Err(e);
        }
        let (kernels, rev) = (img.kernels.clone(), img.rev_table.clone());
        self.images
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(img);
        Ok((kernels, table, rev))
    }

    /// Runs the image's `_init_array` (`which` 0) or `_fini_array` (1), if it has it.
    fn run_cdtor(&self, img: &Image, which: usize) -> Result<()> {
        let Some(k) = &img.cdtors[which] else {
            return Ok(());
        };
        let e = self
            .launcher
            .launch(self.ord, None, k, 0, CDTOR_DIMS, Kind::Cdtor, false)?;
        self.launcher.finish(e);
        Ok(())
    }

    /// Runs `_fini_array`, then destroys the image.
    fn destroy_image(&self, img: Image) -> Result<()> {
        let r = self.run_cdtor(&img, 1);
        r.and(img.destroy(self.rt))
    }

    /// `unload_image`: destroys the image libgomp knows as `target_data`.
    pub fn unload_image(&self, target_data: *const c_void) -> Result<()> {
        let img = {
            let mut imgs = self.images.lock().unwrap_or_else(|e| e.into_inner());
            let i = imgs
                .iter()
                .position(|m| m.key == target_data as usize)
                .ok_or_else(|| {
                    Error::invalid(format!("unload_image: image {target_data:p} is not loaded"))
                })?;
            imgs.remove(i)
        };
        self.destroy_image(img)
    }
}
