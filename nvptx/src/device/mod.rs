//! The device core: one opened CUDA device ([`Core`]), made of parts it owns, one per
//! responsibility: its context and properties ([`context`]), its settings and
//! run-time switches ([`settings`], over [`crate::config`]), its memory ([`memory`],
//! over [`crate::memory`] and the pinned pool of [`crate::host`]), its copies ([`copy`]:
//! the copy paths and their buffers; [`copy_order`]: the order of deferred copies) and
//! its launch resources ([`launch_resources`]: the pools of idle streams and events
//! from [`crate::cuda::pools`], each thread's stream) every other concept borrows.
//! What runs on the device (loaded images, async launches, reverse offload) is above
//! this layer and borrows the core; it is not named here.
//!
//! Threading: a `Core` is shared (`Arc`) by the open device that owns it and by every
//! thread that works on it (libgomp's threads through the open device, OpenACC queues
//! and thread data, the completion, reverse-offload and staging threads); its mutable
//! state is behind the locks of the parts it owns. Any thread may use it after
//! [`Core::activate`] made the context current there.

pub mod context;
pub mod copy;
pub mod copy_order;
pub mod entry_points;
pub mod host_memory;
pub mod launch_resources;
pub mod memory;
pub mod serving;
pub mod settings;

use crate::config::tune::{PinKeepAt, PoolWarm, ThreadStream};
use crate::config::Config;
use crate::cuda::pools::events::EventPool;
use crate::cuda::pools::streams::StreamPool;
use crate::cuda::pools::thread_streams::ThreadStreams;
use crate::cuda::safe::context as cu_context;
use crate::cuda::safe::{query, Stream};
use crate::cuda::sys::*;
use crate::device::context::make_current;
use crate::device::copy::Copies;
use crate::device::copy_order::{CopyOrder, Waited};
use crate::host::kernel_copy::KernelCopy;
use crate::host::ring::Ring;
use crate::host::ThreadHost;
use crate::memory::pool::Pool;
use crate::memory::stacks::StackCache;
use crate::observe::{info, DeviceObserve};
use context::DeviceContext;
use gomp_plugin::blocks::Blocks;
use gomp_plugin::error::{Error, Result};
use launch_resources::LaunchResources;
use memory::Memory;
use settings::Settings;
use std::sync::Arc;

pub use context::{attr_or_zero, Props};

/// An initialised device, the core every concept above borrows: owned parts, one per
/// responsibility (context, settings, memory, copies, launch resources), and the
/// profile's recorder. Shared (`Arc`) by all threads; interior state is locked inside
/// the parts.
pub struct Core {
    /// Which device, its properties and its context.
    context: DeviceContext,
    /// Settings and run-time switches.
    settings: Settings,
    /// Device memory and page-locked host memory.
    memory: Memory,
    /// The copy engine's buffers and the order of deferred copies.
    copies: Copies,
    /// Streams and events.
    launch: LaunchResources,
    /// The profile's and trace's recorder (`None` unless `GOMP_NVPTX_PROFILE` or
    /// `GOMP_NVPTX_TRACE` is set: every hook is a check of this field).
    observe: Option<Arc<DeviceObserve>>,
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
        let cu_dev = context.cu_dev;
        let pools = attr_or_zero(cu_dev, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
        let pool = Pool::create(cu_dev, pools)?;
        let config = config.clone();
        let observe = DeviceObserve::open(ord, &context.props.name, &config.observe);
        let dev = Core {
            copies: Copies::new(&config),
            launch: LaunchResources::new(config.tune.tstream),
            memory: Memory::new(&context, pool, &config),
            settings: Settings::new(config),
            context,
            observe,
        };
        dev.start()?;
        dev.report_opened();
        Ok(dev)
    }

    /// What an opened device does before its first use (context current): the pool's
    /// warm-up, the trace's epoch, the context's stack and heap limits, the kept
    /// page-locked block's thread (`GOMP_NVPTX_TUNE=pinkeep`).
    fn start(&self) -> Result<()> {
        if let (Some(p), PoolWarm::Open) = (&self.memory.pool, self.config().tune.poolwarm) {
            p.warm_up(self.context.ctx);
        }
        if let Some(o) = &self.observe {
            // The epoch device times are placed from (the stream is waited for).
            if self.on_stream(|s| o.record_epoch(s)).is_ok() {
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
            self.keep_page_locked();
        }
        Ok(())
    }

    /// Starts the kept page-locked block's thread (`GOMP_NVPTX_TUNE=pinkeep`) unless it
    /// was started before; joined at close.
    pub fn keep_page_locked(&self) {
        self.memory.pin_keep.start(self.ord(), self.context.ctx);
    }

    /// The `GOMP_DEBUG` line and the `GOMP_NVPTX_INFO` lines of an opened device.
    fn report_opened(&self) {
        let owns_primary = self.context.owns_primary();
        let props = &self.context.props;
        log::debug!(
            "device {}: {} (sm_{}{}, {} SMs, {} kHz), {} context, {}",
            self.context.ord,
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
            if self.memory.pool.is_some() {
                "stream-ordered memory pool"
            } else {
                "cuMemAlloc (no memory pools)"
            }
        );
        info::opened(
            &self.config().observe,
            &info::Opened {
                ord: self.context.ord,
                name: &props.name,
                cc: props.cc,
                sms: props.num_sms,
                driver: query::driver_version().unwrap_or(0),
                soft_stack: self.config().soft_stack,
                heap: self.config().heap,
                pool: self.memory.pool.is_some(),
            },
            &self.config().jit_cache,
            &self.config().link_cache_line(),
        );
    }

    /// The device's CUDA context (borrowed or primary; alive until `close`).
    pub fn context(&self) -> CUcontext {
        self.context.ctx
    }

    /// libgomp's index of this device within the plugin.
    #[inline]
    pub fn ord(&self) -> i32 {
        self.context.ord
    }

    /// The CUDA device.
    #[inline]
    pub fn cu_dev(&self) -> CUdevice {
        self.context.cu_dev
    }

    /// The device's properties, read at open.
    #[inline]
    pub fn props(&self) -> &Props {
        &self.context.props
    }

    /// The device's settings (the process's, copied at open).
    #[inline]
    pub fn config(&self) -> &Config {
        &self.settings.config
    }

    /// Idle events (completion of `nowait` launches, OpenACC queue callbacks and
    /// serialisation).
    #[inline]
    pub fn events(&self) -> &EventPool {
        &self.launch.events
    }

    /// Idle streams (copies by kernel during reverse offload).
    #[inline]
    pub fn streams(&self) -> &StreamPool {
        &self.launch.streams
    }

    /// Each host thread's stream and what the thread keeps beside it.
    #[inline]
    pub fn thread_streams(&self) -> &ThreadStreams<ThreadHost> {
        &self.launch.thread_streams
    }

    /// Idle soft-stack blocks (shared with the idle trimmer).
    #[inline]
    pub fn stacks(&self) -> &Arc<StackCache> {
        &self.memory.stacks
    }

    /// Live blocks from `alloc`.
    #[inline]
    pub fn blocks(&self) -> &Blocks {
        &self.memory.blocks
    }

    /// Streams with deferred host-to-device copies in flight, and the rule that orders
    /// everything else after them.
    #[inline]
    pub fn copy_order(&self) -> &CopyOrder {
        &self.copies.order
    }

    /// Copies by kernel for device-heap memory during reverse offload.
    #[inline]
    pub fn kernel_copy(&self) -> &KernelCopy {
        &self.copies.kernel_copy
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

    /// Runs `f` on the calling thread's stream, ordered after deferred copies on other
    /// streams, then waits for the stream (see [`Core::on`]).
    #[inline]
    pub fn on_stream<T>(&self, f: impl FnOnce(Stream) -> Result<T>) -> Result<T> {
        self.on(self.launch.thread_streams.stream()?, f)
    }

    /// Runs `f` on `s` (a stream of the device), after making `s` wait for the deferred
    /// copies of other streams, then waits for `s`; the error of `f` comes first, then
    /// the synchronisation's. Whatever `s` waited for is then known complete.
    #[inline]
    pub fn on<T>(&self, s: Stream, f: impl FnOnce(Stream) -> Result<T>) -> Result<T> {
        // A stream of the device's context (caller).
        self.on_with(s, f, |s| s.synchronize())
    }

    /// [`Core::on`] with `s` waited for by the calling thread's `ring`
    /// ([`Ring::wait`]: by its flag where `GOMP_NVPTX_TUNE=syncwait` says so for a
    /// kernel launch (`kernel`) or a copy, else synchronized).
    ///
    /// # Safety
    /// `ring` must be the calling thread's lane's; `s` a stream of the device.
    pub unsafe fn on_waited<T>(
        &self,
        s: Stream,
        ring: &Ring,
        kernel: bool,
        f: impl FnOnce(Stream) -> Result<T>,
    ) -> Result<T> {
        let flag = self.config().tune.syncwait.by_flag(kernel);
        // SAFETY: forwarded caller guarantee; the context is current (a stream of the
        // device is in use on this thread).
        self.on_with(s, f, |s| unsafe { ring.wait(s, flag) })
    }

    /// [`Core::on`] with `s` waited for by `wait` (which returns once the stream's work
    /// has run, or with its error), then noted as synchronised on the calling thread's
    /// `ring` ([`Ring::synced`]).
    ///
    /// # Safety
    /// `ring` must be the calling thread's lane's; `s` a stream of the device.
    pub unsafe fn on_waited_by<T>(
        &self,
        s: Stream,
        ring: &Ring,
        f: impl FnOnce(Stream) -> Result<T>,
        wait: impl FnOnce(Stream) -> Result<()>,
    ) -> Result<T> {
        self.on_with(s, f, |s| {
            wait(s)?;
            // SAFETY: the calling thread's ring (caller), after `s` has run its work.
            unsafe { ring.synced(s) };
            Ok(())
        })
    }

    /// [`Core::on`] with the stream waited for by `wait` (which returns once the
    /// stream's work has run, or with its error).
    fn on_with<T>(
        &self,
        s: Stream,
        f: impl FnOnce(Stream) -> Result<T>,
        wait: impl FnOnce(Stream) -> Result<()>,
    ) -> Result<T> {
        let w = self.order(s)?;
        let out = f(s);
        let synced = wait(s);
        self.copies.order.synced(&w, &self.launch.events);
        let v = out?;
        synced?;
        Ok(v)
    }

    /// Makes future work on `s` (a stream of the device) wait for every deferred copy
    /// queued on another stream (rule 2 of `copy_order`); returns what it waits for.
    #[inline]
    pub fn order(&self, s: Stream) -> Result<Waited> {
        if self.copies.order.is_clear() {
            return Ok(Waited::default());
        }
        self.copies
            .order
            .order(s, self.after_legacy(s), &self.launch.events)
    }

    /// Waits on the host for every deferred copy (rule 3 of `copy_order`).
    #[inline]
    pub fn settle(&self) -> Result<()> {
        self.copies.order.settle(&self.launch.events)
    }

    /// Whether CUDA itself orders work on `s` after CUDA's legacy default stream: the
    /// legacy stream itself and blocking thread streams. (OpenACC queue streams are
    /// blocking too; `AccQueue` says so itself.)
    #[inline]
    fn after_legacy(&self, s: Stream) -> bool {
        let ts = &self.launch.thread_streams;
        s == Stream::LEGACY || (ts.blocking() && ts.is_mine(s))
    }

    /// The stream a synchronous copy of the calling thread goes on: its own stream, or
    /// CUDA's legacy default stream once OpenACC is in use (not while serving a
    /// reverse-offload request: the requesting kernel may be ordered before it).
    #[inline]
    pub fn copy_stream(&self) -> Result<Stream> {
        self.copy_stream_or(|| self.launch.thread_streams.stream())
    }

    /// [`Core::copy_stream`] with the calling thread's own stream from `own` (for a
    /// copy that has the thread's lane at hand).
    #[inline]
    pub fn copy_stream_or(&self, own: impl FnOnce() -> Result<Stream>) -> Result<Stream> {
        if self.openacc_in_use() && !serving::serving_request() {
            return Ok(Stream::LEGACY);
        }
        own()
    }

    /// The stream a deferred host-to-device copy of the calling thread goes on.
    #[inline]
    pub fn deferred_stream(&self) -> Result<Stream> {
        self.deferred_stream_or(|| self.launch.thread_streams.stream())
    }

    /// [`Core::deferred_stream`] with the calling thread's own stream from `own`.
    #[inline]
    pub fn deferred_stream_or(&self, own: impl FnOnce() -> Result<Stream>) -> Result<Stream> {
        if self.openacc_in_use() || self.settings.tstream == ThreadStream::Legacy {
            return Ok(Stream::LEGACY);
        }
        own()
    }

    /// Whether a host-to-device copy of `n` bytes may return before its DMA has ended:
    /// small enough, not serving a reverse-offload request (the requesting kernel reads
    /// the bytes as soon as the request is answered) and no `targetsync` interop stream
    /// alive.
    #[inline]
    pub fn may_defer(&self, n: usize) -> bool {
        n <= self.config().tune.defer
            && !self.copies.interop_stream_alive()
            && !serving::serving_request()
    }

    /// Whether an interop `targetsync` stream came into being (checked after a deferred
    /// copy was recorded: that copy then waits, see `Core::interop`).
    #[inline]
    pub fn interop_stream_alive(&self) -> bool {
        self.copies.interop_stream_alive()
    }

    /// Counts an interop `targetsync` stream in (`true`) or out.
    pub fn count_interop_stream(&self, alive: bool) {
        self.copies.count_interop_stream(alive);
    }

    /// The profile's and trace's recorder, if either is on.
    #[inline]
    pub fn observe(&self) -> Option<&DeviceObserve> {
        self.observe.as_deref()
    }

    /// True once the program uses OpenACC on this device.
    pub fn openacc_in_use(&self) -> bool {
        self.settings.openacc_in_use()
    }

    /// Notes that a kernel of the device has completed (the launch paths call it after
    /// each completion; one relaxed load when already noted). Any thread.
    #[inline]
    pub fn note_kernel_done(&self) {
        self.settings.note_kernel_done();
    }

    /// Notes that the program uses OpenACC on this device: synchronous copies then go
    /// through CUDA's legacy default stream, so they stay ordered after the work of
    /// OpenACC queues as they are with the stock plugin.
    pub fn use_openacc(&self) {
        self.settings.use_openacc();
    }

    /// Runs a synchronous copy `f` on the calling thread's copy stream
    /// ([`Core::copy_stream`]) and waits for it.
    pub fn on_copy_stream(&self, f: impl FnOnce(Stream) -> Result<()>) -> Result<()> {
        self.on(self.copy_stream()?, f)
    }

    /// Releases everything the core holds: cached stacks, memory caches and pool,
    /// staging, the copy kernel, pinned host memory, streams, and the primary context
    /// reference. The last step of closing the device: the caller has made the context
    /// current and stopped and unloaded everything above the core first (async
    /// launches, idle events, reverse offload, images). `first_err` is the first error
    /// of those steps: it is returned rather than a later one, except that a failure to
    /// release the primary context is returned in any case.
    pub fn close(&self, mut first_err: Option<Error>) -> Result<()> {
        if let Err(e) = self.settle() {
            first_err.get_or_insert(e);
        }
        if let Some(o) = self.observe() {
            o.close();
        }
        self.close_memory();
        self.memory.pin_keep.release();
        self.copies.destroy();
        if let Err(e) = self.memory.pinned.destroy() {
            first_err.get_or_insert(e);
        }
        self.launch.destroy();
        self.context.release()?;
        first_err.map_or(Ok(()), Err)
    }
}
