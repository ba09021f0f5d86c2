//! A pool of idle CUDA handles of one kind (streams, events): taken for one use,
//! given back afterwards, created on demand and destroyed at device close.

use gomp_plugin::error::Result;
use std::sync::Mutex;

/// A CUDA handle type the pool can create and destroy in the current context.
pub trait Handle: Copy + Send {
    /// Creates a new handle (the device's context is current).
    fn create() -> Result<Self>;
    /// Destroys an idle handle; errors are ignored (teardown).
    fn destroy(self);
}

/// Idle handles of one device. Thread-safe; owns the handles it holds.
pub struct IdlePool<H: Handle> {
    idle: Mutex<Vec<H>>,
}

impl<H: Handle> Default for IdlePool<H> {
    fn default() -> Self {
        IdlePool {
            idle: Mutex::new(Vec::new()),
        }
    }
}

impl<H: Handle> IdlePool<H> {
    /// Takes an idle handle or creates one.
    pub fn acquire(&self) -> Result<H> {
        match self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            Some(h) => Ok(h),
            None => H::create(),
        }
    }

    /// Gives back a handle with no pending work.
    pub fn release(&self, h: H) {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(h);
    }

    /// Destroys every idle handle (device close).
    pub fn destroy_all(&self) {
        for h in self
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            h.destroy();
        }
    }
}
