//! The parts of the exported shells that are more than one call: generic over the
//! backend, called by the shells that [`crate::export_entry_points!`] expands in each
//! product from the table (`src/edge/table.rs`). Argument conversion only; every
//! function here runs inside the shell's [`crate::edge::guard`]. Thread-safe as the
//! backend calls they make (any libgomp thread).
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use crate::device::{check_image_version, Device};
use crate::edge::args;
use crate::error::{Error, Result};
use crate::libgomp::abi::{AddrPair, GoaccAsyncqueue};
use crate::libgomp::interop::{self, InteropObj, InteropValue};
use crate::libgomp::session::Session;
use crate::libgomp::target_args::LaunchRequest;
use crate::libgomp::{host, report};
use crate::openacc::{AccLaunch, OpenAcc};
use crate::plugin::{KernelOf, Plugin};
use crate::rect::{Rect, Side};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// What the shells' bodies in the table name, imported by the module the export macro
/// expands (beside its `Backend`).
pub mod prelude {
    pub use crate::blocks::DevPtr;
    pub use crate::edge::{args, guard, handshake, shell};
    pub use crate::libgomp::abi::{AddrPair, GoaccAsyncqueue, PropertyValue};
    pub use crate::libgomp::interop::InteropObj;
    pub use crate::libgomp::session::{self, Session};
    pub use crate::libgomp::{host, report};
    pub use crate::openacc::AccProperty;
    pub use crate::{AccQueue, Device, DeviceCore, Error, OpenAcc, Plugin};
    pub use std::ffi::{c_char, c_int, c_uint, c_void};
}

/// The launch request of `run`/`async_run`: libgomp's arguments decoded once.
///
/// # Safety
/// `args` is libgomp's target-argument array (checked non-NULL by the caller).
pub unsafe fn launch_request<P: Plugin>(
    vars: *mut c_void,
    args: *mut *mut c_void,
) -> LaunchRequest {
    // SAFETY: libgomp's NULL-terminated array; a kernel-attribute entry for this
    // product's device type holds the compiler's block (contract).
    unsafe { LaunchRequest::decode(vars, args, P::TARGET_TYPE as usize) }
}

/// Runs kernel handle `tgt_fn` of device `ord` through `f`, after the one check of a
/// handle: it must be a live kernel of that device.
pub fn with_kernel<P: Plugin>(
    what: &str,
    ord: c_int,
    tgt_fn: *mut c_void,
    f: impl FnOnce(&Arc<KernelOf<P>>) -> Result<()>,
) -> Result<()> {
    P::registry()
        .kernels()
        .with_known(what, tgt_fn as usize, |k| {
            if k.ord != ord {
                return Err(Error::invalid(format!(
                    "{what}: kernel {tgt_fn:p} of device {} launched on device {ord}",
                    k.ord
                )));
            }
            f(k.kernel)
        })
}

/// `run` and `async_run` (with `async_data`): the arguments checked and decoded, the
/// kernel handle checked, one call into the device. Inlined into the exported
/// implementation (the body of every synchronous target region: the call between
/// them cost ~35 instructions a region).
#[inline(always)]
pub fn run<P: Plugin>(
    what: &str,
    ord: c_int,
    tgt_fn: *mut c_void,
    tgt_vars: *mut c_void,
    args: *mut *mut c_void,
    async_data: Option<*mut c_void>,
) -> Result<()> {
    if args.is_null() {
        return Err(Error::invalid(match async_data {
            None => "No target arguments provided".to_string(),
            Some(_) => format!("{what}: no target arguments"),
        }));
    }
    let dev = P::device(ord)?;
    // SAFETY: libgomp's argument array, checked non-NULL above.
    let req = unsafe { launch_request::<P>(tgt_vars, args) };
    with_kernel::<P>(what, ord, tgt_fn, |k| match async_data {
        None => Device::run(&*dev, k, &req),
        Some(data) => Device::run_async(&dev, k, &req, data),
    })
}

/// `load_image`: the image loaded, libgomp's table built in malloc'd memory; the
/// number of entries. libgomp 12 passes only four arguments and libgomp 13 five: the
/// tables beyond them are never touched (`args::load_image_tables`).
pub fn load_image<P: Plugin>(
    ord: c_int,
    version: u32,
    target_data: *const c_void,
    target_table: *mut *mut AddrPair,
    rev_fn_table: *mut *mut u64,
    host_ind_fn_table: *mut u64,
) -> Result<c_int> {
    check_image_version(P::IMAGE_KIND, P::IMAGE_VERSION, version)?;
    if target_table.is_null() {
        return Err(Error::invalid("load_image: no table pointer"));
    }
    let (rev_fn_table, ind) =
        args::load_image_tables(host::libgomp(), version, rev_fn_table, host_ind_fn_table);
    let dev = P::device(ord)?;
    // SAFETY: libgomp passes a descriptor (contract); `ind` as checked above.
    let img =
        unsafe { Device::load_image(&dev, version, target_data, !rev_fn_table.is_null(), ind)? };
    let handles = P::registry()
        .kernels()
        .insert(ord, target_data as usize, &img.kernels);
    let n = handles.len() + img.table.len();
    let out = report::malloc(n * std::mem::size_of::<AddrPair>()).cast::<AddrPair>();
    let entries = handles
        .iter()
        .map(|&h| AddrPair {
            start: h,
            end: h + 1,
        })
        .chain(img.table.iter().copied());
    // SAFETY: `out` has room for the `n` entries; the out-pointers are writable
    // (contract) or NULL.
    unsafe {
        for (i, e) in entries.enumerate() {
            out.add(i).write(e);
        }
        *target_table = out;
        if !rev_fn_table.is_null() {
            *rev_fn_table = img.rev_fn_table;
        }
    }
    Ok(n as c_int)
}

/// `get_uid`: the device's unique id copied into malloc'd memory for libgomp to keep;
/// NULL if unknown.
pub fn uid<P: Plugin>(ord: c_int) -> *const std::ffi::c_char {
    let Some(s) = P::uid(ord) else {
        return std::ptr::null();
    };
    let p = report::malloc(s.len() + 1).cast::<u8>();
    // SAFETY: `p` has room for the string and its NUL.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), p, s.len());
        *p.add(s.len()) = 0;
    }
    p as *const std::ffi::c_char
}

/// One side of a rectangular copy (ord -1 is the host).
pub fn side(
    ord: c_int,
    base: *const c_void,
    pitch: usize,
    rows: usize,
    off: (usize, usize, usize),
) -> Result<Side> {
    Side::at(ord, base as usize, pitch, rows, off)
        .ok_or_else(|| Error::invalid("omp_target_memcpy_rect: offsets overflow"))
}

/// A rectangular copy through the backend.
///
/// # Safety
/// libgomp passes host blocks valid for the described rectangle or box.
pub unsafe fn copy_rect<P: Plugin>(r: &Rect) -> Result<()> {
    // SAFETY: the caller's.
    unsafe { P::copy_rect(r) }
}

/// The OpenACC queue behind libgomp's pointer.
pub fn queue<'a, P: OpenAcc>(aq: *mut GoaccAsyncqueue) -> Result<&'a P::Queue> {
    // SAFETY: `aq` is NULL or a queue from openacc_async_construct not yet destroyed
    // (libgomp's contract).
    unsafe { aq.cast::<P::Queue>().as_ref() }
        .ok_or_else(|| Error::invalid("OpenACC: no async queue"))
}

/// `openacc_exec` and `openacc_async_exec` (with `queue`): the kernel handle checked
/// once, libgomp's arguments decoded once (under libgomp 12, the kernel's argument
/// array built from its host arrays), the dimensions launched written back when the
/// backend reports them.
pub fn acc_exec<P: OpenAcc>(
    what: &str,
    fn_: Option<unsafe extern "C" fn(*mut c_void)>,
    mapnum: usize,
    hostaddrs: *mut *mut c_void,
    devaddrs: *mut *mut c_void,
    dims: *mut u32,
    queue: Option<&P::Queue>,
) -> Result<()> {
    let h = fn_.map_or(0, |f| f as usize);
    let launch = AccLaunch {
        devaddrs: devaddrs as u64,
        // SAFETY: libgomp's 3-entry array or NULL (contract).
        dims: unsafe { AccLaunch::dims(dims) },
    };
    let launched = P::registry().kernels().with_known(what, h, |k| {
        if args::acc_devaddrs_on_host(host::libgomp()) {
            // SAFETY: libgomp 12's host arrays of `mapnum` entries (contract).
            let block = unsafe { args::acc_host_block(mapnum, hostaddrs, devaddrs) };
            P::exec_host_block(k, &block, &launch, queue)
        } else {
            P::exec(k, &launch, queue)
        }
    })?;
    if let (Some(d), false) = (launched, dims.is_null()) {
        // SAFETY: libgomp's writable 3-entry array (contract).
        unsafe { std::ptr::copy_nonoverlapping(d.as_ptr(), dims, 3) };
    }
    Ok(())
}

/// An interop property as `kind` (`b'i'`, `b'p'`, `b's'`), the return code written to
/// `rc` when it is not NULL.
pub fn interop_query<P: Plugin>(
    obj: *mut InteropObj,
    prop: c_int,
    kind: u8,
    rc: *mut c_int,
) -> InteropValue {
    let (v, code) = crate::edge::guard::result(
        "get_interop",
        (InteropValue::None, interop::IRC_NO_VALUE),
        || {
            // SAFETY: libgomp passes an object it initialised through us.
            let o = unsafe { obj.as_ref() }.ok_or_else(|| Error::invalid("interop: no object"))?;
            Ok(interop::as_kind(P::interop_property(o, prop)?, kind))
        },
    );
    if !rc.is_null() {
        // SAFETY: checked non-NULL; libgomp passes the caller's return-code slot.
        unsafe { *rc = code };
    }
    v
}

// ---- libgomp 17's session forms (docs/plugin-abi.md §12), served by the indirect
// functions of `run`, `async_run`, `openacc_exec` and `openacc_async_exec` under a
// libgomp that launches through sessions (`ifunc(IMPL, OFFER, SESSION)` in the table).

/// `run(session, fn, args)` of libgomp 17: the device and the table from the session.
pub extern "C" fn run_session<P: Plugin>(
    session: *mut c_void,
    tgt_fn: *mut c_void,
    args: *mut *mut c_void,
) {
    crate::edge::guard::or_fatal("run", || {
        // SAFETY: libgomp's session block, started, used by this launch only.
        let s = *unsafe { Session::get(session) }?;
        run::<P>("run", s.ord, tgt_fn, s.table as *mut c_void, args, None)
    })
}

/// `async_run(session, fn, args, async_data)` of libgomp 17.
pub extern "C" fn async_run_session<P: Plugin>(
    session: *mut c_void,
    tgt_fn: *mut c_void,
    args: *mut *mut c_void,
    async_data: *mut c_void,
) {
    crate::edge::guard::or_fatal("async_run", || {
        // SAFETY: libgomp's session block, started, used by this launch only.
        let s = *unsafe { Session::get(session) }?;
        run::<P>(
            "async_run",
            s.ord,
            tgt_fn,
            s.table as *mut c_void,
            args,
            Some(async_data),
        )
    })
}

/// `openacc_exec(session, fn, mapnum, hostaddrs, dims, tmd)` of libgomp 17: the block
/// of device addresses is the session's table.
pub extern "C" fn acc_exec_session<P: OpenAcc>(
    session: *mut c_void,
    fn_: Option<unsafe extern "C" fn(*mut c_void)>,
    mapnum: usize,
    hostaddrs: *mut *mut c_void,
    dims: *mut u32,
    _targ_mem_desc: *mut c_void,
) {
    crate::edge::guard::or_fatal("openacc_exec", || {
        // SAFETY: libgomp's session block, started, used by this launch only.
        let s = *unsafe { Session::get(session) }?;
        acc_exec::<P>(
            "openacc_exec",
            fn_,
            mapnum,
            hostaddrs,
            s.table as *mut *mut c_void,
            dims,
            None,
        )
    })
}

/// `openacc_async_exec(session, fn, mapnum, hostaddrs, dims, tmd, aq)` of libgomp 17.
pub extern "C" fn acc_async_exec_session<P: OpenAcc>(
    session: *mut c_void,
    fn_: Option<unsafe extern "C" fn(*mut c_void)>,
    mapnum: usize,
    hostaddrs: *mut *mut c_void,
    dims: *mut u32,
    _targ_mem_desc: *mut c_void,
    aq: *mut GoaccAsyncqueue,
) {
    crate::edge::guard::or_fatal("openacc_async_exec", || {
        // SAFETY: libgomp's session block, started, used by this launch only.
        let s = *unsafe { Session::get(session) }?;
        let q = queue::<P>(aq)?;
        acc_exec::<P>(
            "openacc_async_exec",
            fn_,
            mapnum,
            hostaddrs,
            s.table as *mut *mut c_void,
            dims,
            Some(q),
        )
    })
}
