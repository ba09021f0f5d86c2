//! Modules and JIT linking: [`Module`] (unloaded when dropped), [`LinkState`]
//! (destroyed when dropped), and the queries on a module's functions.

use crate::cu;
use crate::cuda::sys::*;
use crate::cuda::table;
use gomp_plugin::error::Result;
use std::ffi::{c_char, c_void, CStr};

/// A loaded CUDA module (`cuModuleLoadData`), unloaded (`cuModuleUnload`) when dropped
/// or by [`Module::unload`]. Its functions and globals are valid while it lives.
/// `Send + Sync`: module handles may be used from any thread; lookups only read.
#[repr(transparent)]
#[derive(Debug)]
pub struct Module(CUmodule);

// SAFETY: CUDA module handles may be used from any host thread.
unsafe impl Send for Module {}
// SAFETY: as above; `&self` methods are lookups.
unsafe impl Sync for Module {}

fn not_found_is_none<T>(r: Result<()>, v: T) -> Result<Option<T>> {
    match r {
        Ok(()) => Ok(Some(v)),
        Err(e) if e.has_code(CUDA_ERROR_NOT_FOUND) => Ok(None),
        Err(e) => Err(e),
    }
}

impl Module {
    /// Loads a module from `image` (PTX text, cubin or fatbin) in the current context.
    ///
    /// # Safety
    /// `image` must point to a complete image (PTX NUL-terminated), readable during the
    /// call.
    #[inline]
    pub unsafe fn load_data(image: *const c_void) -> Result<Module> {
        let mut m: CUmodule = std::ptr::null_mut();
        // SAFETY: caller's guarantee; out-pointer to a local.
        unsafe { cu!(cuModuleLoadData(&mut m, image)) }?;
        Ok(Module(m))
    }

    /// The kernel `name`; `None` if the module does not define it.
    #[inline]
    pub fn function(&self, name: &CStr) -> Result<Option<CUfunction>> {
        let mut f: CUfunction = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the module is loaded; NUL-terminated name.
        let r = unsafe { cu!(cuModuleGetFunction(&mut f, self.0, name.as_ptr())) };
        not_found_is_none(r, f).map(|o| o.map(|_| f))
    }

    /// The module's handle, for lookups made later while it stays loaded
    /// ([`ModuleRef`]).
    #[inline]
    pub fn borrow(&self) -> ModuleRef {
        ModuleRef(self.0)
    }

    /// The global `name` as (device address, bytes); `None` if the module does not
    /// define it.
    #[inline]
    pub fn global(&self, name: &CStr) -> Result<Option<(CUdeviceptr, usize)>> {
        let (mut p, mut n) = (0, 0);
        // SAFETY: out-pointers to locals; the module is loaded.
        let r = unsafe { cu!(cuModuleGetGlobal(&mut p, &mut n, self.0, name.as_ptr())) };
        not_found_is_none(r, ()).map(|o| o.map(|()| (p, n)))
    }

    /// Unloads the module, returning the driver's error if any.
    #[inline]
    pub fn unload(self) -> Result<()> {
        let m = self.0;
        std::mem::forget(self);
        // SAFETY: loaded by `load_data`, unloaded once.
        unsafe { cu!(cuModuleUnload(m)) }
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: loaded by `load_data`, unloaded once.
        if let Err(e) = unsafe { cu!(cuModuleUnload(self.0)) } {
            log::debug!("module {:p}: {e}", self.0);
        }
    }
}

/// A loaded module's handle, borrowed from its [`Module`] for lookups made after
/// loading (a kernel looked up at its first launch). `Copy`, `Send + Sync` (module
/// handles may be used from any thread); it does not keep the module loaded: every
/// lookup is `unsafe` and requires the module to be still loaded.
#[derive(Clone, Copy, Debug)]
pub struct ModuleRef(CUmodule);

// SAFETY: CUDA module handles may be used from any host thread.
unsafe impl Send for ModuleRef {}
// SAFETY: as above; the handle is only read.
unsafe impl Sync for ModuleRef {}

impl ModuleRef {
    /// The kernel `name`; `None` if the module does not define it.
    ///
    /// # Safety
    /// The module must still be loaded.
    #[inline]
    pub unsafe fn function(self, name: &CStr) -> Result<Option<CUfunction>> {
        let mut f: CUfunction = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the module is loaded (caller); NUL-terminated
        // name.
        let r = unsafe { cu!(cuModuleGetFunction(&mut f, self.0, name.as_ptr())) };
        not_found_is_none(r, f).map(|o| o.map(|_| f))
    }
}

/// One attribute of function `f`.
///
/// # Safety
/// `f` must be a function of a loaded module.
#[inline]
pub unsafe fn func_attribute(f: CUfunction, a: CUfunction_attribute) -> Result<i32> {
    let mut v = 0;
    // SAFETY: out-pointer to a local; `f` belongs to a loaded module (caller).
    unsafe { cu!(cuFuncGetAttribute(&mut v, a, f)) }?;
    Ok(v)
}

/// Sets one attribute of function `f`.
///
/// # Safety
/// `f` must be a function of a loaded module.
#[inline]
pub unsafe fn set_func_attribute(f: CUfunction, a: CUfunction_attribute, v: i32) -> Result<()> {
    // SAFETY: plain attribute setting on a loaded function (caller).
    unsafe { cu!(cuFuncSetAttribute(f, a, v)) }
}

/// The occupancy calculator's (grid, block) for `f` without dynamic shared memory,
/// blocks of at most `limit` threads (0: no limit); `None` when the driver has no
/// calculator or it gives no answer.
///
/// # Safety
/// `f` must be a function of a loaded module.
#[inline]
pub unsafe fn occupancy(f: CUfunction, limit: u32) -> Option<(u32, u32)> {
    if !table::get().has("cuOccupancyMaxPotentialBlockSize") {
        return None;
    }
    let (mut grid, mut block) = (0i32, 0i32);
    // SAFETY: out-pointers to locals; no block-size callback, no dynamic smem.
    let r = unsafe {
        cu!(cuOccupancyMaxPotentialBlockSize(
            &mut grid,
            &mut block,
            f,
            std::ptr::null_mut(),
            0,
            limit.min(i32::MAX as u32) as i32
        ))
    };
    (r.is_ok() && grid > 0 && block > 0).then_some((grid as u32, block as u32))
}

/// How many blocks of `threads` threads with `dyn_smem` bytes of dynamic shared memory
/// the occupancy calculator says fit on one SM at once; `None` when the driver has no
/// calculator or it gives no answer.
///
/// # Safety
/// `f` must be a function of a loaded module.
#[inline]
pub unsafe fn resident_blocks(f: CUfunction, threads: u32, dyn_smem: usize) -> Option<u32> {
    if !table::get().has("cuOccupancyMaxActiveBlocksPerMultiprocessor") {
        return None;
    }
    let mut blocks = 0i32;
    // SAFETY: out-pointer to a local; `f` belongs to a loaded module (caller).
    let r = unsafe {
        cu!(cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &mut blocks,
            f,
            threads as i32,
            dyn_smem
        ))
    };
    (r.is_ok() && blocks > 0).then_some(blocks as u32)
}

/// A JIT link in progress (`cuLinkCreate`), destroyed (`cuLinkDestroy`) when dropped.
/// Owned by the thread linking; `Send`, not `Sync`.
#[repr(transparent)]
#[derive(Debug)]
pub struct LinkState(CUlinkState);

// SAFETY: a link state may be used from any thread, one at a time.
unsafe impl Send for LinkState {}

impl LinkState {
    /// Starts a link with JIT options `opts`/`vals` (equal lengths).
    ///
    /// # Safety
    /// Every option value must be valid for its option, and buffers the options name
    /// (log buffers) must outlive the returned state.
    #[inline]
    pub unsafe fn create(opts: &mut [CUjit_option], vals: &mut [*mut c_void]) -> Result<LinkState> {
        debug_assert_eq!(opts.len(), vals.len());
        let mut state: CUlinkState = std::ptr::null_mut();
        // SAFETY: caller's guarantees; out-pointer to a local.
        unsafe {
            cu!(cuLinkCreate(
                opts.len() as u32,
                opts.as_mut_ptr(),
                vals.as_mut_ptr(),
                &mut state
            ))
        }?;
        Ok(LinkState(state))
    }

    /// Adds one NUL-terminated PTX object named `name`.
    #[inline]
    pub fn add_ptx(&mut self, code: &[u8], name: &CStr) -> Result<()> {
        // SAFETY: `code` is live for the call (the driver copies it); no options.
        unsafe {
            cu!(cuLinkAddData(
                self.0,
                CU_JIT_INPUT_PTX,
                code.as_ptr() as *mut c_void,
                code.len(),
                name.as_ptr() as *const c_char,
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut()
            ))
        }
    }

    /// Completes the link: its output (a cubin), valid while the state lives.
    #[inline]
    pub fn complete(&mut self) -> Result<&[u8]> {
        let mut cubin: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: out-pointers to locals.
        unsafe { cu!(cuLinkComplete(self.0, &mut cubin, &mut size)) }?;
        if cubin.is_null() {
            return Ok(&[]);
        }
        // SAFETY: the driver's output of `size` bytes, owned by the state until it is
        // destroyed; the borrow of `self` keeps it alive.
        Ok(unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), size) })
    }
}

impl Drop for LinkState {
    fn drop(&mut self) {
        // SAFETY: created by `create`, destroyed once.
        if let Err(e) = unsafe { cu!(cuLinkDestroy(self.0)) } {
            log::debug!("link state {:p}: {e}", self.0);
        }
    }
}
