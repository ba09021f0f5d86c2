//! `GOMP_OFFLOAD_openacc_*` entry points (signatures: ABI spec §2).
#![allow(non_snake_case)]
// The signatures are the C contract; raw pointers are checked in the core.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use super::guard;
use crate::error::{Error, Result};
use crate::nvptx;
use crate::nvptx::image::TargetFn;
use crate::nvptx::openacc::{exec, property, queue::AccQueue, thread};
use std::ffi::{c_int, c_uint, c_void};

/// # Safety
/// `fn_` must be a function handle from load_image (its image still loaded).
unsafe fn target_fn<'a>(fn_: KernelHandle) -> Result<&'a TargetFn> {
    let p = fn_.map_or(std::ptr::null(), |f| f as *const TargetFn);
    // SAFETY: caller's guarantee.
    unsafe { p.as_ref() }.ok_or_else(|| Error::invalid("openacc_exec: no kernel"))
}

/// libgomp's `struct goacc_asyncqueue`, opaque to it; behind the pointer is a leaked
/// `Box<AccQueue>`.
#[repr(C)]
pub struct GoaccAsyncqueue {
    _opaque: [u8; 0],
}

/// The kernel handle libgomp passes to the exec entry points (typed as a function in
/// the C contract; really one of our [`TargetFn`]s). Spelled out in the signatures so
/// the generated header has no typedef.
type KernelHandle = Option<unsafe extern "C" fn(*mut c_void)>;

fn queue<'a>(aq: *mut GoaccAsyncqueue) -> Result<&'a AccQueue> {
    // SAFETY: `aq` is NULL or a queue from openacc_async_construct not yet destroyed
    // (libgomp's contract).
    unsafe { aq.cast::<AccQueue>().as_ref() }
        .ok_or_else(|| Error::invalid("OpenACC: no async queue"))
}

fn exec_common(
    fn_: KernelHandle,
    devaddrs: *mut *mut c_void,
    dims: *mut u32,
    aq: Option<&AccQueue>,
) -> Result<()> {
    let dev = match aq {
        Some(q) => q.dev.clone(),
        None => thread::current()
            .map(|t| t.dev.clone())
            .ok_or_else(|| Error::invalid("openacc_exec: thread has no OpenACC device"))?,
    };
    dev.activate()?;
    // SAFETY: handle from load_image; `dims` is libgomp's 3-entry array.
    unsafe {
        exec::exec(
            &dev,
            target_fn(fn_)?,
            devaddrs.cast(),
            dims,
            aq.map(|q| q.stream()),
        )
    }
}

/// Runs an OpenACC kernel and waits for it. Errors are fatal.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_exec(
    fn_: Option<unsafe extern "C" fn(*mut c_void)>,
    _mapnum: usize,
    _hostaddrs: *mut *mut c_void,
    devaddrs: *mut *mut c_void,
    dims: *mut u32,
    _targ_mem_desc: *mut c_void,
) {
    guard::or_fatal("openacc_exec", || exec_common(fn_, devaddrs, dims, None))
}

/// Enqueues an OpenACC kernel on `aq`. Errors are fatal.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_exec(
    fn_: Option<unsafe extern "C" fn(*mut c_void)>,
    _mapnum: usize,
    _hostaddrs: *mut *mut c_void,
    devaddrs: *mut *mut c_void,
    dims: *mut u32,
    _targ_mem_desc: *mut c_void,
    aq: *mut GoaccAsyncqueue,
) {
    guard::or_fatal("openacc_async_exec", || {
        exec_common(fn_, devaddrs, dims, Some(queue(aq)?))
    })
}

/// Per-thread data for device `ord` (makes its context current on this thread).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_create_thread_data(ord: c_int) -> *mut c_void {
    guard::result("openacc_create_thread_data", std::ptr::null_mut(), || {
        let dev = nvptx::device(ord)?;
        dev.use_openacc();
        Ok(Box::into_raw(Box::new(thread::ThreadData { dev })).cast())
    })
}

/// Frees what create_thread_data returned.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_destroy_thread_data(data: *mut c_void) {
    guard::value("openacc_destroy_thread_data", (), || {
        if !data.is_null() {
            // SAFETY: `data` came from create_thread_data and is destroyed once.
            drop(unsafe { Box::from_raw(data.cast::<thread::ThreadData>()) });
        }
    })
}

/// A new async queue on device `ord`; NULL after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_construct(ord: c_int) -> *mut GoaccAsyncqueue {
    guard::result("openacc_async_construct", std::ptr::null_mut(), || {
        let dev = nvptx::device(ord)?;
        Ok(Box::into_raw(Box::new(AccQueue::create(dev)?)).cast())
    })
}

/// Waits for `aq` and destroys it.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_destruct(aq: *mut GoaccAsyncqueue) -> bool {
    guard::ok("openacc_async_destruct", || {
        queue(aq)?;
        // SAFETY: `aq` came from async_construct; libgomp destroys it once.
        unsafe { Box::from_raw(aq.cast::<AccQueue>()) }.destroy()
    })
}

/// 1 when `aq` is idle, 0 when busy, -1 after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_test(aq: *mut GoaccAsyncqueue) -> c_int {
    guard::result("openacc_async_test", -1, || Ok(queue(aq)?.test()? as c_int))
}

/// Waits for all work and callbacks queued on `aq`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_synchronize(aq: *mut GoaccAsyncqueue) -> bool {
    guard::ok("openacc_async_synchronize", || queue(aq)?.synchronize())
}

/// Makes later work on `aq2` wait for the work queued on `aq1` so far.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_serialize(
    aq1: *mut GoaccAsyncqueue,
    aq2: *mut GoaccAsyncqueue,
) -> bool {
    guard::ok("openacc_async_serialize", || {
        queue(aq1)?.serialize(queue(aq2)?)
    })
}

/// Runs `cb(data)` once the work queued on `aq` so far has completed.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_queue_callback(
    aq: *mut GoaccAsyncqueue,
    cb: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
) {
    guard::or_fatal("openacc_async_queue_callback", || {
        let cb = cb.ok_or_else(|| Error::invalid("openacc_async_queue_callback: no function"))?;
        queue(aq)?.callback(cb, data)
    })
}

/// Queues a host-to-device copy on `aq`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_host2dev(
    ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    aq: *mut GoaccAsyncqueue,
) -> bool {
    guard::ok("openacc_async_host2dev", || {
        let _ = ord;
        // SAFETY: libgomp keeps `src` alive (or stages it) until the queue has run.
        unsafe { queue(aq)?.host2dev(dst as u64, src, n) }
    })
}

/// Queues a device-to-host copy on `aq`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_dev2host(
    ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    aq: *mut GoaccAsyncqueue,
) -> bool {
    guard::ok("openacc_async_dev2host", || {
        let _ = ord;
        // SAFETY: libgomp keeps `dst` alive until the queue has run.
        unsafe { queue(aq)?.dev2host(dst, src as u64, n) }
    })
}

/// Queues a device-to-device copy on `aq` (libgomp 16, acc_memcpy_device).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_async_dev2dev(
    ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    aq: *mut GoaccAsyncqueue,
) -> bool {
    guard::ok("openacc_async_dev2dev", || {
        let _ = ord;
        queue(aq)?.dev2dev(dst as u64, src as u64, n)
    })
}

/// `union goacc_property_value`: a size or a string, returned in one register.
#[repr(C)]
pub union PropertyValue {
    /// For memory sizes.
    pub size: usize,
    /// For name, vendor and driver.
    pub text: *const std::ffi::c_char,
}

/// Property `prop` of device `ord`; 0 / NULL when unknown or on error.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_get_property(ord: c_int, prop: c_uint) -> PropertyValue {
    let v = guard::result("openacc_get_property", property::Value::None, || {
        property::get(ord, prop)
    });
    match v {
        property::Value::Size(n) => PropertyValue { size: n },
        property::Value::Str(s) => PropertyValue { text: s.as_ptr() },
        property::Value::None => PropertyValue { size: 0 },
    }
}

/// Pointer to the calling thread's `CUdevice`; NULL without OpenACC thread data.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_cuda_get_current_device() -> *mut c_void {
    guard::value(
        "openacc_cuda_get_current_device",
        std::ptr::null_mut(),
        || {
            thread::current().map_or(std::ptr::null_mut(), |t| {
                (&t.dev.cu_dev as *const i32).cast_mut().cast()
            })
        },
    )
}

/// The calling thread's device context; NULL without OpenACC thread data.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_cuda_get_current_context() -> *mut c_void {
    guard::value(
        "openacc_cuda_get_current_context",
        std::ptr::null_mut(),
        || thread::current().map_or(std::ptr::null_mut(), |t| t.dev.context().cast()),
    )
}

/// The CUDA stream of `aq`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_cuda_get_stream(aq: *mut GoaccAsyncqueue) -> *mut c_void {
    guard::result("openacc_cuda_get_stream", std::ptr::null_mut(), || {
        Ok(queue(aq)?.stream().0.cast())
    })
}

/// Makes `aq` use the program's `stream`; 1 on success, 0 after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_openacc_cuda_set_stream(
    aq: *mut GoaccAsyncqueue,
    stream: *mut c_void,
) -> c_int {
    guard::result("openacc_cuda_set_stream", 0, || {
        queue(aq)?.set_stream(stream.cast())?;
        Ok(1)
    })
}
