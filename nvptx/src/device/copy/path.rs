//! What a copy path is (one file of this folder each, with the engine and buffers it
//! uses): its route ([`Route`]: its name, the kinds and sizes of copies it may take,
//! [`Takes`], the `GOMP_NVPTX_TUNE` key that sizes it, [`Knob`], its profile row) and
//! its copies ([`CopyPath`]: what it answers for a copy it took, [`Taken`]: how it
//! [`Ended`], or why it [`Failed`]). Plain types and two traits; the paths and their
//! order are the folder's (`copy/mod.rs`).
//!
//! [`CopyPath`] is generic over the device's copy buffers `B` and each thread's `T`
//! (the folder's `Buffers` and `ThreadBuffers`, `buffers.rs`), which the device's parts
//! hold: the paths' engines are declared in the paths' files, and the parts, which the
//! paths are given, are below this folder, so they cannot name them. A path asks for
//! the engine it uses by its type (`B: AsRef<Bounce>`); the core names the one
//! instance (`device/whole.rs`), so nothing is generic at run time.

use super::host_copy::{kind_index, HostCopy};
use crate::config::tune::PathKnob;
use crate::config::Config;
use crate::device::parts::Parts;
use crate::observe::profile::{CopyDir, CopyMem};
use gomp_plugin::error::{Error, Result};

/// The kinds and sizes of copies a path may take ([`Route::takes`]): directions and
/// callers, and a range of byte counts. Plain data (`Copy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Takes {
    /// Bit [`kind_index`] of each direction and caller taken.
    pub(super) kinds: u8,
    /// Byte counts taken: at least `.0`, below `.1`.
    pub(super) bytes: (usize, usize),
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

/// The `GOMP_NVPTX_TUNE` key that sizes or switches a copy path. Plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    /// A key of `config::tune`'s table, which other parts of the plugin read too.
    Shared(&'static str),
    /// The path's own (a `static` of `config::tune`'s `PATH_KNOBS`), read by `Tune::size`.
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

/// Which copies a path takes, and how they are named and counted: the part of a copy
/// path that needs no device (a file of this folder each). Paths are zero-sized and
/// stateless. `Sync`: any thread asks.
pub trait Route: Sync {
    /// The path's name (its file's).
    fn label(&self) -> &'static str;

    /// The `GOMP_NVPTX_TUNE` key that sizes or switches the path, if any.
    fn knob(&self) -> Option<Knob> {
        None
    }

    /// The kinds and sizes of copies the path may take on a device opened with
    /// `config`: asked once per device (the copy engine's routes); a copy outside them is
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
}

/// One way of making a copy between the host and the device (a file of this folder,
/// beside its [`Route`]). Paths are zero-sized and stateless: what they keep lives in
/// the copy engine's buffers (per device, [`Parts`]' `buffers`, of type `B`) or in the
/// calling thread's lane (its data, of type `T`). `Sync`: any thread asks. A path is
/// given the device's parts a copy uses ([`Parts`]), not the core.
pub trait CopyPath<B, T>: Route {
    /// Makes copy `c` (nonempty, addresses checked, among [`Route::takes`]) if the
    /// path takes it: `None` when it does not (the next path is asked), else how the
    /// copy ended or why it failed.
    ///
    /// # Safety
    /// `c.host` readable (to the device) or writable (to the host) for `c.n` bytes; for
    /// [`Via::Queue`], until the queue's work queued so far has run.
    unsafe fn try_copy(&self, d: &Parts<B, T>, c: &HostCopy) -> Option<Taken>;

    /// Makes again a synchronous copy `c` that an earlier path failed with `failed`
    /// (a [`Failed::copy`]), if the path can: `None` when it cannot (the next path is
    /// asked; the copy fails when none can).
    ///
    /// # Safety
    /// As [`CopyPath::try_copy`].
    unsafe fn retry(&self, _d: &Parts<B, T>, _c: &HostCopy, _failed: &Error) -> Option<Result<()>> {
        None
    }
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
    /// Why.
    pub(super) error: Error,
    /// Whether later paths may make the copy again ([`CopyPath::retry`]).
    pub(super) retry: bool,
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
