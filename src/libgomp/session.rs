//! libgomp 17's launch session (docs/plugin-abi.md §12): a block of `session_size()`
//! bytes that libgomp allocates per launch (16-byte aligned), hands to `session_start`
//! with the device number, then to `session_set_target_var_table` with the launch's
//! target-variable table (or to `session_allocate_target_var_table`, whose answer, where
//! libgomp writes the table, is then the table; gcn only), and finally to `run`/`async_run` or `openacc_exec`/
//! `openacc_async_exec`, which take it instead of a device number and a table address.
//! The plugin owns the layout; libgomp only allocates, never reads it.
//!
//! Ownership: the storage is libgomp's, alive from `session_start` until the launch
//! entry point returns (for `async_run`, until the launch is queued: the table and the
//! session must not be read after it returns). [`Session`] is a plain value written
//! into that storage; it owns nothing. Thread-safety: one session is used by one
//! launch on one thread; nothing here is shared.

use crate::error::{Error, Result};
use std::ffi::c_void;

/// What [`Session::start`] writes first, so that a launch handed something that did
/// not go through `session_start` is refused instead of read as a device number.
const STARTED: u32 = 0x5e55_1017;

/// The session block as this plugin lays it out. `#[repr(C)]`, 16-byte aligned (libgomp
/// aligns the block to 16, the stock plugins trap on anything else).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Session {
    /// The device number `session_start` was given.
    pub ord: i32,
    started: u32,
    /// What `session_set_target_var_table` was given, or what
    /// `session_allocate_target_var_table` answered: the address of the launch's table
    /// of mapped-variable addresses as the kernel is to receive it (0: no table,
    /// nothing mapped).
    pub table: u64,
    /// How many times the table was set or allocated: libgomp does one of the two once
    /// per session.
    pub sets: u32,
    reserved: u32,
}

/// `session_size`: the bytes libgomp allocates for a session.
pub const SIZE: usize = std::mem::size_of::<Session>();
/// The alignment the plugin needs (libgomp gives 16).
pub const ALIGN: usize = std::mem::align_of::<Session>();

impl Session {
    /// `session_start`: writes a fresh session for device `ord` into `p`.
    ///
    /// # Safety
    /// `p` is NULL or points to [`SIZE`] writable bytes (libgomp's block).
    pub unsafe fn start(p: *mut c_void, ord: i32) -> Result<()> {
        check(p)?;
        let s = Session {
            ord,
            started: STARTED,
            table: 0,
            sets: 0,
            reserved: 0,
        };
        // SAFETY: checked non-NULL and aligned; the caller's block has room for it.
        unsafe { p.cast::<Session>().write(s) };
        Ok(())
    }

    /// The session at `p`, which `session_start` must have written.
    ///
    /// # Safety
    /// `p` is NULL or points to [`SIZE`] bytes of libgomp's session block, not used by
    /// another thread meanwhile.
    pub unsafe fn get<'a>(p: *mut c_void) -> Result<&'a mut Session> {
        check(p)?;
        // SAFETY: checked non-NULL and aligned; the caller's block, exclusively ours
        // for this call.
        let s = unsafe { &mut *p.cast::<Session>() };
        if s.started != STARTED {
            return Err(Error::invalid(format!(
                "session {p:p} was not started by GOMP_OFFLOAD_session_start"
            )));
        }
        Ok(s)
    }

    /// `session_set_target_var_table`: records the table the kernel is to receive.
    pub fn set_table(&mut self, table: *mut c_void) {
        self.table = table as u64;
        self.sets += 1;
    }
}

fn check(p: *mut c_void) -> Result<()> {
    if p.is_null() {
        return Err(Error::invalid("no session (NULL)"));
    }
    if p as usize % ALIGN != 0 {
        return Err(Error::invalid(format!(
            "session {p:p} is not {ALIGN}-byte aligned"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C, align(16))]
    struct Block([u8; 64]);

    #[test]
    fn layout() {
        assert_eq!(SIZE, 32);
        assert_eq!(ALIGN, 16);
    }

    #[test]
    fn start_set_get() {
        let mut b = Block([0xcd; 64]);
        let p = b.0.as_mut_ptr().cast::<c_void>();
        // SAFETY: a 64-byte, 16-aligned block.
        unsafe { Session::get(p) }.expect_err("not started");
        // SAFETY: as above.
        unsafe { Session::start(p, 3) }.unwrap();
        // SAFETY: as above, started.
        let s = unsafe { Session::get(p) }.unwrap();
        assert_eq!((s.ord, s.table, s.sets), (3, 0, 0));
        s.set_table(0x1000 as *mut c_void);
        // SAFETY: as above.
        let s = unsafe { Session::get(p) }.unwrap();
        assert_eq!((s.ord, s.table, s.sets), (3, 0x1000, 1));
    }

    #[test]
    fn refuses_null_and_misaligned() {
        let mut b = Block([0; 64]);
        // SAFETY: NULL is refused before any access.
        let e = unsafe { Session::start(std::ptr::null_mut(), 0) }.unwrap_err();
        assert!(e.to_string().contains("NULL"), "{e}");
        // SAFETY: the misaligned pointer is refused before any access.
        let e = unsafe { Session::start(b.0.as_mut_ptr().add(8).cast(), 0) }.unwrap_err();
        assert!(e.to_string().contains("16-byte aligned"), "{e}");
    }
}
