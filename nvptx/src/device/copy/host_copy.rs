//! One copy between the host and the device as the copy paths see it ([`HostCopy`]),
//! where it goes ([`Via`]) and its kind (direction by caller, [`kind_index`]). Lives on
//! the calling thread's stack for one copy; plain types.

use crate::cuda::pools::thread_streams::LaneData;
use crate::cuda::safe::Stream;
use crate::cuda::sys::CUdeviceptr;
use crate::device::parts::Parts;
use crate::observe::nvtx::{self, Kind, Range};
use crate::observe::profile::CopyDir;
use gomp_plugin::error::Result;
use std::cell::Cell;
use std::ffi::c_void;

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

/// Kinds of copies between the host and the device: two directions by two callers.
pub(super) const KINDS: usize = 4;

/// The index of a kind of copy (below [`KINDS`]): direction `dir` (`D2H`, else `H2D`)
/// and caller (a queue, else the calling thread).
pub(super) const fn kind_index(dir: CopyDir, queue: bool) -> usize {
    (matches!(dir, CopyDir::D2H) as usize) | ((queue as usize) << 1)
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
    pub(super) fn kind(&self) -> usize {
        kind_index(self.dir, matches!(self.via, Via::Queue(_)))
    }

    /// The copy of `n` bytes between `dev` and `host` in direction `dir`, for `via`.
    pub(super) fn new(
        dir: CopyDir,
        dev: CUdeviceptr,
        host: *mut c_void,
        n: usize,
        via: Via,
    ) -> Self {
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

    /// The path labelled `path` (its `Route::label`) makes this copy from here on:
    /// with an NVTX tool attached, the copy's range, named after its direction and the
    /// path (`h2d ring`), its payload the bytes; it ends when the copy returns, or when
    /// the path gives the copy up. Without a tool, one check.
    #[inline(always)]
    pub fn taken(&self, path: &'static str) {
        if nvtx::on() {
            self.taken_traced(path);
        }
    }

    /// [`HostCopy::taken`] with an NVTX tool attached.
    #[cold]
    #[inline(never)]
    fn taken_traced(&self, path: &'static str) {
        self.given_up();
        let r = nvtx::range(Kind::Copy, Some(self.n as u64), || {
            format!("{} {}", self.dir.label(), path).into()
        });
        self.range.set(r);
    }

    /// The path that said [`HostCopy::taken`] gave the copy up (ends its range).
    #[inline]
    pub(super) fn given_up(&self) {
        drop(self.range.take());
    }

    /// Whether the host memory is pageable ([`Parts::pageable`]; asked once).
    pub fn pageable<B, T: LaneData>(&self, d: &Parts<B, T>) -> bool {
        memo(&self.pageable, || d.pageable(self.host, self.n))
    }

    /// Whether a synchronous host-to-device copy may return before its DMA has ended
    /// ([`Parts::may_defer`]; asked once).
    pub fn may_defer<B, T: LaneData>(&self, d: &Parts<B, T>) -> bool {
        memo(&self.may_defer, || d.may_defer(self.n))
    }

    /// The stream a device-to-host copy that is waited for goes on: the calling
    /// thread's copy stream (`LaunchResources::copy_stream`; asked once) or the queue's.
    pub fn stream<B, T: LaneData>(&self, d: &Parts<B, T>) -> Result<Stream> {
        self.stream_or(d, || d.launch.thread_streams().stream())
    }

    /// [`HostCopy::stream`] with the calling thread's own stream from `own` (a path
    /// that has the thread's lane at hand).
    #[inline]
    pub fn stream_or<B, T: LaneData>(
        &self,
        d: &Parts<B, T>,
        own: impl FnOnce() -> Result<Stream>,
    ) -> Result<Stream> {
        if let Some(s) = self.stream.get() {
            return Ok(s);
        }
        let s = match self.via {
            Via::Sync => d.settings.copy_stream_or(own)?,
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
