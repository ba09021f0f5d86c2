//! The pool type behind [`super::streams`] and [`super::events`]: idle handles of one
//! kind, taken for one use and given back.

use gomp_plugin::error::Result;
use gomp_plugin::sync::Lock;
use std::sync::Mutex;

/// An owning CUDA handle the pool can create in the current context; dropping it
/// destroys the handle.
pub trait Handle: Send + Sized {
    /// Creates a new handle (the device's context is current).
    fn create() -> Result<Self>;
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
    #[inline]
    pub fn acquire(&self) -> Result<H> {
        match self.idle.locked().pop() {
            Some(h) => Ok(h),
            None => H::create(),
        }
    }

    /// Gives back a handle with no pending work.
    #[inline]
    pub fn release(&self, h: H) {
        self.idle.locked().push(h);
    }

    /// Destroys every idle handle (device close); failures are logged by the handles.
    pub fn destroy_all(&self) {
        let idle = std::mem::take(&mut *self.idle.locked());
        drop(idle);
    }
}
