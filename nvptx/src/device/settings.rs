//! The device core's settings part: its copy of the process's settings
//! ([`crate::config`]) and what the program's use of the device switches at run time
//! (OpenACC in use, a kernel completed).
//!
//! Owned by [`super::Core`]; `Sync` (plain data and relaxed flags).

use crate::config::tune::ThreadStream;
use crate::config::Config;
use std::sync::atomic::{AtomicBool, Ordering};

/// Settings and run-time switches of one device. Owned by the core; `Sync`.
pub struct Settings {
    /// Settings from the environment.
    pub(super) config: Config,
    /// Where deferred copies go and how the threads' streams are made.
    pub(super) tstream: ThreadStream,
    /// Set once the program uses OpenACC on this device: synchronous copies then go
    /// through CUDA's legacy default stream, so they stay ordered after the work of
    /// OpenACC queues as they are with the stock plugin.
    openacc: AtomicBool,
    /// Set once a kernel of the device has completed (`Core::note_kernel_done`);
    /// `GOMP_NVPTX_TUNE=poolwarm=later` starts the pool's warm-up only then.
    kernel_done: AtomicBool,
}

impl Settings {
    /// The settings of a device opened with `config`.
    pub(super) fn new(config: Config) -> Settings {
        Settings {
            tstream: config.tune.tstream,
            config,
            openacc: AtomicBool::new(false),
            kernel_done: AtomicBool::new(false),
        }
    }

    /// True once the program uses OpenACC on this device.
    #[inline]
    pub(super) fn openacc_in_use(&self) -> bool {
        self.openacc.load(Ordering::Relaxed)
    }

    /// Notes that the program uses OpenACC on this device.
    pub(super) fn use_openacc(&self) {
        self.openacc.store(true, Ordering::Relaxed);
    }

    /// True once a kernel of the device has completed.
    #[inline]
    pub(super) fn kernel_done(&self) -> bool {
        self.kernel_done.load(Ordering::Relaxed)
    }

    /// Notes that a kernel of the device has completed (one relaxed load when already
    /// noted).
    #[inline]
    pub(super) fn note_kernel_done(&self) {
        if !self.kernel_done.load(Ordering::Relaxed) {
            self.kernel_done.store(true, Ordering::Relaxed);
        }
    }
}
