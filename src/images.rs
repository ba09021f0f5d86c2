//! The images loaded on one opened device, kept by the framework for every backend (the
//! model is LLVM offload's `LoadedImages`): [`LoadedImages`] holds each backend's own
//! image type under the key libgomp names it by (the address of the image descriptor
//! `target_data` it passes to `load_image` and `unload_image`), in load order, and
//! fixes the rules once: an image is found and removed by that key, an unknown key is
//! libgomp's error ("unload_image: image ... is not loaded"), and at close every image
//! still loaded is unloaded in reverse load order (the last loaded first, as libgomp
//! itself unloads a device's images), all of them even when one fails, the first error
//! kept.
//!
//! Ownership: a [`LoadedImages`] belongs to its opened device and owns the images in it;
//! [`LoadedImages::remove`] and [`LoadedImages::unload_all`] hand them back to the
//! backend to unload. Thread-safety: `Send + Sync` when `I: Send`; the list is behind a
//! mutex held only to add, look up or take out (never while an image is unloaded), and
//! libgomp serialises `load_image`/`unload_image`/`fini_device` per device.

use crate::error::{Error, Result};
use crate::sync::Lock;
use std::ffi::c_void;
use std::sync::Mutex;

/// The images loaded on one device, in load order, each under libgomp's key (the
/// address of its image descriptor). See the module comment for the rules.
pub struct LoadedImages<I> {
    list: Mutex<Vec<(usize, I)>>,
}

impl<I> Default for LoadedImages<I> {
    fn default() -> Self {
        Self::new()
    }
}

/// The key's address as libgomp's pointer, for messages.
fn shown(key: usize) -> *const c_void {
    key as *const c_void
}

impl<I> LoadedImages<I> {
    /// No image loaded.
    pub const fn new() -> Self {
        LoadedImages {
            list: Mutex::new(Vec::new()),
        }
    }

    /// `Ok` when no image is loaded under `key`, else `load_image`'s error "image ...
    /// is already loaded" (for a backend that refuses a second load of one image).
    pub fn ensure_absent(&self, key: usize) -> Result<()> {
        if self.contains(key) {
            return Err(Error::invalid(format!(
                "load_image: image {:p} is already loaded",
                shown(key)
            )));
        }
        Ok(())
    }

    /// Whether an image is loaded under `key`.
    pub fn contains(&self, key: usize) -> bool {
        self.list.locked().iter().any(|(k, _)| *k == key)
    }

    /// Adds a loaded image under `key`, the last in load order.
    pub fn add(&self, key: usize, image: I) {
        self.list.locked().push((key, image));
    }

    /// `f` of the image loaded under `key` (the lock is held while `f` runs: keep it
    /// short); `None` when none is.
    pub fn find<R>(&self, key: usize, f: impl FnOnce(&I) -> R) -> Option<R> {
        self.list
            .locked()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, i)| f(i))
    }

    /// Takes the image loaded under `key` out of the list, for the backend to unload;
    /// an unknown key is `unload_image`'s error "image ... is not loaded".
    pub fn remove(&self, key: usize) -> Result<I> {
        let mut list = self.list.locked();
        let i = list.iter().position(|(k, _)| *k == key).ok_or_else(|| {
            Error::invalid(format!(
                "unload_image: image {:p} is not loaded",
                shown(key)
            ))
        })?;
        Ok(list.remove(i).1)
    }

    /// How many images are loaded.
    pub fn len(&self) -> usize {
        self.list.locked().len()
    }

    /// Whether no image is loaded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Unloads every image still loaded (at the device's close), in reverse load order,
    /// with `unload`: all of them, also after one failed; returns how many there were,
    /// or the first error. The list is empty afterwards and its lock is not held while
    /// `unload` runs.
    pub fn unload_all(&self, mut unload: impl FnMut(I) -> Result<()>) -> Result<usize> {
        let images = std::mem::take(&mut *self.list.locked());
        let n = images.len();
        let mut first_err = None;
        for (_, image) in images.into_iter().rev() {
            if let Err(e) = unload(image) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(n), Err)
    }

    /// Leaves every image as it is until the process ends: they leave the list without
    /// being unloaded or dropped (a kernel of theirs may still run while the device is
    /// torn down from a reverse-offload host function that ended the program).
    pub fn leave_to_exit(&self) {
        std::mem::forget(std::mem::take(&mut *self.list.locked()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn found_and_removed_by_key() {
        let l = LoadedImages::new();
        assert!(l.is_empty());
        l.add(0x1000, "a");
        l.add(0x2000, "b");
        assert_eq!(l.len(), 2);
        assert!(l.contains(0x2000) && !l.contains(0x3000));
        assert_eq!(l.find(0x1000, |i| *i), Some("a"));
        assert_eq!(l.find(0x3000, |i| *i), None);
        assert_eq!(l.remove(0x1000).unwrap(), "a");
        assert!(!l.contains(0x1000));
        assert_eq!(l.len(), 1);
        let e = l.remove(0x1000).unwrap_err().to_string();
        assert!(
            e.contains("unload_image: image 0x1000 is not loaded"),
            "{e}"
        );
    }

    #[test]
    fn a_second_load_of_one_image_is_refused_by_ensure_absent() {
        let l = LoadedImages::new();
        assert!(l.ensure_absent(0xabc0).is_ok());
        l.add(0xabc0, 1);
        let e = l.ensure_absent(0xabc0).unwrap_err().to_string();
        assert!(
            e.contains("load_image: image 0xabc0 is already loaded"),
            "{e}"
        );
        assert!(l.ensure_absent(0xabd0).is_ok());
    }

    #[test]
    fn close_unloads_in_reverse_load_order_all_of_them_keeping_the_first_error() {
        let l = LoadedImages::new();
        for k in 1..=4usize {
            l.add(k * 0x10, k);
        }
        assert_eq!(l.remove(0x20).unwrap(), 2);
        let mut order = Vec::new();
        let r = l.unload_all(|k| {
            order.push(k);
            if k == 3 || k == 1 {
                Err(Error::invalid(format!("image {k} failed")))
            } else {
                Ok(())
            }
        });
        assert_eq!(order, [4, 3, 1]);
        assert_eq!(
            r.unwrap_err().to_string(),
            Error::invalid("image 3 failed").to_string()
        );
        assert!(l.is_empty());
        assert_eq!(l.unload_all(|_| panic!("nothing is left")).unwrap(), 0);
    }

    #[test]
    fn unload_all_counts_and_leave_to_exit_drops_nothing() {
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let drops = Arc::new(AtomicUsize::new(0));
        let l = LoadedImages::new();
        l.add(1, Counted(drops.clone()));
        l.add(2, Counted(drops.clone()));
        assert_eq!(l.unload_all(|_| Ok(())).unwrap(), 2);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        l.add(3, Counted(drops.clone()));
        l.leave_to_exit();
        assert!(l.is_empty());
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }
}
