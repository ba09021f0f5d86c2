//! The copy engine's buffers of one device: what the copy paths keep per device (the
//! staging engine, the bounce buffers, the copy kernel) and the count of interop
//! streams that stop deferring.
//!
//! [`Buffers`] is owned by the device's parts (`device::parts::Parts`), which the
//! copy paths (`device::copy`) are given; `Sync` (each part locks inside, the count is
//! atomic).

use crate::config::Config;
use crate::host::bounce::Bounce;
use crate::host::kernel_copy::KernelCopy;
use crate::host::staging::Staging;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The copy paths' buffers of one device and the interop-stream count. Owned by the
/// device's parts; `Sync`.
pub struct Buffers {
    /// The staging engine (page-locked buffers, lane threads) for large pageable
    /// copies (`staged.rs`).
    staging: Staging,
    /// Page-locked bounce buffers for small pageable copies (`bounce.rs`, also
    /// `deferred.rs`' and a queue's copies).
    bounce: Bounce,
    /// Copies by kernel for device-heap memory during reverse offload
    /// (`kernel_copy.rs`).
    kernel_copy: KernelCopy,
    /// Interop objects with a `targetsync` stream alive on the device: while there are
    /// any, host-to-device copies complete before returning (the program may queue work
    /// on such a stream at any time, out of the plugin's sight).
    interop_streams: AtomicUsize,
}

impl Buffers {
    /// The buffers of a device opened with `config`, its bounce buffers of
    /// `bounce_size` bytes (the bounce path's knob; nothing allocated yet).
    pub fn new(config: &Config, bounce_size: usize) -> Buffers {
        Buffers {
            staging: Staging::new(config.staging),
            bounce: Bounce::new(bounce_size),
            kernel_copy: KernelCopy::default(),
            interop_streams: AtomicUsize::new(0),
        }
    }

    /// The staging engine.
    #[inline]
    pub(crate) fn staging(&self) -> &Staging {
        &self.staging
    }

    /// The bounce buffers.
    #[inline]
    pub(crate) fn bounce(&self) -> &Bounce {
        &self.bounce
    }

    /// Copies by kernel for device-heap memory during reverse offload.
    #[inline]
    pub fn kernel_copy(&self) -> &KernelCopy {
        &self.kernel_copy
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

    /// Releases the paths' buffers: staging, bounce buffers, the copy kernel (device
    /// close, context current).
    pub(super) fn destroy(&self) {
        self.staging.destroy();
        self.bounce.destroy();
        self.kernel_copy.destroy();
    }
}
