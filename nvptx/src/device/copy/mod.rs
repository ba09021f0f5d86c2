//! The copy engine of one device: every copy between the host and the device, and
//! between device buffers, goes through here, whoever asks for it.
//!
//! Two kinds of callers ([`Via`]):
//! - *Synchronous* copies (`GOMP_OFFLOAD_host2dev` and kin, OpenMP and OpenACC alike) run
//!   on the calling thread's stream, or on CUDA's legacy default stream once OpenACC is
//!   in use (see `Core::copy_stream`). Device-to-host and device-to-device copies are
//!   complete when the call returns; a small host-to-device copy may return once its
//!   source bytes are safe to reuse, before its DMA has ended (a *deferred* copy), with
//!   everything that can observe device memory ordered after it (`device::copy_order`).
//! - *Queued* copies of an OpenACC async queue run on the queue's stream, in stream
//!   order with the queue's launches, callbacks and waits; the program waits for the
//!   queue before it relies on them (OpenACC's rule).
//!
//! Both take the same paths for the same memory. A copy between the host and the
//! device is offered to the copy paths of [`PATHS`] in their order, one file each in
//! this folder ([`CopyPath`]); the first that takes it makes it. Each path says itself
//! which copies it takes (direction, caller, size, memory: the kinds and sizes it may
//! take in [`CopyPath::takes`], read once per device into [`Copies`]' routes, so that
//! a copy is offered only to the paths that may take it; the rest in its
//! `try_copy`), the `GOMP_NVPTX_TUNE` key
//! that sizes it ([`Knob`]: its own, declared in its file, or a shared one) and the
//! profile row it counts its copies under (an existing row or its own,
//! `CopyMem::Path`); its buffers are a field of [`Copies`] (or the calling thread's
//! lane). A synchronous copy whose driver call failed may be made again by a later path
//! ([`CopyPath::retry`]: by kernel, for device-heap memory while serving a
//! reverse-offload request). The profile and the trace count every copy by how it
//! reached the host (`staged`, `pinned`, `pageable`) or how it ended (`deferred`;
//! `queued` for a queue's copy that returned before it ran). A path that takes a copy
//! says so before making it ([`HostCopy::taken`]): with an NVTX tool attached, the
//! copy's range (`h2d ring`, with its bytes) runs from there to the copy's return.
//!
//! Adding a path: its file here (`impl CopyPath` for its type, its own knob's
//! `PathKnob` and its own profile row if it has them) and, in this file, its `mod` line,
//! its type's declaration and its line in [`PATHS`] (and, when it keeps buffers per
//! device, their field in [`Copies`]). Its knob reaches `GOMP_NVPTX_TUNE`'s parser and
//! the README's table through [`knobs`]. The types are declared here, their behaviour in
//! their files (a type's methods split over files, as
//! `scripts/check-modules` allows: a path's file names the core and the engine's types
//! as part of this body).

mod bounce;
mod deferred;
mod direct;
mod kernel_copy;
mod queued;
mod read_ahead;
mod ring;
mod staged;

use crate::config::tune::PathKnob;
use crate::config::Config;
use crate::cuda::safe::{query, Stream};
use crate::cuda::sys::CUdeviceptr;
use crate::device::copy_order::CopyOrder;
use crate::device::Core;
use crate::host::bounce::Bounce;
use crate::host::kernel_copy::KernelCopy;
use crate::host::ranges as host_ranges;
use crate::host::staging::{self, Staging};
use crate::observe::nvtx::{self, Kind, Range};
use crate::observe::profile::{CopyDir, CopyMem};
use gomp_plugin::blocks::check_copy;
use gomp_plugin::error::{Error, Result};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The copy paths between the host and the device, in the order a copy is offered to
/// them: one line per path. A static list of zero-sized paths: asking one is an
/// indirect call, nothing is allocated per copy; a copy is offered only to the paths
/// whose [`CopyPath::takes`] holds it ([`Copies`]' routes).
static PATHS: &[&dyn CopyPath] = &[
    &ReadAhead, &Staged, &Queued, &Ring, &Deferred, &Bounced, &Direct, &ByKernel,
];

// The paths, declared here beside their list; each one's behaviour (`impl CopyPath`) is
// its file's.

/// The read-ahead path (zero-sized, stateless, `Sync`; the read-ahead is the calling
/// thread's lane's). (`read_ahead.rs`)
pub struct ReadAhead;

/// The staging path (zero-sized, stateless, `Sync`; the engine is [`Copies`]'
/// `staging`). (`staged.rs`)
pub struct Staged;

/// The queued path (zero-sized, stateless, `Sync`). (`queued.rs`)
pub struct Queued;

/// The ring path (zero-sized, stateless, `Sync`; the ring is the calling thread's
/// lane's). (`ring.rs`)
pub struct Ring;

/// The deferred path (zero-sized, stateless, `Sync`; its bounce buffers are
/// [`Copies`]' `bounce`). (`deferred.rs`)
pub struct Deferred;

/// The bounce path (zero-sized, stateless, `Sync`; the buffers are [`Copies`]'
/// `bounce`). (`bounce.rs`)
pub struct Bounced;

/// The direct path (zero-sized, stateless, `Sync`). (`direct.rs`)
pub struct Direct;

/// The copy-by-kernel path (zero-sized, stateless, `Sync`; the kernel is
/// [`Copies`]' `kernel_copy`). (`kernel_copy.rs`)
pub struct ByKernel;

/// The kinds and sizes of copies a path may take ([`CopyPath::takes`]): directions and
/// callers, and a range of byte counts. Plain data (`Copy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Takes {
    /// Bit [`kind`] of each direction and caller taken.
    kinds: u8,
    /// Byte counts taken: at least `.0`, below `.1`.
    bytes: (usize, usize),
}

impl Takes {
    /// Every copy.
    pub const ANY: Takes = Takes {
        kinds: 0b1111,
        bytes: (0, usize::MAX),
    };

    /// No copy (a path that only retries, [`CopyPath::retry`]).
    pub const NONE: Takes = Takes {
        kinds: 0,
        bytes: (0, usize::MAX),
    };

    /// The copies in direction `dir` (`H2D` or `D2H`) of the calling thread
    /// ([`Via::Sync`]: `queue` false) or of a queue ([`Via::Queue`]), of any size.
    pub const fn of(dir: CopyDir, queue: bool) -> Takes {
        Takes {
            kinds: 1 << kind_index(dir, queue),
            bytes: (0, usize::MAX),
        }
    }

    /// These copies and `other`'s kinds (the byte counts of `self`).
    pub const fn or(self, other: Takes) -> Takes {
        Takes {
            kinds: self.kinds | other.kinds,
            bytes: self.bytes,
        }
    }

    /// These copies of at least `at_least` bytes and fewer than `below`.
    pub const fn sized(self, at_least: usize, below: usize) -> Takes {
        Takes {
            kinds: self.kinds,
            bytes: (at_least, below),
        }
    }
}

/// Kinds of copies between the host and the device: two directions by two callers.
const KINDS: usize = 4;

/// The index of a kind of copy (below [`KINDS`]): direction `dir` (`D2H`, else `H2D`)
/// and caller (a queue, else the calling thread).
const fn kind_index(dir: CopyDir, queue: bool) -> usize {
    (matches!(dir, CopyDir::D2H) as usize) | ((queue as usize) << 1)
}

/// For each kind of copy ([`kind_index`]), the paths that may take it, in [`PATHS`]'
/// order: each one's index in `PATHS` and the byte counts it takes. Made once per
/// device from the paths' [`CopyPath::takes`] under its settings.
type Routes = [Vec<(usize, (usize, usize))>; KINDS];

/// The routes of a device opened with `config`.
fn routes(config: &Config) -> Routes {
    let takes: Vec<Takes> = PATHS.iter().map(|p| p.takes(config)).collect();
    std::array::from_fn(|k| {
        (takes.iter().enumerate())
            .filter(|(_, t)| t.kinds & (1 << k) != 0)
            .map(|(i, t)| (i, t.bytes))
            .collect()
    })
}

/// The `GOMP_NVPTX_TUNE` key that sizes or switches a copy path. Plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    /// A key of `config::tune`'s table, which other parts of the plugin read too.
    Shared(&'static str),
    /// The path's own, declared in its file (a `static`), read by `Tune::size`.
    Own(&'static PathKnob),
}

impl Knob {
    /// The key.
    pub fn name(self) -> &'static str {
        match self {
            Knob::Shared(name) => name,
            Knob::Own(k) => k.name,
        }
    }
}

/// The copy paths' own knobs, in the paths' order: what `GOMP_NVPTX_TUNE`'s parser and
/// the README's table of its keys add to `config::tune`'s (given them by
/// `crate::process`).
pub fn knobs() -> Vec<&'static PathKnob> {
    PATHS
        .iter()
        .filter_map(|p| match p.knob() {
            Some(Knob::Own(k)) => Some(k),
            _ => None,
        })
        .collect()
}

/// One way of making a copy between the host and the device (a file of this folder).
/// Paths are zero-sized and stateless: what they keep lives in [`Copies`] (per device)
/// or in the calling thread's lane (`host::ThreadHost`). `Sync`: any thread asks.
pub trait CopyPath: Sync {
    /// The path's name (its file's).
    fn label(&self) -> &'static str;

    /// The `GOMP_NVPTX_TUNE` key that sizes or switches the path, if any.
    fn knob(&self) -> Option<Knob> {
        None
    }

    /// The kinds and sizes of copies the path may take on a device opened with
    /// `config`: asked once per device ([`Copies`]' routes); a copy outside them is
    /// never offered to [`CopyPath::try_copy`], which may rely on that. Every copy
    /// `try_copy` may take must be among them. Default: any copy.
    fn takes(&self, _config: &Config) -> Takes {
        Takes::ANY
    }

    /// The profile row of a copy the path made that ended as `ended`, `mem` being how
    /// it reached the host (asked only while profiling or tracing); a path with a row
    /// of its own answers `CopyMem::Path(its name)`.
    fn row(&self, ended: Ended, mem: CopyMem) -> CopyMem {
        ended.row(mem)
    }

    /// Makes copy `c` (nonempty, addresses checked, among [`CopyPath::takes`]) if the
    /// path takes it: `None` when it does not (the next path is asked), else how the
    /// copy ended or why it failed.
    ///
    /// # Safety
    /// `c.host` readable (to the device) or writable (to the host) for `c.n` bytes; for
    /// [`Via::Queue`], until the queue's work queued so far has run.
    unsafe fn try_copy(&self, core: &Core, c: &HostCopy) -> Option<Taken>;

    /// Makes again a synchronous copy `c` that an earlier path failed with `failed`
    /// (a [`Failed::copy`]), if the path can: `None` when it cannot (the next path is
    /// asked; the copy fails when none can).
    ///
    /// # Safety
    /// As [`CopyPath::try_copy`].
    unsafe fn retry(&self, _core: &Core, _c: &HostCopy, _failed: &Error) -> Option<Result<()>> {
        None
    }
}

/// The copy engine's part of a device core: the buffers of the copy paths, the order of
/// deferred copies, and the count of interop streams that stop deferring. Owned by the
/// core; `Sync` (each part locks inside, the count is atomic).
pub struct Copies {
    /// The staging engine (page-locked buffers, lane threads) for large pageable
    /// copies (`staged.rs`).
    staging: Staging,
    /// Page-locked bounce buffers for small pageable copies (`bounce.rs`, also
    /// `deferred.rs`' and a queue's copies).
    bounce: Bounce,
    /// Copies by kernel for device-heap memory during reverse offload
    /// (`kernel_copy.rs`).
    pub(super) kernel_copy: KernelCopy,
    /// Streams with deferred host-to-device copies in flight, and the rule that orders
    /// everything else after them.
    pub(super) order: CopyOrder,
    /// Interop objects with a `targetsync` stream alive on the device: while there are
    /// any, host-to-device copies complete before returning (the program may queue work
    /// on such a stream at any time, out of the plugin's sight).
    interop_streams: AtomicUsize,
    /// The paths each kind of copy is offered to (the paths' `takes` under the device's
    /// settings).
    routes: Routes,
}

impl Copies {
    /// The copy engine of a device opened with `config` (nothing allocated yet).
    pub(super) fn new(config: &Config) -> Copies {
        Copies {
            staging: Staging::new(config.staging),
            bounce: Bounce::new(config.tune.size(&bounce::KNOB)),
            kernel_copy: KernelCopy::default(),
            order: CopyOrder::default(),
            interop_streams: AtomicUsize::new(0),
            routes: routes(config),
        }
    }

    /// Whether an interop `targetsync` stream is alive.
    #[inline]
    pub(super) fn interop_stream_alive(&self) -> bool {
        self.interop_streams.load(Ordering::SeqCst) != 0
    }

    /// Counts an interop `targetsync` stream in (`true`) or out.
    pub(super) fn count_interop_stream(&self, alive: bool) {
        if alive {
            self.interop_streams.fetch_add(1, Ordering::SeqCst);
        } else {
            self.interop_streams.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Releases the paths' buffers: staging, bounce buffers, the copy kernel (device
    /// close, context current).
    pub(super) fn destroy(&self) {
        self.staging.destroy();
        self.bounce.destroy();
        self.kernel_copy.destroy();
    }
}

/// Where a copy goes and what its caller is promised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// A synchronous copy of the calling thread: complete when the call returns, or,
    /// host to device, deferred under `copy_order`'s rule.
    Sync,
    /// A copy of an OpenACC async queue, queued on the queue's stream, which the caller
    /// has ordered after the deferred copies (`AccQueue::ordered_stream`).
    Queue(Stream),
}

/// How a copy stood when its call returned. Plain data (`Copy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Complete.
    Done,
    /// A synchronous host-to-device copy that may still run (`copy_order`).
    Deferred,
    /// Queued on an OpenACC queue's stream.
    Queued,
}

impl Ended {
    /// The profile's row of a copy that ended so, `mem` being how it reached the host.
    pub fn row(self, mem: CopyMem) -> CopyMem {
        match self {
            Ended::Done => mem,
            Ended::Deferred => CopyMem::Deferred,
            Ended::Queued => CopyMem::Queued,
        }
    }
}

/// What a path that took a copy answers: how the copy ended, or why it failed (owned
/// by the caller).
pub type Taken = std::result::Result<Ended, Failed>;

/// Why a path failed a copy it took, and whether a later path may make it again.
/// Owned by the copy's caller; `Send`.
#[derive(Debug)]
pub struct Failed {
    error: Error,
    retry: bool,
}

impl Failed {
    /// The copy itself failed (a driver copy of the program's memory, waited for):
    /// later paths are asked to [`CopyPath::retry`] it.
    pub fn copy(error: Error) -> Failed {
        Failed { error, retry: true }
    }
}

impl From<Error> for Failed {
    /// A failure before or around the copy (a stream, a buffer, the ordering): final.
    fn from(error: Error) -> Failed {
        Failed {
            error,
            retry: false,
        }
    }
}

/// One copy between the host and the device as the paths see it, with what they ask
/// of it worked out once (the driver query of the host memory's kind, the deferral
/// rule, the stream). Lives on the calling thread's stack for one copy.
pub struct HostCopy {
    /// `H2D` or `D2H`.
    pub dir: CopyDir,
    /// The device address (checked by `check_host_copy`).
    pub dev: CUdeviceptr,
    /// The host address.
    pub host: *mut c_void,
    /// Bytes (not 0).
    pub n: usize,
    /// The caller.
    pub via: Via,
    pageable: Cell<Option<bool>>,
    may_defer: Cell<Option<bool>>,
    stream: Cell<Option<Stream>>,
    /// The NVTX range of the path making the copy (empty without a tool).
    range: Cell<Range>,
}

impl HostCopy {
    /// The copy's kind ([`kind_index`]).
    #[inline]
    fn kind(&self) -> usize {
        kind_index(self.dir, matches!(self.via, Via::Queue(_)))
    }

    fn new(dir: CopyDir, dev: CUdeviceptr, host: *mut c_void, n: usize, via: Via) -> Self {
        HostCopy {
            dir,
            dev,
            host,
            n,
            via,
            pageable: Cell::new(None),
            may_defer: Cell::new(None),
            stream: Cell::new(None),
            range: Cell::new(Range::NONE),
        }
    }

    /// Path `p` makes this copy from here on: with an NVTX tool attached, the copy's
    /// range, named after its direction and the path (`h2d ring`), its payload the
    /// bytes; it ends when the copy returns, or when the path gives the copy up.
    #[inline]
    pub fn taken(&self, p: &dyn CopyPath) {
        if nvtx::on() {
            self.given_up();
            let r = nvtx::range(Kind::Copy, Some(self.n as u64), || {
                format!("{} {}", self.dir.label(), p.label()).into()
            });
            self.range.set(r);
        }
    }

    /// The path that said [`HostCopy::taken`] gave the copy up (ends its range).
    #[inline]
    fn given_up(&self) {
        drop(self.range.take());
    }

    /// Whether the host memory is pageable ([`Core::pageable`]; asked once).
    pub fn pageable(&self, core: &Core) -> bool {
        memo(&self.pageable, || core.pageable(self.host, self.n))
    }

    /// Whether a synchronous host-to-device copy may return before its DMA has ended
    /// ([`Core::may_defer`]; asked once).
    pub fn may_defer(&self, core: &Core) -> bool {
        memo(&self.may_defer, || core.may_defer(self.n))
    }

    /// The stream a device-to-host copy that is waited for goes on: the calling
    /// thread's copy stream ([`Core::copy_stream`]; asked once) or the queue's.
    pub fn stream(&self, core: &Core) -> Result<Stream> {
        self.stream_or(core, || core.thread_streams().stream())
    }

    /// [`HostCopy::stream`] with the calling thread's own stream from `own` (a path
    /// that has the thread's lane at hand).
    #[inline]
    pub fn stream_or(&self, core: &Core, own: impl FnOnce() -> Result<Stream>) -> Result<Stream> {
        if let Some(s) = self.stream.get() {
            return Ok(s);
        }
        let s = match self.via {
            Via::Sync => core.copy_stream_or(own)?,
            Via::Queue(s) => s,
        };
        self.stream.set(Some(s));
        Ok(s)
    }
}

/// The value in `cell`, or `f`'s, kept there.
fn memo<T: Copy>(cell: &Cell<Option<T>>, f: impl FnOnce() -> T) -> T {
    if let Some(v) = cell.get() {
        return v;
    }
    let v = f();
    cell.set(Some(v));
    v
}

impl Core {
    /// Copies `n` bytes from host `src` to device `dst` (see [`Via`]).
    ///
    /// # Safety
    /// `src` must be readable for `n` bytes; for [`Via::Queue`], until the queue's work
    /// queued so far has run (libgomp keeps or stages it).
    pub unsafe fn host2dev_via(
        &self,
        dst: CUdeviceptr,
        src: *const c_void,
        n: usize,
        via: Via,
    ) -> Result<()> {
        // SAFETY: `src` is only read (the caller's guarantee); `dst` is checked first.
        unsafe { self.host_copy(CopyDir::H2D, dst, src.cast_mut(), n, via) }
    }

    /// Copies `n` bytes from device `src` to host `dst` (see [`Via`]).
    ///
    /// # Safety
    /// `dst` must be writable for `n` bytes; for [`Via::Queue`], until the queue's work
    /// queued so far has run.
    pub unsafe fn dev2host_via(
        &self,
        dst: *mut c_void,
        src: CUdeviceptr,
        n: usize,
        via: Via,
    ) -> Result<()> {
        // SAFETY: forwarded caller guarantee; `src` is checked first.
        unsafe { self.host_copy(CopyDir::D2H, src, dst, n, via) }
    }

    /// The part every copy between the host and the device shares, either direction
    /// (`dir`: `H2D` or `D2H`): nothing for 0 bytes; the address checks; the copy paths
    /// in their order ([`PATHS`]); the copy recorded in the profile and the trace when
    /// either is on (the row: the path's, from how the copy reached the host or ended).
    ///
    /// # Safety
    /// `host` readable (to the device) or writable (to the host) for `n` bytes; for
    /// [`Via::Queue`], until the queue's work queued so far has run.
    unsafe fn host_copy(
        &self,
        dir: CopyDir,
        dev: CUdeviceptr,
        host: *mut c_void,
        n: usize,
        via: Via,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let c = HostCopy::new(dir, dev, host, n, via);
        let copy = || {
            self.check_host_copy(dev, host, n)?;
            // SAFETY: `host` as the caller guarantees; `dev` checked above.
            unsafe { self.by_paths(&c) }
        };
        let Some(o) = self.observe() else {
            return copy().map(|_| ());
        };
        let (t0, mem) = (crate::observe::now(), self.copy_mem(host, n, via));
        let r = copy();
        o.copy(dir, r.as_ref().map_or(mem, |(e, p)| p.row(*e, mem)), n, t0);
        r.map(|_| ())
    }

    /// Offers checked copy `c` to the paths that may take it ([`CopyPath::takes`]) in
    /// order; the first that takes it makes it. A synchronous copy that failed in the
    /// driver is offered to the later paths' [`CopyPath::retry`]. How it ended and the
    /// path that made it.
    ///
    /// # Safety
    /// As [`CopyPath::try_copy`].
    unsafe fn by_paths(&self, c: &HostCopy) -> Result<(Ended, &'static dyn CopyPath)> {
        for &(i, (at_least, below)) in &self.copies.routes[c.kind()] {
            if c.n < at_least || c.n >= below {
                continue;
            }
            let p = PATHS[i];
            // SAFETY: forwarded caller guarantee; `c` is among the path's `takes`.
            let Some(r) = (unsafe { p.try_copy(self, c) }) else {
                c.given_up();
                continue;
            };
            return match r {
                Ok(ended) => Ok((ended, p)),
                Err(f) if f.retry && c.via == Via::Sync => {
                    c.given_up();
                    for &q in &PATHS[i + 1..] {
                        // SAFETY: forwarded caller guarantee.
                        if let Some(r) = unsafe { q.retry(self, c, &f.error) } {
                            return r.map(|()| (Ended::Done, q));
                        }
                    }
                    Err(f.error)
                }
                Err(f) => Err(f.error),
            };
        }
        Err(Error::invalid("no copy path took the copy"))
    }

    /// Records a deferred copy just queued on `s` (`copy_order`). If that fails, or a
    /// `targetsync` interop stream has come into being meanwhile (the program may use it
    /// at once), the copy is waited for instead.
    fn deferred_done(&self, s: Stream) -> Result<()> {
        let r = self.copies.order.deferred(s, &self.launch.events);
        if r.is_err() || self.interop_stream_alive() {
            self.on(s, |_| Ok(()))?;
        }
        r
    }

    /// Copies `n` bytes between two device buffers (see [`Via`]: a synchronous copy is
    /// waited for).
    pub fn dev2dev_via(
        &self,
        dst: CUdeviceptr,
        src: CUdeviceptr,
        n: usize,
        via: Via,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.check_dev2dev(dst, src, n)?;
        let _range = nvtx::range(Kind::Copy, Some(n as u64), || match via {
            Via::Sync => "d2d".into(),
            Via::Queue(_) => "d2d queued".into(),
        });
        let t0 = self.observe().map(|_| crate::observe::now());
        // Device addresses are checked by the driver.
        let (r, ended) = match via {
            // Waited for before returning.
            Via::Sync => (
                self.on_copy_stream(|s| s.copy_dtod(dst, src, n)),
                Ended::Done,
            ),
            Via::Queue(s) => (s.copy_dtod(dst, src, n), Ended::Queued),
        };
        if let (Some(o), Some(t0)) = (self.observe(), t0) {
            o.copy(CopyDir::D2D, ended.row(CopyMem::Device), n, t0);
        }
        r
    }

    /// Whether a copy of `n` bytes from or to host `p` goes through the staging engine:
    /// large, `p` pageable, and, for a synchronous copy, OpenMP ordering (not OpenACC's
    /// legacy stream: the engine's streams are not ordered after the queues' work). Memory
    /// the plugin page-locked (its pinned pool, `gomp_nvptx_host_lock`) is known from
    /// the host-range registry; otherwise `p` is pageable when the driver knows nothing
    /// of it (page-locked and managed memory DMA directly).
    fn stage(&self, p: *const c_void, n: usize, via: Via) -> bool {
        n >= staging::MIN_STAGED
            && (via != Via::Sync || !self.openacc_in_use())
            && self.pageable(p, n)
    }

    /// Whether host `p` (of a copy of `n` bytes) is pageable: not memory the plugin
    /// page-locked (the host-range registry) and unknown to the driver (page-locked and
    /// managed memory DMA directly).
    fn pageable(&self, p: *const c_void, n: usize) -> bool {
        if host_ranges::global().contains(p as usize, n) {
            return false;
        }
        // An unknown (pageable) address is an error return, not a fault.
        query::memory_type(p as CUdeviceptr).is_err()
    }

    /// How a copy of `n` bytes from or to host `p` reaches the host memory (for the
    /// profile only: costs a driver query).
    fn copy_mem(&self, p: *const c_void, n: usize, via: Via) -> CopyMem {
        if self.stage(p, n, via) {
            CopyMem::Staged
        } else if host_ranges::global().contains(p as usize, n)
            || query::memory_type(p as CUdeviceptr).is_ok()
        {
            CopyMem::Pinned
        } else {
            CopyMem::Pageable
        }
    }

    /// The address checks of a copy of `n` bytes between host `host_ptr` and device
    /// `dev_ptr` (either direction), with libgomp's messages.
    pub fn check_host_copy(
        &self,
        dev_ptr: CUdeviceptr,
        host_ptr: *const c_void,
        n: usize,
    ) -> Result<()> {
        check_copy(dev_ptr, host_ptr)?;
        self.memory.blocks.check(dev_ptr, n)
    }

    /// The address checks of a device-to-device copy, with libgomp's messages.
    pub fn check_dev2dev(&self, dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> Result<()> {
        if dst == 0 || src == 0 {
            return Err(Error::invalid("invalid device address"));
        }
        self.memory.blocks.check(dst, n)?;
        self.memory.blocks.check(src, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tune::{has_key, Tune, MAX_PATH_KNOBS};

    /// The paths in today's order of decisions, each named once; every shared knob a
    /// path names is a key of `config::tune`'s table, no own knob is one, and the own
    /// knobs fit `PathSizes`, read as their defaults say and parse through the settings.
    #[test]
    fn paths_in_order_with_known_knobs() {
        let labels: Vec<_> = PATHS.iter().map(|p| p.label()).collect();
        assert_eq!(
            labels,
            [
                "read_ahead",
                "staged",
                "queued",
                "ring",
                "deferred",
                "bounce",
                "direct",
                "kernel_copy"
            ]
        );
        let names: Vec<_> = PATHS
            .iter()
            .filter_map(|p| p.knob())
            .map(Knob::name)
            .collect();
        assert_eq!(names, ["readahead", "ring", "defer", "bounce"]);
        for p in PATHS {
            match p.knob() {
                Some(Knob::Shared(k)) => assert!(has_key(k), "{}: {k}", p.label()),
                Some(Knob::Own(k)) => assert!(!has_key(k.name), "{}: {}", p.label(), k.name),
                None => {}
            }
        }
        let own = knobs();
        assert!(own.len() <= MAX_PATH_KNOBS);
        for k in &own {
            let default = gomp_plugin::settings::parse_size(k.default_text);
            assert_eq!(default, Some(k.default), "{}", k.name);
            assert!(k.default <= k.max, "{}", k.name);
            let t = Tune::parse_with(&format!("{}={}", k.name, k.max), &own).unwrap();
            assert_eq!(t.size(k), k.max);
            assert_eq!(Tune::parse_with("", &own).unwrap().size(k), k.default);
            let e = Tune::parse_with(&format!("{}={}", k.name, k.max + 1), &own).unwrap_err();
            assert!(e.starts_with(&format!("{}: '", k.name)), "{e}");
            // Not a key without the paths' knobs.
            assert!(Tune::parse(&format!("{}=0", k.name)).is_err());
        }
        let t = Tune::parse_with("ring=0,bounce=4k,ring=2k", &own).unwrap();
        assert_eq!((t.size(&ring::KNOB), t.size(&bounce::KNOB)), (2048, 4096));
    }

    /// The paths each kind of copy is offered to, in order, with the byte counts they
    /// take: under the default settings and with the ring's knob set.
    #[test]
    fn routes_per_kind_of_copy() {
        let names = |r: &Routes| -> Vec<Vec<(&str, (usize, usize))>> {
            r.iter()
                .map(|k| k.iter().map(|&(i, b)| (PATHS[i].label(), b)).collect())
                .collect()
        };
        let config = |tune: &str| {
            Config::from_lookup(
                &knobs(),
                gomp_plugin::settings::lookup(&[("GOMP_NVPTX_TUNE", tune)]),
                |w| panic!("{w}"),
            )
        };
        let (any, staged) = (
            (0, usize::MAX),
            (crate::host::staging::MIN_STAGED, usize::MAX),
        );
        let ring = (0, crate::host::bounce::MIN_BYTES);
        assert_eq!(
            names(&routes(&config(""))),
            [
                // H2D, the calling thread's
                vec![
                    ("staged", staged),
                    ("ring", ring),
                    ("deferred", any),
                    ("bounce", any),
                    ("direct", any)
                ],
                // D2H, the calling thread's
                vec![
                    ("read_ahead", any),
                    ("staged", staged),
                    ("ring", ring),
                    ("bounce", any),
                    ("direct", any)
                ],
                // H2D, a queue's
                vec![("staged", staged), ("bounce", any), ("direct", any)],
                // D2H, a queue's
                vec![
                    ("staged", staged),
                    ("queued", any),
                    ("ring", ring),
                    ("bounce", any),
                    ("direct", any)
                ],
            ]
        );
        assert_eq!(
            names(&routes(&config("ring=2k")))[1][2],
            ("ring", (0, 2048))
        );
        assert_eq!(names(&routes(&config("ring=0")))[0][1], ("ring", (0, 0)));
        assert_eq!(
            kind_index(CopyDir::D2H, true),
            KINDS - 1,
            "the kinds fit the routes"
        );
    }
}
