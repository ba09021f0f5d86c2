//! CUDA events (timing disabled) used to observe the completion of stream-ordered work
//! without a host callback per launch; pooled per device.

use crate::cuda::pools::idle::{Handle, IdlePool};
use crate::cuda::safe::OwnedEvent;
use gomp_plugin::error::Result;

impl Handle for OwnedEvent {
    fn create() -> Result<Self> {
        OwnedEvent::create()
    }
}

/// Idle events of one device (owned; destroyed when dropped).
pub type EventPool = IdlePool<OwnedEvent>;
