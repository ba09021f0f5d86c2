//! The `GOMP_OFFLOAD_openacc_*` entry points (signatures: docs/plugin-abi.md §2), over
//! the backend's [`gomp_plugin::OpenAcc`] and its queue type. Compiled into a product
//! that offers OpenACC as a module whose parent defines `Backend`. The four
//! CUDA-interop entry points (`openacc_cuda_*`) are in `openacc_cuda.rs`: only a CUDA
//! product includes them (libgomp wants all four or none).
#![allow(non_snake_case)]
// The signatures are the C contract; raw pointers are checked here or in the backend.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use super::Backend;
use gomp_plugin::edge::{args, guard, handshake};
use gomp_plugin::libgomp::abi::{GoaccAsyncqueue, PropertyValue};
use gomp_plugin::libgomp::host;
use gomp_plugin::libgomp::session::Session;
use gomp_plugin::openacc::{AccLaunch, AccProperty};
use gomp_plugin::{AccQueue, Error, OpenAcc, Plugin, Result};
use std::ffi::{c_int, c_uint, c_void};

type Queue = <Backend as OpenAcc>::Queue;
type ThreadData = <Backend as OpenAcc>::ThreadData;

fn queue<'a>(aq: *mut GoaccAsyncqueue) -> Result<&'a Queue> {
    // SAFETY: `aq` is NULL or a queue from openacc_async_construct not yet destroyed
    // (libgomp's contract).
    unsafe { aq.cast::<Queue>().as_ref() }.ok_or_else(|| Error::invalid("OpenACC: no async queue"))
}

/// `openacc_exec` and `openacc_async_exec` (with `queue`): the kernel handle checked
/// once, libgomp's arguments decoded once (under libgomp 12, the kernel's argument
/// array built from its host arrays), the dimensions launched written back when the
/// backend reports them.
fn exec(
    what: &str,
    fn_: Option<unsafe extern "C" fn(*mut c_void)>,
    mapnum: usize,
    hostaddrs: *mut *mut c_void,
    devaddrs: *mut *mut c_void,
    dims: *mut u32,
    queue: Option<&Queue>,
) -> Result<()> {
    let h = fn_.map_or(0, |f| f as usize);
    let launch = AccLaunch {
        devaddrs: devaddrs as u64,
        // SAFETY: libgomp's 3-entry array or NULL (contract).
        dims: unsafe { AccLaunch::dims(dims) },
    };
    let launched = Backend::registry().kernels().with_known(what, h, |k| {
        if args::acc_devaddrs_on_host(host::libgomp()) {
            // SAFETY: libgomp 12's host arrays of `mapnum` entries (contract).
            let block = unsafe { args::acc_host_block(mapnum, hostaddrs, devaddrs) };
            Backend::exec_host_block(k, &block, &launch, queue)
        } else {
            Backend::exec(k, &launch, queue)
        }
    })?;
    if let (Some(d), false) = (launched, dims.is_null()) {
        // SAFETY: libgomp's writable 3-entry array (contract).
        unsafe { std::ptr::copy_nonoverlapping(d.as_ptr(), dims, 3) };
    }
    Ok(())
}

// Declared, not called, here: the declarations are what include/generate.sh puts in the
// C header (libgomp 12-16's prototypes); the definitions are `exec_any` and
// `async_exec_any` below.
#[allow(dead_code)]
extern "C" {
    /// Runs an OpenACC kernel and waits for it. Errors are fatal. Under libgomp 17 the
    /// same symbol takes `(session, fn, mapnum, hostaddrs, dims, tmd)` ([`exec_any`]).
    pub fn GOMP_OFFLOAD_openacc_exec(
        fn_: Option<unsafe extern "C" fn(*mut c_void)>,
        mapnum: usize,
        hostaddrs: *mut *mut c_void,
        devaddrs: *mut *mut c_void,
        dims: *mut u32,
        targ_mem_desc: *mut c_void,
    );
    /// Enqueues an OpenACC kernel on `aq`. Errors are fatal. Under libgomp 17 the same
    /// symbol takes `(session, fn, mapnum, hostaddrs, dims, tmd, aq)`
    /// ([`async_exec_any`]).
    pub fn GOMP_OFFLOAD_openacc_async_exec(
        fn_: Option<unsafe extern "C" fn(*mut c_void)>,
        mapnum: usize,
        hostaddrs: *mut *mut c_void,
        devaddrs: *mut *mut c_void,
        dims: *mut u32,
        targ_mem_desc: *mut c_void,
        aq: *mut GoaccAsyncqueue,
    );
}

/// The kernel handle of a register word (NULL: none).
fn handle(w: usize) -> Option<unsafe extern "C" fn(*mut c_void)> {
    // SAFETY: a function pointer and `usize` have the same size; NULL maps to None
    // (the niche of `Option<fn>`), anything else is libgomp's kernel handle, checked
    // against the live set before any use.
    unsafe { std::mem::transmute::<usize, Option<unsafe extern "C" fn(*mut c_void)>>(w) }
}

/// `GOMP_OFFLOAD_openacc_exec` as exported: libgomp 12-16 pass `(fn, mapnum,
/// hostaddrs, devaddrs, dims, tmd)`, libgomp 17 `(session, fn, mapnum, hostaddrs,
/// dims, tmd)` (the table comes through the session). Six register-wide words either
/// way (x86-64 System V), read as the libgomp that loaded us passes them
/// (`handshake::uses_sessions`, see `run_any` in openmp.rs).
///
/// cbindgen:ignore
#[export_name = "GOMP_OFFLOAD_openacc_exec"]
pub extern "C" fn exec_any(w0: usize, w1: usize, w2: usize, w3: usize, w4: usize, _w5: usize) {
    guard::or_fatal("openacc_exec", || {
        let (fn_, mapnum, hostaddrs, devaddrs, dims) = words(w0, w1, w2, w3, w4)?;
        exec("openacc_exec", fn_, mapnum, hostaddrs, devaddrs, dims, None)
    })
}

/// `GOMP_OFFLOAD_openacc_async_exec` as exported: as [`exec_any`], with the queue as
/// the seventh argument (on the stack in both forms).
///
/// cbindgen:ignore
#[export_name = "GOMP_OFFLOAD_openacc_async_exec"]
pub extern "C" fn async_exec_any(
    w0: usize,
    w1: usize,
    w2: usize,
    w3: usize,
    w4: usize,
    _w5: usize,
    aq: *mut GoaccAsyncqueue,
) {
    guard::or_fatal("openacc_async_exec", || {
        let q = queue(aq)?;
        let (fn_, mapnum, hostaddrs, devaddrs, dims) = words(w0, w1, w2, w3, w4)?;
        exec(
            "openacc_async_exec",
            fn_,
            mapnum,
            hostaddrs,
            devaddrs,
            dims,
            Some(q),
        )
    })
}

type ExecArgs = (
    Option<unsafe extern "C" fn(*mut c_void)>,
    usize,
    *mut *mut c_void,
    *mut *mut c_void,
    *mut u32,
);

/// The first five argument words of `openacc_exec`/`openacc_async_exec` as libgomp
/// 12-16 pass them: under libgomp 17 the device-address block is the session's table.
fn words(w0: usize, w1: usize, w2: usize, w3: usize, w4: usize) -> Result<ExecArgs> {
    if !handshake::uses_sessions() {
        return Ok((
            handle(w0),
            w1,
            w2 as *mut *mut c_void,
            w3 as *mut *mut c_void,
            w4 as *mut u32,
        ));
    }
    // SAFETY: libgomp 17's session block, started, used by this launch only.
    let s = unsafe { Session::get(w0 as *mut c_void) }?;
    Ok((
        handle(w1),
        w2,
        w3 as *mut *mut c_void,
        s.table as *mut *mut c_void,
        w4 as *mut u32,
    ))
}

/// Per-thread data for device `ord`; NULL after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_create_thread_data(ord: c_int) -> *mut c_void {
    guard::result("openacc_create_thread_data", std::ptr::null_mut(), || {
        Ok(Box::into_raw(Box::new(Backend::thread_data(ord)?)).cast())
    })
}

/// Frees what create_thread_data returned.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_destroy_thread_data(data: *mut c_void) {
    guard::value("openacc_destroy_thread_data", (), || {
        if !data.is_null() {
            // SAFETY: `data` came from create_thread_data and is destroyed once.
            drop(unsafe { Box::from_raw(data.cast::<ThreadData>()) });
        }
    })
}

/// A new async queue on device `ord`; NULL after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_construct(ord: c_int) -> *mut GoaccAsyncqueue {
    guard::result("openacc_async_construct", std::ptr::null_mut(), || {
        Ok(Box::into_raw(Box::new(Backend::queue(ord)?)).cast())
    })
}

/// Waits for `aq` and destroys it.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_destruct(aq: *mut GoaccAsyncqueue) -> bool {
    guard::ok("openacc_async_destruct", || {
        queue(aq)?;
        // SAFETY: `aq` came from async_construct; libgomp destroys it once.
        AccQueue::destroy(*unsafe { Box::from_raw(aq.cast::<Queue>()) })
    })
}

/// 1 when `aq` is idle, 0 when busy, -1 after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_test(aq: *mut GoaccAsyncqueue) -> c_int {
    guard::result("openacc_async_test", -1, || {
        Ok(AccQueue::test(queue(aq)?)? as c_int)
    })
}

/// Waits for all work and callbacks queued on `aq`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_synchronize(aq: *mut GoaccAsyncqueue) -> bool {
    guard::ok("openacc_async_synchronize", || {
        AccQueue::synchronize(queue(aq)?)
    })
}

/// Makes later work on `aq2` wait for the work queued on `aq1` so far.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_serialize(
    aq1: *mut GoaccAsyncqueue,
    aq2: *mut GoaccAsyncqueue,
) -> bool {
    guard::ok("openacc_async_serialize", || {
        AccQueue::serialize(queue(aq1)?, queue(aq2)?)
    })
}

/// Runs `cb(data)` once the work queued on `aq` so far has completed. Errors are fatal.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_queue_callback(
    aq: *mut GoaccAsyncqueue,
    cb: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
) {
    guard::or_fatal("openacc_async_queue_callback", || {
        let cb = cb.ok_or_else(|| Error::invalid("openacc_async_queue_callback: no function"))?;
        AccQueue::callback(queue(aq)?, cb, data)
    })
}

/// Queues a host-to-device copy on `aq`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_host2dev(
    _ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    aq: *mut GoaccAsyncqueue,
) -> bool {
    // SAFETY: libgomp keeps `src` alive (or stages it) until the queue has run.
    guard::ok("openacc_async_host2dev", || unsafe {
        AccQueue::host2dev(queue(aq)?, dst, src, n)
    })
}

/// Queues a device-to-host copy on `aq`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_dev2host(
    _ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    aq: *mut GoaccAsyncqueue,
) -> bool {
    // SAFETY: libgomp keeps `dst` alive until the queue has run.
    guard::ok("openacc_async_dev2host", || unsafe {
        AccQueue::dev2host(queue(aq)?, dst, src, n)
    })
}

/// Queues a device-to-device copy on `aq` (libgomp 16, acc_memcpy_device).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_dev2dev(
    _ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    aq: *mut GoaccAsyncqueue,
) -> bool {
    guard::ok("openacc_async_dev2dev", || {
        AccQueue::dev2dev(queue(aq)?, dst, src, n)
    })
}

/// Property `prop` of device `ord`; 0 / NULL when unknown or on error.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_get_property(ord: c_int, prop: c_uint) -> PropertyValue {
    match guard::result("openacc_get_property", AccProperty::None, || {
        Backend::property(ord, prop)
    }) {
        AccProperty::Size(n) => PropertyValue { size: n },
        AccProperty::Str(s) => PropertyValue { text: s.as_ptr() },
        AccProperty::None => PropertyValue { size: 0 },
    }
}
