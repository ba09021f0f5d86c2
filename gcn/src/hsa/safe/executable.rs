//! Code objects and executables (HSA 1.1 loader API): [`CodeObjectReader`], a reader
//! over code-object bytes it owns, and [`Executable`], made from readers for an agent,
//! frozen, validated, then asked for kernel objects and variables. Both are destroyed
//! when dropped (a failure is logged) or by their consuming `destroy`, which returns
//! the runtime's error.
//!
//! Thread-safety: executables, readers and symbols may be used from any thread (HSA
//! spec); an [`Executable`] is only changed (`load`, `freeze`) before it is shared.

use crate::hsa::error::{check, Op};
use crate::hsa::sys::*;
use crate::hsa::table::Runtime;
use gomp_plugin::error::{Error, Result};
use std::ffi::{c_void, CString};

/// A code object reader (`hsa_code_object_reader_create_from_memory`) and the bytes
/// it reads, kept until the reader is destroyed, as the HSA spec requires. Owns both;
/// `Send + Sync` (see the module comment).
pub struct CodeObjectReader {
    raw: hsa_code_object_reader_t,
    rt: &'static Runtime,
    // Read by the runtime through `raw`; dropped after the reader is destroyed.
    _code: Vec<u8>,
}

// SAFETY: reader handles may be used from any thread (HSA spec); the bytes are
// never changed.
unsafe impl Send for CodeObjectReader {}
// SAFETY: as above.
unsafe impl Sync for CodeObjectReader {}

impl CodeObjectReader {
    /// A reader over `code` (the ELF of a code object), which it keeps.
    pub fn from_bytes(rt: &'static Runtime, code: Vec<u8>) -> Result<CodeObjectReader> {
        let mut raw = hsa_code_object_reader_t { handle: 0 };
        // SAFETY: `code` outlives the reader (moved into it below; the reader is
        // destroyed before the bytes are dropped). A Vec's buffer does not move with it.
        let st = unsafe {
            (rt.hsa_code_object_reader_create_from_memory)(
                code.as_ptr().cast(),
                code.len(),
                &mut raw,
            )
        };
        check(st, "hsa_code_object_reader_create_from_memory")?;
        Ok(CodeObjectReader {
            raw,
            rt,
            _code: code,
        })
    }

    /// Destroys the reader, returning the runtime's error if any; then drops the bytes.
    pub fn destroy(self) -> Result<()> {
        let mut me = std::mem::ManuallyDrop::new(self);
        let code = std::mem::take(&mut me._code);
        let (raw, rt) = (me.raw, me.rt);
        // SAFETY: our reader, destroyed once (`me` is never dropped); its bytes are
        // dropped after.
        let st = unsafe { (rt.hsa_code_object_reader_destroy)(raw) };
        drop(code);
        check(st, "hsa_code_object_reader_destroy")
    }
}

impl Drop for CodeObjectReader {
    fn drop(&mut self) {
        // SAFETY: our reader, destroyed once; the bytes are dropped after this.
        let st = unsafe { (self.rt.hsa_code_object_reader_destroy)(self.raw) };
        if let Err(e) = check(st, "hsa_code_object_reader_destroy") {
            log::debug!("{e}");
        }
    }
}

/// An executable (`hsa_executable_create_alt`, full profile, default rounding),
/// destroyed (`hsa_executable_destroy`) when dropped. Owns it; `Send + Sync` (see the
/// module comment).
pub struct Executable {
    raw: hsa_executable_t,
    rt: &'static Runtime,
}

// SAFETY: executable handles may be used from any thread (HSA spec).
unsafe impl Send for Executable {}
// SAFETY: as above; after `freeze` the runtime only reads it.
unsafe impl Sync for Executable {}

fn cname(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| Error::invalid(format!("symbol name {name:?} contains NUL")))
}

impl Executable {
    /// An empty executable (full profile, default float rounding).
    pub fn create(rt: &'static Runtime) -> Result<Executable> {
        let mut raw = hsa_executable_t { handle: 0 };
        // SAFETY: out-pointer to a local; no options.
        let st = unsafe {
            (rt.hsa_executable_create_alt)(
                hsa_profile_t_HSA_PROFILE_FULL,
                hsa_default_float_rounding_mode_t_HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                std::ptr::null(),
                &mut raw,
            )
        };
        check(st, "hsa_executable_create_alt")?;
        Ok(Executable { raw, rt })
    }

    /// Loads `reader`'s code object for `agent` (`hsa_executable_load_agent_code_object`).
    /// The reader must live until the executable is destroyed (its owner keeps both).
    pub fn load(&self, agent: hsa_agent_t, reader: &CodeObjectReader) -> Result<()> {
        // SAFETY: live executable and reader; no options, no loaded-object out-pointer.
        let st = unsafe {
            (self.rt.hsa_executable_load_agent_code_object)(
                self.raw,
                agent,
                reader.raw,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        };
        check(st, "hsa_executable_load_agent_code_object")
    }

    /// Freezes the executable: no more loading, its symbols become usable.
    pub fn freeze(&self) -> Result<()> {
        // SAFETY: live executable; no options.
        let st = unsafe { (self.rt.hsa_executable_freeze)(self.raw, std::ptr::null()) };
        check(st, "hsa_executable_freeze")
    }

    /// `hsa_executable_validate`'s result (0: valid); 0 when the runtime lacks the
    /// entry point (it is optional in the table).
    pub fn validate(&self) -> Result<u32> {
        if !self.rt.has("hsa_executable_validate") {
            return Ok(0);
        }
        let mut result = 0u32;
        // SAFETY: live executable; out-pointer to a local.
        let st = unsafe { (self.rt.hsa_executable_validate)(self.raw, &mut result) };
        check(st, "hsa_executable_validate")?;
        Ok(result)
    }

    /// Looks up `name` for `agent` in the frozen executable; `None` if it has no such
    /// symbol.
    fn symbol(&self, agent: hsa_agent_t, name: &str) -> Result<Option<hsa_executable_symbol_t>> {
        let c = cname(name)?;
        let mut sym = hsa_executable_symbol_t { handle: 0 };
        // SAFETY: NUL-terminated name, agent and out-pointer valid for the call.
        let st = unsafe {
            (self.rt.hsa_executable_get_symbol_by_name)(self.raw, c.as_ptr(), &agent, &mut sym)
        };
        if st == hsa_status_t_HSA_STATUS_ERROR_INVALID_SYMBOL_NAME {
            return Ok(None);
        }
        check(
            st,
            ("hsa_executable_get_symbol_by_name", || {
                format!("('{name}')")
            }),
        )?;
        Ok(Some(sym))
    }

    /// Reads attribute `what` of symbol `sym` (named `name`, for the error) into a `T`.
    ///
    /// # Safety
    /// `T` must be the attribute's type (HSA spec).
    unsafe fn info<T: Default>(
        &self,
        sym: hsa_executable_symbol_t,
        what: hsa_executable_symbol_info_t,
        name: &str,
    ) -> Result<T> {
        let mut v = T::default();
        // SAFETY: out-pointer to a local of the attribute's type (caller).
        let st = unsafe {
            (self.rt.hsa_executable_symbol_get_info)(sym, what, (&mut v as *mut T).cast())
        };
        check(
            st,
            ("hsa_executable_symbol_get_info", || {
                format!("('{name}', {what})")
            }),
        )?;
        Ok(v)
    }

    /// The kernel object (what a dispatch packet's `kernel_object` takes) of kernel
    /// symbol `name` (e.g. `main._omp_fn.0.kd`), `None` if the executable lacks it.
    pub fn kernel_object(&self, agent: hsa_agent_t, name: &str) -> Result<Option<u64>> {
        let Some(sym) = self.symbol(agent, name)? else {
            return Ok(None);
        };
        // SAFETY: KERNEL_OBJECT is a uint64_t.
        let object = unsafe {
            self.info(
                sym,
                hsa_executable_symbol_info_t_HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                name,
            )?
        };
        Ok(Some(object))
    }

    /// A variable's device address and size, `None` if the executable lacks it.
    pub fn variable(&self, agent: hsa_agent_t, name: &str) -> Result<Option<(u64, u32)>> {
        let Some(sym) = self.symbol(agent, name)? else {
            return Ok(None);
        };
        // SAFETY: VARIABLE_ADDRESS is a uint64_t, VARIABLE_SIZE a uint32_t.
        let (addr, size) = unsafe {
            (
                self.info(
                    sym,
                    hsa_executable_symbol_info_t_HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS,
                    name,
                )?,
                self.info(
                    sym,
                    hsa_executable_symbol_info_t_HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE,
                    name,
                )?,
            )
        };
        Ok(Some((addr, size)))
    }

    /// Copies `dst.len()` bytes of loaded variable memory at `addr` (an address
    /// [`Executable::variable`] gave) into `dst`; `call` names the call in the error,
    /// built only if it fails.
    ///
    /// # Safety
    /// `[addr, addr + dst.len())` must lie in the executable's loaded memory.
    pub unsafe fn read(&self, addr: u64, dst: &mut [u8], call: impl Op) -> Result<()> {
        // SAFETY: `dst` is writable for its length; the source range is the caller's.
        unsafe {
            crate::hsa::safe::memory::copy(
                self.rt,
                dst.as_mut_ptr().cast(),
                addr as *const c_void,
                dst.len(),
                call,
            )
        }
    }

    /// Destroys the executable, returning the runtime's error if any.
    pub fn destroy(self) -> Result<()> {
        let (raw, rt) = (self.raw, self.rt);
        std::mem::forget(self);
        // SAFETY: our executable, destroyed once (ownership ended above).
        let st = unsafe { (rt.hsa_executable_destroy)(raw) };
        check(st, "hsa_executable_destroy")
    }
}

impl Drop for Executable {
    fn drop(&mut self) {
        // SAFETY: our executable, destroyed once.
        let st = unsafe { (self.rt.hsa_executable_destroy)(self.raw) };
        if let Err(e) = check(st, "hsa_executable_destroy") {
            log::debug!("{e}");
        }
    }
}
