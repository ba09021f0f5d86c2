//! The device core itself ([`Core`]): one opened CUDA device composed of its parts
//! ([`Parts`]: context, settings, memory, the copy paths' buffers, launch resources and
//! the profile's recorder) and its copy engine ([`Copies`], which is given the parts).
//! It keeps only what spans the parts: opening and closing the device (each part's
//! start and end in their order), the accessors the concepts above borrow the parts
//! through, and the entry spans; the parts' behaviour is theirs.
//!
//! Threading: shared (`Arc`) by every thread that works on the device; its mutable
//! state is behind the locks of the parts it owns (see `device`).

use crate::config::tune::{PinKeepAt, PoolWarm};
use crate::config::Config;
use crate::cuda::safe::context as cu_context;
use crate::cuda::safe::query;
use crate::cuda::sys::*;
use crate::device::copy::{Buffers, Copies, ThreadBuffers};
use crate::device::device_context::{attr_or_zero, DeviceContext, Props};
use crate::device::launch_resources::LaunchResources;
use crate::device::memory::Memory;
use crate::device::parts::Parts;
use crate::device::settings::Settings;
use crate::device_pool::pool::Pool;
use crate::observe::{info, DeviceObserve};
use gomp_plugin::error::{Error, Result};

/// An initialised device, the core every concept above borrows: owned parts, one per
/// responsibility (context, settings, memory, copies, launch resources), and the
/// profile's recorder. Shared (`Arc`) by all threads; interior state is locked inside
/// the parts.
pub struct Core {
    /// Context, settings, memory, the copy paths' buffers, launch resources and the
    /// recorder: what the copy engine is given.
    parts: Parts<Buffers, ThreadBuffers>,
    /// The copy engine: the paths each kind of copy is offered to.
    copies: Copies,
}

// SAFETY: the context handle may be made current on any thread; all mutable state is
// behind mutexes.
unsafe impl Send for Core {}
// SAFETY: as above.
unsafe impl Sync for Core {}

impl Core {
    /// Opens device `ord` with the process's settings `config` (the core keeps a copy):
    /// borrows the calling thread's current context when it belongs to this device, else
    /// retains the device's primary context (shared with the CUDA runtime and other
    /// libraries); leaves that context current.
    pub fn open(ord: i32, config: &Config) -> Result<Core> {
        let context = DeviceContext::open(ord)?;
        let cu_dev = context.cu_dev();
        let pools = attr_or_zero(cu_dev, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
        let pool = Pool::create(cu_dev, pools)?;
        let config = config.clone();
        let observe = DeviceObserve::open(ord, &context.props().name, &config.observe);
        let dev = Core {
            copies: Copies::new(&config),
            parts: Parts {
                buffers: Copies::buffers(&config),
                launch: LaunchResources::new(config.tune.tstream),
                memory: Memory::new(&context, pool, &config),
                settings: Settings::new(config),
                context,
                observe,
            },
        };
        dev.start()?;
        dev.report_opened();
        Ok(dev)
    }

    /// What an opened device does before its first use (context current): the pool's
    /// warm-up, the trace's epoch, the context's stack and heap limits, the kept
    /// page-locked block's thread (`GOMP_NVPTX_TUNE=pinkeep`).
    fn start(&self) -> Result<()> {
        if self.config().tune.poolwarm == PoolWarm::Open {
            self.parts.memory.warm_up(&self.parts.context);
        }
        if let Some(o) = &self.parts.observe {
            // The epoch device times are placed from (the stream is waited for).
            if self.parts.launch.on_stream(|s| o.record_epoch(s)).is_ok() {
                o.epoch_done();
            }
        }
        if let Some(n) = self.config().native_stack {
            cu_context::set_limit(CU_LIMIT_STACK_SIZE, n)?;
        }
        if let Some(n) = self.config().heap {
            // Before any launch.
            cu_context::set_limit(CU_LIMIT_MALLOC_HEAP_SIZE, n)?;
        }
        // Last, so that an open that fails leaves no thread (close joins it).
        if self.config().tune.pinkeep == PinKeepAt::Open {
            self.parts.memory.keep_page_locked(&self.parts.context);
        }
        Ok(())
    }

    /// The `GOMP_DEBUG` line and the `GOMP_NVPTX_INFO` lines of an opened device.
    fn report_opened(&self) {
        let owns_primary = self.parts.context.owns_primary();
        let props = self.parts.context.props();
        log::debug!(
            "device {}: {} (sm_{}{}, {} SMs, {} kHz), {} context, {}",
            self.ord(),
            props.name,
            props.cc.0,
            props.cc.1,
            props.num_sms,
            props.clock_khz,
            if owns_primary {
                "primary"
            } else {
                "borrowed current"
            },
            if self.parts.memory.has_pool() {
                "stream-ordered memory pool"
            } else {
                "cuMemAlloc (no memory pools)"
            }
        );
        info::opened(
            &self.config().observe,
            &info::Opened {
                ord: self.ord(),
                name: &props.name,
                cc: props.cc,
                sms: props.num_sms,
                driver: query::driver_version().unwrap_or(0),
                soft_stack: self.config().soft_stack,
                heap: self.config().heap,
                pool: self.parts.memory.has_pool(),
            },
            &self.config().jit_cache,
            &crate::cache::opened::describe(&self.config().link_cache),
        );
    }

    /// Which device, its properties and its context (the context part).
    #[inline]
    pub fn device(&self) -> &DeviceContext {
        &self.parts.context
    }

    /// The device's CUDA context (borrowed or primary; alive until `close`).
    #[inline]
    pub fn context(&self) -> CUcontext {
        self.parts.context.ctx()
    }

    /// libgomp's index of this device within the plugin.
    #[inline]
    pub fn ord(&self) -> i32 {
        self.parts.context.ord()
    }

    /// The device's properties, read at open.
    #[inline]
    pub fn props(&self) -> &Props {
        self.parts.context.props()
    }

    /// The device's settings (the process's, copied at open).
    #[inline]
    pub fn config(&self) -> &Config {
        self.parts.settings.config()
    }

    /// The settings part: settings and run-time switches (OpenACC in use, a kernel
    /// done).
    #[inline]
    pub fn settings(&self) -> &Settings {
        &self.parts.settings
    }

    /// The memory part: device memory, soft stacks, live blocks, pinned host memory.
    #[inline]
    pub fn memory(&self) -> &Memory {
        &self.parts.memory
    }

    /// The copy engine.
    #[inline]
    pub fn copies(&self) -> &Copies {
        &self.copies
    }

    /// The launch resources: streams, events and the order of deferred copies.
    #[inline]
    pub fn launch(&self) -> &LaunchResources<ThreadBuffers> {
        &self.parts.launch
    }

    /// The profile's and trace's recorder, if either is on.
    #[inline]
    pub fn observe(&self) -> Option<&DeviceObserve> {
        self.parts.observe.as_deref()
    }

    /// The device's parts, which copies are given ([`Copies::host2dev`] and kin).
    #[inline]
    pub fn parts(&self) -> &Parts<Buffers, ThreadBuffers> {
        &self.parts
    }

    /// Allocates `size` device bytes ([`Memory::alloc`], its chunks from
    /// [`Memory::alloc_retry`] with this device's parts).
    pub fn alloc(&self, size: usize) -> Result<CUdeviceptr> {
        self.parts.memory.alloc(size, self.observe(), |bytes| {
            let (m, o) = (&self.parts.memory, self.observe());
            m.alloc_retry(
                bytes,
                &self.parts.context,
                &self.parts.settings,
                &self.parts.launch,
                o,
            )
        })
    }

    /// Frees a block from [`Core::alloc`] ([`Memory::free_block`] with this device's
    /// parts). NULL is accepted and ignored; an address that does not start a block is
    /// "invalid device address".
    pub fn free(&self, p: CUdeviceptr) -> Result<()> {
        self.parts
            .memory
            .free_block(p, &self.parts.settings, &self.parts.launch, self.observe())
            .map(|_| ())
    }

    /// Runs entry point `name` (`f`), recorded as a host span when tracing or
    /// profiling; otherwise just `f` after one check.
    #[inline]
    pub fn entry<T>(&self, name: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        match self.observe() {
            None => f(),
            Some(o) => {
                let t0 = crate::observe::now();
                let r = f();
                o.entry(name, t0);
                r
            }
        }
    }

    /// Releases everything the core holds: cached stacks, memory caches and pool,
    /// staging, the copy kernel, pinned host memory, streams, and the primary context
    /// reference. The last step of closing the device: the caller has made the context
    /// current and stopped and unloaded everything above the core first (async
    /// launches, idle events, reverse offload, images). `first_err` is the first error
    /// of those steps: it is returned rather than a later one, except that a failure to
    /// release the primary context is returned in any case.
    pub fn close(&self, mut first_err: Option<Error>) -> Result<()> {
        if let Err(e) = self.parts.launch.settle() {
            first_err.get_or_insert(e);
        }
        if let Some(o) = self.observe() {
            o.close();
        }
        self.parts.memory.close(self.ord(), &self.parts.launch);
        self.parts.buffers.destroy();
        if let Err(e) = self.parts.memory.destroy_pinned() {
            first_err.get_or_insert(e);
        }
        self.parts.launch.destroy();
        self.parts.context.release()?;
        first_err.map_or(Ok(()), Err)
    }
}
