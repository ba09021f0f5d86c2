//! What the copy paths keep, each path's engine declared in its own file: per device
//! ([`Buffers`]: the staging engine, the bounce buffers, the copy kernel) and per host
//! thread ([`ThreadBuffers`]: the thread's ring for small copies and its read-ahead of
//! regions' results, kept in the thread's lane beside its stream).
//!
//! [`Buffers`] is owned by the device's parts (`device::parts::Parts`' `buffers`),
//! which the copy paths are given; `Sync` (each engine locks inside). [`ThreadBuffers`]
//! is each lane's data (`device::launch_resources::LaunchResources`' thread streams),
//! used only by the thread owning the lane (see each part), dropped with the lane at
//! device close. The paths ask for the engine they use by its type (`AsRef`, see
//! `path.rs`).

use super::bounce::Bounce;
use super::kernel_copy::KernelCopy;
use super::read_ahead::ReadAhead;
use super::ring::Ring;
use super::staged::Staging;
use crate::config::Config;

/// The copy paths' buffers of one device. Owned by the device's parts; `Sync`.
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
}

impl Buffers {
    /// The buffers of a device opened with `config`, its bounce buffers of
    /// `bounce_size` bytes (the bounce path's knob; nothing allocated yet).
    pub fn new(config: &Config, bounce_size: usize) -> Buffers {
        Buffers {
            staging: Staging::new(config.staging),
            bounce: Bounce::new(bounce_size),
            kernel_copy: KernelCopy::default(),
        }
    }

    /// Copies by kernel for device-heap memory during reverse offload.
    #[inline]
    pub fn kernel_copy(&self) -> &KernelCopy {
        &self.kernel_copy
    }

    /// Releases the paths' buffers: staging, bounce buffers, the copy kernel (device
    /// close, context current).
    pub fn destroy(&self) {
        self.staging.destroy();
        self.bounce.destroy();
        self.kernel_copy.destroy();
    }
}

impl AsRef<Staging> for Buffers {
    /// The staging engine.
    #[inline]
    fn as_ref(&self) -> &Staging {
        &self.staging
    }
}

impl AsRef<Bounce> for Buffers {
    /// The bounce buffers.
    #[inline]
    fn as_ref(&self) -> &Bounce {
        &self.bounce
    }
}

impl AsRef<KernelCopy> for Buffers {
    /// Copies by kernel for device-heap memory during reverse offload.
    #[inline]
    fn as_ref(&self) -> &KernelCopy {
        &self.kernel_copy
    }
}

/// What a host thread keeps per device in its lane (`cuda::pools::thread_streams`): its
/// ring for small copies and its read-ahead of regions' results. Used only by the
/// thread owning the lane (see each part); dropped with the lane at device close.
#[derive(Default)]
pub struct ThreadBuffers {
    /// The ring for small copies (`ring.rs`).
    pub ring: Ring,
    /// The read-ahead of regions' results (`read_ahead.rs`).
    pub read_ahead: ReadAhead,
}

impl AsRef<Ring> for ThreadBuffers {
    /// The ring for small copies.
    #[inline]
    fn as_ref(&self) -> &Ring {
        &self.ring
    }
}

impl AsRef<ReadAhead> for ThreadBuffers {
    /// The read-ahead of regions' results.
    #[inline]
    fn as_ref(&self) -> &ReadAhead {
        &self.read_ahead
    }
}
