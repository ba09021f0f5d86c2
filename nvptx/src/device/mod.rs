//! The device core: one opened CUDA device ([`Core`]) with its context, properties,
//! settings ([`crate::config`]), its memory and copies, and the pools of idle streams and
//! events (from [`crate::cuda::pools`]) every other concept borrows. The
//! device's memory lives in [`crate::memory`], host-side memory in [`crate::host`].
//! What runs on the device (loaded images, async launches, reverse offload) is above
//! this layer and borrows the core; it is not named here.
//!
//! Threading: a `Core` is shared (`Arc`) by the open device that owns it and by every
//! thread that works on it (libgomp's threads through the open device, OpenACC queues
//! and thread data, the completion, reverse-offload and staging threads); its mutable
//! state is behind the locks of the parts it owns. Any thread may use it after
//! [`Core::activate`] made the context current there.

pub mod copy;
pub mod copy_order;
pub mod entry_points;
pub mod host_memory;
pub mod memory;
pub mod serving;

use crate::config::tune::{PoolWarm, ThreadStream};
use crate::config::Config;
use crate::cuda::pools::events::EventPool;
use crate::cuda::pools::streams::StreamPool;
use crate::cuda::pools::thread_streams::ThreadStreams;
use crate::cuda::safe::context::{self, PrimaryContext};
use crate::cuda::safe::{query, Stream};
use crate::cuda::sys::*;
use crate::device::copy_order::{CopyOrder, Waited};
use crate::host::bounce::Bounce;
use crate::host::kernel_copy::KernelCopy;
use crate::host::memory::{HostChunks, HostPool};
use crate::host::staging::Staging;
use crate::host::ThreadHost;
use crate::memory::large_blocks::LargeBlocks;
use crate::memory::pool::Pool;
use crate::memory::small_blocks::SmallBlocks;
use crate::memory::stacks::StackCache;
use crate::observe::{info, DeviceObserve};
use gomp_plugin::blocks::Blocks;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::sync::Lock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Device facts read once at initialisation.
#[derive(Clone, Debug, Default)]
pub struct Props {
    /// Marketing name.
    pub name: String,
    /// Streaming multiprocessors.
    pub num_sms: i32,
    /// 32-bit registers per SM.
    pub regs_per_sm: i32,
    /// Core clock in kHz (0 if the driver no longer reports it).
    pub clock_khz: i32,
    /// Compute capability.
    pub cc: (i32, i32),
    /// Largest dynamic shared memory a block may opt in to.
    pub max_smem_optin: i32,
    /// Device memory in bytes (bounds the soft stacks a launch may take).
    pub total_mem: usize,
}

/// An initialised device, the core every concept above borrows. Shared (`Arc`) by all
/// threads; interior state is locked.
pub struct Core {
    /// libgomp's index of this device within the plugin.
    pub ord: i32,
    /// The CUDA device.
    pub cu_dev: CUdevice,
    /// The context every thread makes current (borrowed or primary), alive until
    /// `close`; kept as a plain handle so that `activate` takes no lock.
    ctx: CUcontext,
    /// The primary-context reference this device holds (`None`: it borrows the
    /// program's current context), released last at `close`.
    primary: Mutex<Option<PrimaryContext>>,
    /// Properties.
    pub props: Props,
    /// Settings from the environment.
    pub config: Config,
    /// Idle streams (copies by kernel during reverse offload).
    pub streams: StreamPool,
    /// Each host thread's stream (its synchronous copies and launches), its ring for
    /// small copies and its read-ahead of regions' results.
    pub thread_streams: ThreadStreams<ThreadHost>,
    /// Streams with deferred host-to-device copies in flight, and the rule that orders
    /// everything else after them.
    pub copy_order: CopyOrder,
    /// Interop objects with a `targetsync` stream alive on the device: while there are
    /// any, host-to-device copies complete before returning (the program may queue work
    /// on such a stream at any time, out of the plugin's sight).
    interop_streams: AtomicUsize,
    /// Idle events (completion of `nowait` launches, OpenACC queue callbacks and
    /// serialisation).
    pub events: EventPool,
    /// Idle soft-stack blocks (shared with the idle trimmer).
    pub stacks: Arc<StackCache>,
    /// The device-memory pool (`None`: plain cuMemAlloc/cuMemFree).
    pub pool: Option<Pool>,
    /// Live blocks from `alloc`.
    pub blocks: Blocks,
    /// Free small blocks.
    pub small: SmallBlocks,
    /// Freed large blocks kept for reuse.
    pub large: LargeBlocks,
    /// The staging engine (page-locked buffers, lane threads) for large pageable copies.
    pub staging: Staging,
    /// Page-locked bounce buffers for small pageable copies.
    pub bounce: Bounce,
    /// Copies by kernel for device-heap memory during reverse offload.
    pub kernel_copy: KernelCopy,
    /// Pooled page-locked host memory (`page_locked_host_alloc`).
    pub pinned: HostPool,
    /// Set once the program uses OpenACC on this device: synchronous copies then go
    /// through CUDA's legacy default stream, so they stay ordered after the work of
    /// OpenACC queues as they are with the stock plugin.
    openacc: AtomicBool,
    /// Set once a kernel of the device has completed ([`Core::note_kernel_done`]);
    /// `GOMP_NVPTX_TUNE=poolwarm=later` starts the pool's warm-up only then.
    kernel_done: AtomicBool,
    /// Where deferred copies go and how the threads' streams are made.
    tstream: ThreadStream,
    /// The profile's and trace's recorder (`None` unless `GOMP_NVPTX_PROFILE` or
    /// `GOMP_NVPTX_TRACE` is set: every hook is a check of this field).
    observe: Option<Arc<DeviceObserve>>,
}

// SAFETY: the context handle may be made current on any thread; all mutable state is
// behind mutexes.
unsafe impl Send for Core {}
// SAFETY: as above.
unsafe impl Sync for Core {}

fn attr(dev: CUdevice, a: CUdevice_attribute) -> Result<i32> {
    Ok(query::attribute(dev, a)?)
}

/// Reads one device attribute, or 0 if the driver does not know it.
pub fn attr_or_zero(dev: CUdevice, a: CUdevice_attribute) -> i32 {
    attr(dev, a).unwrap_or(0)
}

impl Props {
    /// Reads the properties of CUDA device `cu_dev`.
    fn read(cu_dev: CUdevice) -> Result<Props> {
        let name = query::name(cu_dev)?;
        Ok(Props {
            name: name
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8 as char)
                .collect(),
            num_sms: attr(cu_dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            regs_per_sm: attr(cu_dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
            clock_khz: attr_or_zero(cu_dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
            cc: (
                attr(cu_dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(cu_dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            max_smem_optin: attr_or_zero(
                cu_dev,
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            ),
            total_mem: query::total_mem(cu_dev)?,
        })
    }
}

/// The context a device opened on CUDA device `cu_dev` uses: the calling thread's
/// current context when the program made one for this device (borrowed: `None`), else
/// the device's primary context, retained (also when left current by an earlier
/// open/close, when it may have been reset). A stale current context fails
/// cuCtxGetDevice, which is only asked when a context is current.
fn context_for(cu_dev: CUdevice) -> Result<(CUcontext, Option<PrimaryContext>)> {
    let primary = PrimaryContext::retain(cu_dev)?;
    let cur = context::current()?;
    let borrow = !cur.is_null()
        && cur != primary.handle()
        && context::current_device().is_ok_and(|d| d == cu_dev);
    if borrow {
        // Balanced with the retain above; the primary context is not used.
        primary.release()?;
        return Ok((cur, None));
    }
    Ok((primary.handle(), Some(primary)))
}

/// Makes `ctx` current on the calling thread, if it is not already.
fn make_current(ctx: CUcontext) -> Result<()> {
    if context::current()? != ctx {
        // SAFETY: a live context (the caller's device keeps it alive until `close`).
        unsafe { context::set_current(ctx) }?;
    }
    Ok(())
}

impl Core {
    /// Opens device `ord`: borrows the calling thread's current context when it belongs
    /// to this device, else retains the device's primary context (shared with the CUDA
    /// runtime and other libraries); leaves that context current.
    pub fn open(ord: i32) -> Result<Core> {
        let cu_dev = query::device(ord)?;
        let (ctx, primary) = context_for(cu_dev)?;
        let props = Props::read(cu_dev)?;
        make_current(ctx)?;
        let pools = attr_or_zero(cu_dev, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
        let pool = Pool::create(cu_dev, pools)?;
        let config = Config::process().clone();
        let observe = DeviceObserve::open(ord, &props.name, &config.observe);
        let tstream = config.tune.tstream;
        let dev = Core {
            ord,
            cu_dev,
            ctx,
            props,
            staging: Staging::new(config.staging),
            bounce: Bounce::new(config.tune.bounce),
            streams: StreamPool::default(),
            thread_streams: ThreadStreams::new(match tstream {
                ThreadStream::Blocking => CU_STREAM_DEFAULT as u32,
                ThreadStream::NonBlocking | ThreadStream::Legacy => CU_STREAM_NON_BLOCKING as u32,
            }),
            copy_order: CopyOrder::default(),
            interop_streams: AtomicUsize::new(0),
            tstream,
            events: EventPool::default(),
            stacks: StackCache::new(ctx, config.device_cache),
            pool,
            blocks: Blocks::default(),
            small: SmallBlocks::default(),
            large: LargeBlocks::default(),
            kernel_copy: KernelCopy::default(),
            pinned: HostPool::with_shape(
                HostChunks {
                    ord,
                    node: config
                        .tune
                        .pinnednuma
                        .then(|| crate::host::numa::device_node(cu_dev))
                        .flatten(),
                },
                config.pinned_cache,
                crate::host::pinned_pool::Shape {
                    first_chunk: config.tune.pinnedchunk,
                    shards: config
                        .tune
                        .pinnedshards
                        .unwrap_or(crate::host::pinned_pool::Shape::default().shards),
                },
            ),
            openacc: AtomicBool::new(false),
            kernel_done: AtomicBool::new(false),
            observe,
            primary: Mutex::new(primary),
            config,
        };
        dev.start()?;
        dev.report_opened();
        Ok(dev)
    }

    /// What an opened device does before its first use (context current): the pool's
    /// warm-up, the trace's epoch, the context's stack and heap limits.
    fn start(&self) -> Result<()> {
        if let (Some(p), PoolWarm::Open) = (&self.pool, self.config.tune.poolwarm) {
            p.warm_up(self.ctx);
        }
        if let Some(o) = &self.observe {
            // The epoch device times are placed from (the stream is waited for).
            if self.on_stream(|s| Ok(o.record_epoch(s)?)).is_ok() {
                o.epoch_done();
            }
        }
        if let Some(n) = self.config.native_stack {
            context::set_limit(CU_LIMIT_STACK_SIZE, n)?;
        }
        if let Some(n) = self.config.heap {
            // Before any launch.
            context::set_limit(CU_LIMIT_MALLOC_HEAP_SIZE, n)?;
        }
        Ok(())
    }

    /// The `GOMP_DEBUG` line and the `GOMP_NVPTX_INFO` lines of an opened device.
    fn report_opened(&self) {
        let owns_primary = self.primary.locked().is_some();
        log::debug!(
            "device {}: {} (sm_{}{}, {} SMs, {} kHz), {} context, {}",
            self.ord,
            self.props.name,
            self.props.cc.0,
            self.props.cc.1,
            self.props.num_sms,
            self.props.clock_khz,
            if owns_primary {
                "primary"
            } else {
                "borrowed current"
            },
            if self.pool.is_some() {
                "stream-ordered memory pool"
            } else {
                "cuMemAlloc (no memory pools)"
            }
        );
        info::opened(
            &self.config.observe,
            &info::Opened {
                ord: self.ord,
                name: &self.props.name,
                cc: self.props.cc,
                sms: self.props.num_sms,
                driver: query::driver_version().unwrap_or(0),
                soft_stack: self.config.soft_stack,
                heap: self.config.heap,
                pool: self.pool.is_some(),
            },
            &self.config.jit_cache,
            &self.config.link_cache_line(),
        );
    }

    /// The device's CUDA context (borrowed or primary; alive until `close`).
    pub fn context(&self) -> CUcontext {
        self.ctx
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
        self.on(self.thread_streams.stream()?, f)
    }

    /// Runs `f` on `s` (a stream of the device), after making `s` wait for the deferred
    /// copies of other streams, then waits for `s`; the error of `f` comes first, then
    /// the synchronisation's. Whatever `s` waited for is then known complete.
    #[inline]
    pub fn on<T>(&self, s: Stream, f: impl FnOnce(Stream) -> Result<T>) -> Result<T> {
        let w = self.order(s)?;
        let out = f(s);
        // A stream of the device's context (caller).
        let synced = s.synchronize();
        self.copy_order.synced(&w, &self.events);
        let v = out?;
        synced?;
        Ok(v)
    }

    /// Makes future work on `s` (a stream of the device) wait for every deferred copy
    /// queued on another stream (rule 2 of `copy_order`); returns what it waits for.
    #[inline]
    pub fn order(&self, s: Stream) -> Result<Waited> {
        if self.copy_order.is_clear() {
            return Ok(Waited::default());
        }
        self.copy_order.order(s, self.after_legacy(s), &self.events)
    }

    /// Waits on the host for every deferred copy (rule 3 of `copy_order`).
    #[inline]
    pub fn settle(&self) -> Result<()> {
        self.copy_order.settle(&self.events)
    }

    /// Whether CUDA itself orders work on `s` after CUDA's legacy default stream: the
    /// legacy stream itself and blocking thread streams. (OpenACC queue streams are
    /// blocking too; `AccQueue` says so itself.)
    #[inline]
    fn after_legacy(&self, s: Stream) -> bool {
        s == Stream::LEGACY || (self.thread_streams.blocking() && self.thread_streams.is_mine(s))
    }

    /// The stream a synchronous copy of the calling thread goes on: its own stream, or
    /// CUDA's legacy default stream once OpenACC is in use (not while serving a
    /// reverse-offload request: the requesting kernel may be ordered before it).
    #[inline]
    pub fn copy_stream(&self) -> Result<Stream> {
        if self.openacc_in_use() && !serving::serving_request() {
            return Ok(Stream::LEGACY);
        }
        self.thread_streams.stream()
    }

    /// The stream a deferred host-to-device copy of the calling thread goes on.
    #[inline]
    pub fn deferred_stream(&self) -> Result<Stream> {
        if self.openacc_in_use() || self.tstream == ThreadStream::Legacy {
            return Ok(Stream::LEGACY);
        }
        self.thread_streams.stream()
    }

    /// Whether a host-to-device copy of `n` bytes may return before its DMA has ended:
    /// small enough, not serving a reverse-offload request (the requesting kernel reads
    /// the bytes as soon as the request is answered) and no `targetsync` interop stream
    /// alive.
    #[inline]
    pub fn may_defer(&self, n: usize) -> bool {
        n <= self.config.tune.defer
            && self.interop_streams.load(Ordering::SeqCst) == 0
            && !serving::serving_request()
    }

    /// Whether an interop `targetsync` stream came into being (checked after a deferred
    /// copy was recorded: that copy then waits, see `Core::interop`).
    #[inline]
    pub fn interop_stream_alive(&self) -> bool {
        self.interop_streams.load(Ordering::SeqCst) != 0
    }

    /// Counts an interop `targetsync` stream in (`true`) or out.
    pub fn count_interop_stream(&self, alive: bool) {
        if alive {
            self.interop_streams.fetch_add(1, Ordering::SeqCst);
        } else {
            self.interop_streams.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// The profile's and trace's recorder, if either is on.
    #[inline]
    pub fn observe(&self) -> Option<&DeviceObserve> {
        self.observe.as_deref()
    }

    /// True once the program uses OpenACC on this device.
    pub fn openacc_in_use(&self) -> bool {
        self.openacc.load(Ordering::Relaxed)
    }

    /// Notes that a kernel of the device has completed (the launch paths call it after
    /// each completion; one relaxed load when already noted). Any thread.
    #[inline]
    pub fn note_kernel_done(&self) {
        if !self.kernel_done.load(Ordering::Relaxed) {
            self.kernel_done.store(true, Ordering::Relaxed);
        }
    }

    /// Notes that the program uses OpenACC on this device (see the `openacc` field).
    pub fn use_openacc(&self) {
        self.openacc.store(true, Ordering::Relaxed);
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
        self.stacks.close();
        for c in self
            .small
            .drain_chunks()
            .into_iter()
            .chain(self.large.drain())
        {
            let _ = self.free_chunk(c);
        }
        if let Some(p) = &self.pool {
            self.free_direct(p.drain_direct());
            log::debug!(
                "device {}: {} byte(s) still allocated from the pool at close",
                self.ord,
                p.used()
            );
            p.destroy();
        }
        self.staging.destroy();
        self.bounce.destroy();
        self.kernel_copy.destroy();
        if let Err(e) = self.pinned.destroy() {
            first_err.get_or_insert(e);
        }
        self.streams.destroy_all();
        self.thread_streams.destroy();
        let primary = self.primary.locked().take();
        if let Some(primary) = primary {
            // Unsetting our context on this thread so a later open does not find a
            // released one current.
            if context::current().is_ok_and(|cur| cur == self.ctx) {
                // SAFETY: NULL (no context).
                let _ = unsafe { context::set_current(std::ptr::null_mut()) };
            }
            // Balanced with the retain in `open`.
            primary.release()?;
        }
        first_err.map_or(Ok(()), Err)
    }
}
