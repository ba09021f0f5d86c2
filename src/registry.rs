//! The open devices of one product, by libgomp's device ordinal: one rule for every
//! backend. Sized by `get_num_devices`; a slot holds the device from `init_device`
//! until `fini_device`. Closing a device that is not open is not an error (libgomp may
//! finalize every device it knows).
//!
//! The registry also holds the product's live kernels ([`KernelSet`]): what
//! `load_image` registered, until `unload_image` or `fini_device` of their device.
//!
//! Thread-safety: a read-mostly lock; lookups (every entry point) take it shared and
//! clone the `Arc`, so a device stays alive while a call on it is in flight even if
//! another thread finalizes it.

use crate::device::{Device, DeviceCore};
use crate::error::{Error, Result};
use crate::kernels::KernelSet;
use crate::sync::ReadWrite;
use std::sync::{Arc, RwLock};

/// The open devices of one product. A `static` of the backend; thread-safe.
pub struct Registry<D: Device> {
    name: &'static str,
    slots: RwLock<Vec<Option<Arc<D>>>>,
    kernels: KernelSet<D::Kernel>,
}

impl<D: Device> Registry<D> {
    /// An empty registry; `name` ("nvptx", "gcn") words its errors.
    pub const fn new(name: &'static str) -> Self {
        Registry {
            name,
            slots: RwLock::new(Vec::new()),
            kernels: KernelSet::new(),
        }
    }

    /// The live kernels of every open device.
    pub fn kernels(&self) -> &KernelSet<D::Kernel> {
        &self.kernels
    }

    /// Makes room for ordinals `0..n` (never shrinks).
    pub fn ensure_len(&self, n: usize) {
        let mut s = self.slots.write_locked();
        if s.len() < n {
            s.resize(n, None);
        }
    }

    /// `init_device`: opens `ord` with `open` and keeps it. An ordinal beyond the
    /// registry's size or one already open is an error (and `open` is not called).
    pub fn open(&self, ord: i32, open: impl FnOnce(i32) -> Result<D>) -> Result<()> {
        let mut s = self.slots.write_locked();
        let slot = usize::try_from(ord)
            .ok()
            .and_then(|i| s.get_mut(i))
            .ok_or_else(|| Error::invalid(format!("no {} device {ord}", self.name)))?;
        if slot.is_some() {
            return Err(Error::invalid(format!(
                "{} device {ord} is already open",
                self.name
            )));
        }
        *slot = Some(Arc::new(open(ord)?));
        Ok(())
    }

    /// `fini_device`: takes `ord` out of the registry, unregisters its kernels and
    /// closes it; a device that is not open is fine. Calls in flight keep their `Arc`
    /// until they return.
    pub fn close(&self, ord: i32) -> Result<()> {
        let dev = usize::try_from(ord)
            .ok()
            .and_then(|i| self.slots.write_locked().get_mut(i).and_then(Option::take));
        match dev {
            Some(d) => {
                self.kernels.remove_device(ord);
                d.close()
            }
            None => Ok(()),
        }
    }

    /// The open device `ord`, activated for this thread.
    pub fn get(&self, ord: i32) -> Result<Arc<D>> {
        let d = self
            .get_if_open(ord)
            .ok_or_else(|| Error::invalid(format!("{} device {ord} is not open", self.name)))?;
        d.core().activate()?;
        Ok(d)
    }

    /// The open device `ord`, not activated; `None` if it is not open.
    pub fn get_if_open(&self, ord: i32) -> Option<Arc<D>> {
        self.slots
            .read_locked()
            .get(usize::try_from(ord).ok()?)
            .cloned()
            .flatten()
    }

    /// The first open device, activated (for calls that name none, like page-locked
    /// host allocation).
    pub fn any(&self) -> Result<Arc<D>> {
        let d = self
            .slots
            .read_locked()
            .iter()
            .flatten()
            .next()
            .cloned()
            .ok_or_else(|| Error::invalid(format!("no {} device is open", self.name)))?;
        d.core().activate()?;
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::DevPtr;
    use crate::device::LoadedImage;
    use std::ffi::{c_int, c_void};
    use std::sync::atomic::{AtomicUsize, Ordering};

    static CLOSED: AtomicUsize = AtomicUsize::new(0);

    struct Fake(i32);
    impl DeviceCore for Fake {
        fn alloc(&self, _: usize) -> Result<DevPtr> {
            Ok(0)
        }
        fn free(&self, _: DevPtr) -> Result<()> {
            Ok(())
        }
        unsafe fn dev2host(&self, _: *mut c_void, _: DevPtr, _: usize) -> Result<()> {
            Ok(())
        }
        unsafe fn host2dev(&self, _: DevPtr, _: *const c_void, _: usize) -> Result<()> {
            Ok(())
        }
        fn dev2dev(&self, _: DevPtr, _: DevPtr, _: usize) -> Result<()> {
            Ok(())
        }
        fn memset(&self, _: DevPtr, _: c_int, _: usize) -> Result<()> {
            Ok(())
        }
        fn is_accessible(&self, _: usize, _: usize) -> bool {
            false
        }
    }
    impl Device for Fake {
        type Kernel = ();
        type Core = Fake;
        fn core(&self) -> &Fake {
            self
        }
        fn close(&self) -> Result<()> {
            CLOSED.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        unsafe fn load_image(
            self: &Arc<Self>,
            _: u32,
            _: *const c_void,
            _: bool,
            _: *const u64,
        ) -> Result<LoadedImage<()>> {
            unimplemented!()
        }
        fn unload_image(&self, _: *const c_void) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn open_get_close() {
        let r: Registry<Fake> = Registry::new("test");
        assert!(r.open(0, |o| Ok(Fake(o))).is_err(), "not sized yet");
        r.ensure_len(2);
        assert_eq!(
            r.get(1).err().unwrap().to_string(),
            "test device 1 is not open"
        );
        assert!(r.any().is_err());
        r.open(1, |o| Ok(Fake(o))).unwrap();
        assert_eq!(r.get(1).unwrap().0, 1);
        assert_eq!(r.any().unwrap().0, 1);
        assert_eq!(
            r.open(1, |_| panic!("must not open twice"))
                .err()
                .unwrap()
                .to_string(),
            "test device 1 is already open"
        );
        assert!(r.open(-1, |o| Ok(Fake(o))).is_err());
        assert!(r.open(0, |_| Err(Error::invalid("no"))).is_err());
        assert!(
            r.get_if_open(0).is_none(),
            "a failed open leaves the slot empty"
        );
        let held = r.get(1).unwrap();
        r.close(1).unwrap();
        assert_eq!(CLOSED.load(Ordering::SeqCst), 1);
        assert!(r.get(1).is_err());
        assert_eq!(held.0, 1, "a call in flight keeps its device");
        r.close(1).unwrap();
        r.close(7).unwrap();
        assert_eq!(
            CLOSED.load(Ordering::SeqCst),
            1,
            "closing a closed slot does nothing"
        );
        r.ensure_len(1);
        r.open(1, |o| Ok(Fake(o))).unwrap();
    }
}
