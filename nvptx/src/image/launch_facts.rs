//! The launch facts of a kernel that are learnt once and kept: the device's team ICVs
//! of its image (`__gomp_additional_icvs`, which libgomp writes after loading the
//! image from `OMP_NUM_TEAMS*` and `OMP_TEAMS_THREAD_LIMIT*`), the occupancy
//! calculator's resident blocks per warp count, and the launch shape the kernel's
//! trials chose ([`Tuning`], driven by `launch::autotune`).
//!
//! Threading: shared by every thread launching the image's kernels; each fact is read
//! once (a `OnceCell`, or an atomic that several first launches may fill alike); the
//! trials are behind their kernel's lock.

use crate::cuda::safe::module::resident_blocks;
use crate::cuda::safe::{OwnedEvent, Stream};
use crate::cuda::sys::{CUdeviceptr, CUfunction};
use crate::device::Device;
use crate::image::trials::{Step, StepKind, Trials};
use gomp_plugin::error::Result;
use gomp_plugin::sync::Lock;
use gomp_plugin::DeviceCore;
use once_cell::sync::OnceCell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard};

/// `struct gomp_offload_icvs`: the layout libgomp 13–16 write (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffloadIcvs {
    /// `omp_get_device_num` on the device.
    pub device_num: i32,
    /// `default-device-var`.
    pub default_device: i32,
    /// `nteams-var` (`OMP_NUM_TEAMS_DEV*`/`_ALL`), 0 if unset.
    pub nteams: i32,
    /// `teams-thread-limit-var` (`OMP_TEAMS_THREAD_LIMIT_DEV*`/`_ALL`), 0 if unset.
    pub teams_thread_limit: i32,
}

/// The ICV block of one image, read from the device at its first launch. Owned by the
/// image; `Sync`.
#[derive(Debug, Default)]
pub struct TeamIcvs {
    /// Device address of the 16-byte block (0: the image has none).
    addr: CUdeviceptr,
    read: OnceCell<OffloadIcvs>,
}

impl TeamIcvs {
    /// The block at `addr` of `size` bytes (as the module reports it); none unless it has
    /// libgomp's size.
    pub fn at(addr: CUdeviceptr, size: usize) -> TeamIcvs {
        TeamIcvs {
            addr: if size == size_of::<OffloadIcvs>() {
                addr
            } else {
                0
            },
            read: OnceCell::new(),
        }
    }

    /// The ICVs (zeros for an image without the block). The first call copies them from
    /// the device (libgomp has written them by the time any kernel launches).
    pub fn get(&self, dev: &Device) -> Result<OffloadIcvs> {
        if self.addr == 0 {
            return Ok(OffloadIcvs::default());
        }
        self.read
            .get_or_try_init(|| {
                let mut v = OffloadIcvs::default();
                // SAFETY: `v` is 16 writable bytes; the source is the image's block.
                unsafe {
                    dev.dev2host(
                        (&mut v as *mut OffloadIcvs).cast(),
                        self.addr,
                        size_of::<OffloadIcvs>(),
                    )
                }?;
                Ok(v)
            })
            .copied()
    }
}

/// Resident blocks per SM by warp count (index = warps), 0 = not asked yet, `NONE` =
/// no answer. Owned by a kernel; `Sync`.
#[derive(Debug)]
pub struct Resident([AtomicU8; 33]);

const NONE: u8 = u8::MAX;

impl Default for Resident {
    fn default() -> Self {
        Resident(std::array::from_fn(|_| AtomicU8::new(0)))
    }
}

impl Resident {
    /// How many blocks of `warps` warps with `dyn_smem` bytes of dynamic shared memory
    /// fit on one SM (`f`'s occupancy, asked once per warp count; `dyn_smem` is the same
    /// at every launch of a process). `None` where the driver has no calculator.
    ///
    /// # Safety
    /// `f` must be a function of a loaded module (the kernel owning this cache).
    pub unsafe fn blocks(&self, f: CUfunction, warps: u32, dyn_smem: usize) -> Option<u32> {
        let slot = self.0.get(warps as usize)?;
        match slot.load(Ordering::Relaxed) {
            0 => {
                // SAFETY: forwarded caller guarantee.
                let r = unsafe { resident_blocks(f, warps * 32, dyn_smem) };
                let v = r.map_or(NONE, |b| b.min(NONE as u32 - 1) as u8);
                slot.store(v, Ordering::Relaxed);
                r
            }
            NONE => None,
            b => Some(u32::from(b)),
        }
    }
}

/// The occupancy calculator's answers for one kernel by block-size limit (OpenACC
/// launches ask with their worker and vector counts; a kernel is launched with one or
/// two limits in practice). Owned by the kernel; `Sync` (a short lock per question).
#[derive(Debug, Default)]
pub struct OccupancyByLimit(Mutex<Vec<(u32, GridBlock)>>);

/// The occupancy calculator's (grid, block), `None` without an answer.
pub type GridBlock = Option<(u32, u32)>;

impl OccupancyByLimit {
    /// The (grid, block) for `limit` (0: none), from `ask` the first time.
    pub fn get(&self, limit: u32, ask: impl FnOnce() -> GridBlock) -> GridBlock {
        let mut known = self.0.locked();
        if let Some((_, v)) = known.iter().find(|(l, _)| *l == limit) {
            return *v;
        }
        let v = ask();
        known.push((limit, v));
        v
    }
}

/// One launch shape a kernel's trials may choose: `teams` blocks of `warps` warps,
/// named by the `GOMP_NVPTX_TUNE` setting that gives it. Plain data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The setting, e.g. `warps=occupancy`.
    pub label: String,
    /// Blocks in the grid.
    pub teams: u32,
    /// Warps per block.
    pub warps: u32,
}

/// A launch the trials measure: a trial (or probe), with the timing events recorded
/// around the kernel, or a warm-up launch, measured by the caller on the host's clock
/// (or, launched asynchronously, by events too). Owned by the launch until its duration
/// is recorded (`launch::autotune::finish`), or by its kernel's [`Tuner`] while an
/// asynchronous launch runs. `Send`.
#[derive(Debug)]
pub struct Trial {
    pub(crate) step: Step,
    pub(crate) label: String,
    /// Start and end events; `None` for a warm-up launch timed on the host.
    pub(crate) events: Option<(OwnedEvent, OwnedEvent)>,
}

impl Trial {
    /// Records the start event on `s`, before the kernel.
    pub fn begin(&self, s: Stream) {
        if let Some((start, _)) = &self.events {
            // A failed record shows as a lost sample.
            let _ = start.handle().record(s);
        }
    }

    /// Records the end event on `s`, after the kernel.
    pub fn end(&self, s: Stream) {
        if let Some((_, end)) = &self.events {
            let _ = end.handle().record(s);
        }
    }

    /// For the launch line: which candidate this launch tries (`None` for a warm-up
    /// launch).
    pub fn label(&self) -> Option<&str> {
        match self.step.kind {
            StepKind::Warmup => None,
            _ => self.events.as_ref().map(|_| self.label.as_str()),
        }
    }
}

/// A kernel's trials in progress: its candidates (the untuned shape first), the
/// decision logic's state, and the asynchronous launches still to be read.
#[derive(Debug)]
pub struct Tuner {
    /// The shapes tried.
    pub candidates: Vec<Candidate>,
    /// The state of the trials.
    pub trials: Trials,
    /// Timed launches made on a queue, read once their end event has completed (never
    /// waited for).
    pub pending: Vec<Trial>,
}

/// The launch-shape tuning of one kernel: the chosen candidate once there is one
/// (read without a lock on every launch), the trials until then. Owned by the
/// kernel; `Sync`.
#[derive(Debug, Default)]
pub struct Tuning {
    chosen: OnceCell<Candidate>,
    tuner: Mutex<Option<Tuner>>,
}

impl Tuning {
    /// The chosen shape, once the trials (or a remembered choice) made one.
    #[inline]
    pub fn chosen(&self) -> Option<&Candidate> {
        self.chosen.get()
    }

    /// Keeps `c` for every later launch (the first choice made stays).
    pub fn choose(&self, c: Candidate) {
        let _ = self.chosen.set(c);
    }

    /// The trials (`None` before the kernel's first tuned launch).
    pub fn tuner(&self) -> MutexGuard<'_, Option<Tuner>> {
        self.tuner.locked()
    }
}
