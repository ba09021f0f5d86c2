//! The open device: what libgomp's `init_device` creates and `fini_device` closes.
//!
//! [`OpenDevice`] owns the device core ([`Core`], shared) and what runs on it: the
//! loaded images, the asynchronous-launch queue and the reverse-offload state. It is the
//! framework's device (`Registry<OpenDevice>`, `impl gomp_plugin::Device` here: images,
//! kernels, launches, close); its core implements `gomp_plugin::DeviceCore`
//! (`device/entry_points.rs`), which the memory entry points reach directly. It hands
//! each concept the parts it needs (the core, the queue, the reverse-offload state)
//! rather than the whole.

use crate::config::tune::PinKeepAt;
use crate::config::Config;
use crate::device::{serving, Core};
use crate::image::{Image, Kernel};
use crate::launch::async_queue::AsyncQueue;
use crate::launch::reverse::{self, Reverse};
use crate::launch::run;
use gomp_plugin::device::LoadedImage;
use gomp_plugin::error::Result;
use gomp_plugin::images::LoadedImages;
use gomp_plugin::libgomp::target_args::LaunchRequest;
use gomp_plugin::settings::ProcessSettings;
use gomp_plugin::DeviceCore;
use std::ffi::c_void;
use std::sync::Arc;

/// One device opened by libgomp.
///
/// Owns: the device core (`Arc<Core>`: context, memory, pools), the loaded images,
/// the async-launch queue with its completion thread, and the reverse-offload mailbox
/// with its service thread.
///
/// Held by: the framework's registry (`Arc<OpenDevice>`) from `init_device` until
/// `fini_device`, and by every libgomp call in flight on the device. The plugin's own
/// threads (completion, reverse offload, staging) and OpenACC queues and thread data
/// never hold it: they hold the core and their own shared state, so nothing below this
/// type refers back to it.
///
/// Threading: any libgomp thread may call it at once; the image list is locked, the
/// queue and the reverse-offload state are thread-safe, the core is shared.
pub struct OpenDevice {
    /// The device core, shared with the plugin's threads and OpenACC queues.
    core: Arc<Core>,
    /// Loaded images (the framework's list: found by libgomp's key, unloaded in reverse
    /// load order at close), as gcn's.
    images: LoadedImages<Image>,
    /// Asynchronous launches (`nowait`) and their completion thread.
    async_queue: AsyncQueue,
    /// Reverse-offload mailbox and service thread.
    reverse: Reverse,
}

impl OpenDevice {
    /// Opens device `ord` (see [`Core::open`]); no image is loaded, no thread runs.
    pub fn open(ord: i32) -> Result<OpenDevice> {
        Ok(OpenDevice {
            core: Arc::new(Core::open(ord, Config::process())?),
            images: LoadedImages::new(),
            async_queue: AsyncQueue::default(),
            reverse: Reverse::default(),
        })
    }

    /// The device core, shared with the plugin's threads and OpenACC queues.
    #[inline]
    pub fn shared(&self) -> &Arc<Core> {
        &self.core
    }

    /// Keeps what the device owns as it is until the process ends, also once the
    /// registry has dropped this device: the images stay loaded (a kernel of theirs
    /// still runs), the completion thread and async streams stay. The reverse-offload
    /// mailbox and the core are held by the threads using them.
    fn leave_to_exit(&self) {
        self.images.leave_to_exit();
        self.async_queue.leave_to_exit();
    }
}

impl gomp_plugin::Device for OpenDevice {
    type Kernel = Kernel;
    type Core = Core;

    fn core(&self) -> &Core {
        &self.core
    }

    /// Closes the device (`fini_device`), in this order: the async queue (its
    /// completion thread completes everything outstanding, then its streams go), the
    /// device's idle events, reverse offload (service thread, mailbox), the images
    /// (in reverse load order: destructors, then modules), then the core ([`Core::close`]: memory, staging,
    /// streams, context). Not while this thread serves a reverse-offload request: the
    /// requesting kernel still waits for its answer, so everything is left as it is to
    /// process exit ([`OpenDevice::leave_to_exit`]).
    fn close(&self) -> Result<()> {
        if serving::serving_request() {
            // A reverse-offload host function ended the program (`exit`, Fortran
            // `stop`): the requesting kernel still waits for its answer, so nothing
            // that waits for kernels may run. The process is going away.
            log::debug!(
                "device {}: finalized from a reverse-offload host function; left to process exit",
                self.core.ord()
            );
            self.leave_to_exit();
            return Ok(());
        }
        self.core.activate()?;
        // Deferred copies first: their events go back to the pool destroyed below.
        let settled = self.core.launch().settle();
        self.async_queue.shutdown();
        // The device's idle events (completion of `nowait` launches, OpenACC queues).
        self.core.launch().events().destroy_all();
        self.reverse.shutdown();
        let unloaded = self.images.unload_all(|img| img.unload());
        self.core.close(settled.err().or(unloaded.err()))
    }

    unsafe fn load_image(
        self: &Arc<Self>,
        version: u32,
        data: *const c_void,
        want_rev: bool,
        host_ind_fns: *const u64,
    ) -> Result<LoadedImage<Kernel>> {
        let dev = &self.core;
        // SAFETY: forwarded caller guarantees.
        let (img, table) = self.core.entry("load_image", || unsafe {
            let eager = want_rev || !dev.config().tune.lazykernels;
            Image::load(dev, version, data.cast(), host_ind_fns, eager, want_rev)
        })?;
        let rev_fn_table = if want_rev {
            match reverse::setup(dev, &self.reverse, &img, img.fns.len()) {
                Ok(t) => t,
                Err(e) => {
                    // Released as a failed load is: after the device's deferred copies.
                    if let Err(r) = img.release() {
                        log::debug!("device {}: releasing the image: {r}", dev.ord());
                    }
                    return Err(e);
                }
            }
        } else {
            std::ptr::null_mut()
        };
        log::debug!(
            "device {}: loaded image {:#x} ({} kernel(s), {} variable(s))",
            dev.ord(),
            img.key,
            img.fns.len(),
            table.len() - 1
        );
        let kernels = img.fns.clone();
        self.images.add(img.key, img);
        if dev.config().tune.pinkeep == PinKeepAt::Load {
            dev.memory().keep_page_locked(dev.device());
        }
        Ok(LoadedImage {
            kernels,
            table,
            rev_fn_table,
        })
    }

    fn unload_image(&self, data: *const c_void) -> Result<()> {
        let img = self.images.remove(data as usize)?;
        // The module's memory goes: deferred copies into its globals complete first.
        self.core.launch().settle()?;
        img.unload()
    }

    fn run(&self, kernel: &Arc<Kernel>, req: &LaunchRequest) -> Result<()> {
        self.core
            .entry("run", || run::run(&self.core, &self.reverse, kernel, req))
    }

    fn run_async(
        self: &Arc<Self>,
        kernel: &Arc<Kernel>,
        req: &LaunchRequest,
        async_data: *mut c_void,
    ) -> Result<()> {
        self.core.entry("async_run", || {
            run::run_async(
                &self.core,
                &self.async_queue,
                &self.reverse,
                kernel,
                req,
                async_data,
            )
        })
    }
}
