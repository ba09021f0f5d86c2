//! The device core's settings part: its copy of the process's settings
//! ([`crate::config`]) and what the program's use of the device switches at run time
//! (OpenACC in use, a kernel completed, interop streams alive, the ways of waiting
//! measured).
//!
//! Owned by the device core (`device::Core`); `Sync` (plain data, relaxed flags and a
//! sequentially consistent count).

use crate::config::tune::ThreadStream;
use crate::config::Config;
use crate::cuda::safe::Stream;
use crate::device::serving;
use crate::device::wait_choice::WaitChoice;
use gomp_plugin::error::Result;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Settings and run-time switches of one device. Owned by the core; `Sync`.
pub struct Settings {
    /// Settings from the environment.
    config: Config,
    /// Where deferred copies go and how the threads' streams are made.
    tstream: ThreadStream,
    /// Set once the program uses OpenACC on this device: synchronous copies then go
    /// through CUDA's legacy default stream, so they stay ordered after the work of
    /// OpenACC queues as they are with the stock plugin.
    openacc: AtomicBool,
    /// Set once a kernel of the device has completed (`Settings::note_kernel_done`);
    /// `GOMP_NVPTX_TUNE=poolwarm=later` starts the pool's warm-up only then.
    kernel_done: AtomicBool,
    /// Interop objects with a `targetsync` stream alive on the device: while there are
    /// any, host-to-device copies complete before returning (the program may queue work
    /// on such a stream at any time, out of the plugin's sight).
    interop_streams: AtomicUsize,
    /// How synchronous launches and small copies to the host are waited for
    /// (`GOMP_NVPTX_TUNE=syncwait`, measured under `auto`).
    waits: WaitChoice,
}

impl Settings {
    /// The settings of a device opened with `config`.
    pub(super) fn new(config: Config) -> Settings {
        Settings {
            tstream: config.tune.tstream,
            waits: WaitChoice::new(config.tune.syncwait),
            config,
            openacc: AtomicBool::new(false),
            kernel_done: AtomicBool::new(false),
            interop_streams: AtomicUsize::new(0),
        }
    }

    /// The device's settings (the process's, copied at open).
    #[inline]
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How synchronous launches and small copies to the host are waited for.
    #[inline]
    pub fn waits(&self) -> &WaitChoice {
        &self.waits
    }

    /// True once the program uses OpenACC on this device.
    #[inline]
    pub fn openacc_in_use(&self) -> bool {
        self.openacc.load(Ordering::Relaxed)
    }

    /// Notes that the program uses OpenACC on this device: synchronous copies then go
    /// through CUDA's legacy default stream, so they stay ordered after the work of
    /// OpenACC queues as they are with the stock plugin.
    pub fn use_openacc(&self) {
        self.openacc.store(true, Ordering::Relaxed);
    }

    /// True once a kernel of the device has completed.
    #[inline]
    pub fn kernel_done(&self) -> bool {
        self.kernel_done.load(Ordering::Relaxed)
    }

    /// Notes that a kernel of the device has completed (the launch paths call it after
    /// each completion; one relaxed load when already noted). Any thread.
    #[inline]
    pub fn note_kernel_done(&self) {
        if !self.kernel_done.load(Ordering::Relaxed) {
            self.kernel_done.store(true, Ordering::Relaxed);
        }
    }

    /// Whether an interop `targetsync` stream is alive.
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

    /// The stream a synchronous copy of the calling thread goes on: its own stream
    /// (from `own`), or CUDA's legacy default stream once OpenACC is in use (not while
    /// serving a reverse-offload request: the requesting kernel may be ordered before
    /// it).
    #[inline]
    pub fn copy_stream_or(&self, own: impl FnOnce() -> Result<Stream>) -> Result<Stream> {
        if self.openacc_in_use() && !serving::serving_request() {
            return Ok(Stream::LEGACY);
        }
        own()
    }

    /// The stream a deferred host-to-device copy of the calling thread goes on: its own
    /// stream (from `own`), or the legacy default stream once OpenACC is in use or
    /// `GOMP_NVPTX_TUNE=tstream=legacy` says so.
    #[inline]
    pub fn deferred_stream_or(&self, own: impl FnOnce() -> Result<Stream>) -> Result<Stream> {
        if self.openacc_in_use() || self.tstream == ThreadStream::Legacy {
            return Ok(Stream::LEGACY);
        }
        own()
    }
}
