//! Locks that outlive a panic, written once. A thread that panics while it holds a
//! `std::sync` lock poisons it. The plugins never unwind across the C ABI (the edge's
//! guard catches the panic and reports it as a `libgomp:` error) and go on serving
//! libgomp afterwards, so a poisoned lock is taken as it is: every lock in the plugins
//! guards data that each critical section leaves consistent before any call that may
//! panic, or that is only a cache. Pure code, no state of its own.

use std::sync::{
    Condvar, LockResult, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
    TryLockError, WaitTimeoutResult,
};
use std::time::Duration;

/// The guard of a lock result, poisoned or not.
#[inline]
pub fn unpoisoned<G>(r: LockResult<G>) -> G {
    r.unwrap_or_else(PoisonError::into_inner)
}

/// [`Mutex`] locking that takes a poisoned lock's data as it is.
pub trait Lock<T: ?Sized> {
    /// Locks, waiting for another holder.
    fn locked(&self) -> MutexGuard<'_, T>;
    /// Locks if no other thread holds the lock (`None` if one does).
    fn try_locked(&self) -> Option<MutexGuard<'_, T>>;
}

impl<T: ?Sized> Lock<T> for Mutex<T> {
    #[inline]
    fn locked(&self) -> MutexGuard<'_, T> {
        unpoisoned(self.lock())
    }

    #[inline]
    fn try_locked(&self) -> Option<MutexGuard<'_, T>> {
        match self.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }
}

/// [`RwLock`] locking that takes a poisoned lock's data as it is.
pub trait ReadWrite<T: ?Sized> {
    /// Locks for reading.
    fn read_locked(&self) -> RwLockReadGuard<'_, T>;
    /// Locks for writing.
    fn write_locked(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> ReadWrite<T> for RwLock<T> {
    #[inline]
    fn read_locked(&self) -> RwLockReadGuard<'_, T> {
        unpoisoned(self.read())
    }

    #[inline]
    fn write_locked(&self) -> RwLockWriteGuard<'_, T> {
        unpoisoned(self.write())
    }
}

/// [`Condvar`] waits that take a poisoned lock's data as it is.
pub trait Wait {
    /// Waits for a notification, releasing `g` meanwhile.
    fn wait_locked<'a, T>(&self, g: MutexGuard<'a, T>) -> MutexGuard<'a, T>;
    /// As [`Wait::wait_locked`], at most `d`.
    fn wait_timeout_locked<'a, T>(
        &self,
        g: MutexGuard<'a, T>,
        d: Duration,
    ) -> (MutexGuard<'a, T>, WaitTimeoutResult);
}

impl Wait for Condvar {
    #[inline]
    fn wait_locked<'a, T>(&self, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        unpoisoned(self.wait(g))
    }

    #[inline]
    fn wait_timeout_locked<'a, T>(
        &self,
        g: MutexGuard<'a, T>,
        d: Duration,
    ) -> (MutexGuard<'a, T>, WaitTimeoutResult) {
        unpoisoned(self.wait_timeout(g, d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_is_taken_as_it_is() {
        let m = Mutex::new(1);
        let _ = std::panic::catch_unwind(|| {
            let mut g = m.lock().unwrap();
            *g = 2;
            panic!("poison");
        });
        assert!(m.is_poisoned());
        assert_eq!(*m.locked(), 2);
        assert_eq!(m.try_locked().map(|g| *g), Some(2));
        let held = m.locked();
        assert!(m.try_locked().is_none(), "held by this thread");
        drop(held);
        let rw = RwLock::new(3);
        let _ = std::panic::catch_unwind(|| {
            let _g = rw.write().unwrap();
            panic!("poison");
        });
        assert!(rw.is_poisoned());
        assert_eq!(*rw.read_locked(), 3);
        *rw.write_locked() = 4;
        assert_eq!(*rw.read_locked(), 4);
    }
}
