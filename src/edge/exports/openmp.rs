//! The `GOMP_OFFLOAD_*` entry points every product exports (signatures:
//! docs/plugin-abi.md §2): handshake, devices, images, memory, OpenMP `run`, rectangular
//! copies, managed memory. Written once; compiled into each product crate as a module
//! whose parent defines `Backend` (see `gomp_plugin::edge`). Each is a thin shell: panic
//! boundary and error convention (`guard`), argument conversion, one call into the
//! backend.
#![allow(non_snake_case)]
// The signatures are the C contract; raw pointers are checked in the backend.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use super::Backend;
use gomp_plugin::blocks::DevPtr;
use gomp_plugin::device::check_image_version;
use gomp_plugin::edge::{args, guard, handshake};
use gomp_plugin::libgomp::abi::AddrPair;
use gomp_plugin::libgomp::session::{self, Session};
use gomp_plugin::libgomp::target_args::LaunchRequest;
use gomp_plugin::libgomp::{host, report};
use gomp_plugin::plugin::KernelOf;
use gomp_plugin::rect::{Rect, Side};
use gomp_plugin::{Device, DeviceCore, Error, Plugin, Result};
use std::ffi::{c_char, c_int, c_void};

/// The plugin's `GOMP_VERSION` for the libgomp that loaded us; 0 (which libgomp
/// rejects as a version mismatch) for a libgomp we do not support, after saying why.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_version() -> u32 {
    guard::value("version", 0, handshake::version::<Backend>)
}

/// The plugin's name ("nvptx", "gcn").
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_name() -> *const c_char {
    // Plugin names are literals without NUL; the static below adds one.
    static NAME: once_cell::sync::Lazy<std::ffi::CString> =
        once_cell::sync::Lazy::new(|| std::ffi::CString::new(Backend::NAME).unwrap_or_default());
    NAME.as_ptr()
}

/// Capabilities (`GOMP_OFFLOAD_CAP_*`); for libgomp 17 also the `requires` clauses
/// every device meets (`Plugin::CAPS_17`), which that libgomp checks itself.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_caps() -> u32 {
    if handshake::uses_sessions() {
        Backend::CAPS | Backend::CAPS_17
    } else {
        Backend::CAPS
    }
}

/// Capabilities of device `ord` beyond `get_caps` (libgomp 17 only looks it up):
/// `GOMP_OFFLOAD_CAP_SHARED_MEM` when the device can use the host's pageable memory.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_dev_caps(ord: c_int) -> u32 {
    guard::value("get_dev_caps", 0, || Backend::dev_caps(ord))
}

/// The host NUMA node closest to device `ord`, -1 when unknown (libgomp 17 only looks
/// it up).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_numa_node(ord: c_int) -> c_int {
    guard::value("get_numa_node", -1, || Backend::numa_node(ord))
}

/// `OFFLOAD_TARGET_TYPE_*`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_type() -> c_int {
    Backend::TARGET_TYPE
}

/// Number of devices usable under the program's `requires` mask (spec §1.5): 0 without
/// a usable driver or device, -1 when devices cannot meet the mask. libgomp 12 passes
/// no mask: the argument is then ignored.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_num_devices(omp_requires_mask: u32) -> c_int {
    guard::value("get_num_devices", 0, || {
        if host::libgomp().is_some() && !handshake::serves::<Backend>() {
            return 0;
        }
        Backend::read_settings();
        Backend::num_devices(args::requires_mask(host::libgomp(), omp_requires_mask))
    })
}

/// The device's unique id, malloc'd for libgomp to keep; NULL if unknown.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_get_uid(ord: c_int) -> *const c_char {
    guard::value("get_uid", std::ptr::null(), || {
        let Some(s) = Backend::uid(ord) else {
            return std::ptr::null();
        };
        let p = report::malloc(s.len() + 1).cast::<u8>();
        // SAFETY: `p` has room for the string and its NUL.
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), p, s.len());
            *p.add(s.len()) = 0;
        }
        p as *const c_char
    })
}

/// Opens device `ord`.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_init_device(ord: c_int) -> bool {
    guard::ok("init_device", || {
        Backend::registry().open(ord, Backend::open)
    })
}

/// Closes device `ord`, unloading its images; a device that is not open is fine.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_fini_device(ord: c_int) -> bool {
    guard::ok("fini_device", || Backend::registry().close(ord))
}

/// Loads an image; returns the number of table entries or -1. libgomp 12 passes only
/// four arguments and libgomp 13 five: the tables beyond them are never touched
/// (`args::load_image_tables`).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_load_image(
    ord: c_int,
    version: u32,
    target_data: *const c_void,
    target_table: *mut *mut AddrPair,
    rev_fn_table: *mut *mut u64,
    host_ind_fn_table: *mut u64,
) -> c_int {
    guard::result("load_image", -1, || {
        check_image_version(Backend::IMAGE_KIND, Backend::IMAGE_VERSION, version)?;
        if target_table.is_null() {
            return Err(Error::invalid("load_image: no table pointer"));
        }
        let (rev_fn_table, ind) =
            args::load_image_tables(host::libgomp(), version, rev_fn_table, host_ind_fn_table);
        let dev = Backend::device(ord)?;
        // SAFETY: libgomp passes a descriptor (contract); `ind` as checked above.
        let img = unsafe {
            Device::load_image(&dev, version, target_data, !rev_fn_table.is_null(), ind)?
        };
        let handles = Backend::registry()
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
    })
}

/// Unloads an image; its kernel handles are refused from then on.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_unload_image(
    ord: c_int,
    version: u32,
    target_data: *const c_void,
) -> bool {
    guard::ok("unload_image", || {
        check_image_version(Backend::IMAGE_KIND, Backend::IMAGE_VERSION, version)?;
        let dev = Backend::device(ord)?;
        Backend::registry()
            .kernels()
            .remove_image(ord, target_data as usize);
        Device::unload_image(&*dev, target_data)
    })
}

/// Allocates device memory; NULL after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_alloc(ord: c_int, size: usize) -> *mut c_void {
    guard::result("alloc", std::ptr::null_mut(), || {
        Ok(DeviceCore::alloc(Device::core(&*Backend::device(ord)?), size)? as *mut c_void)
    })
}

/// Frees device memory (NULL is accepted).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_free(ord: c_int, ptr: *mut c_void) -> bool {
    guard::ok("free", || {
        DeviceCore::free(Device::core(&*Backend::device(ord)?), ptr as DevPtr)
    })
}

/// Copies device to host.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_dev2host(
    ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> bool {
    // SAFETY: libgomp passes a host buffer of `n` bytes.
    guard::ok("dev2host", || unsafe {
        DeviceCore::dev2host(Device::core(&*Backend::device(ord)?), dst, src as DevPtr, n)
    })
}

/// Copies host to device.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_host2dev(
    ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> bool {
    // SAFETY: libgomp passes a host buffer of `n` bytes.
    guard::ok("host2dev", || unsafe {
        DeviceCore::host2dev(Device::core(&*Backend::device(ord)?), dst as DevPtr, src, n)
    })
}

/// Copies device to device.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_dev2dev(
    ord: c_int,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> bool {
    guard::ok("dev2dev", || {
        DeviceCore::dev2dev(
            Device::core(&*Backend::device(ord)?),
            dst as DevPtr,
            src as DevPtr,
            n,
        )
    })
}

/// Fills device memory with a byte value.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_memset(ord: c_int, ptr: *mut c_void, val: c_int, n: usize) -> bool {
    guard::ok("memset", || {
        DeviceCore::memset(Device::core(&*Backend::device(ord)?), ptr as DevPtr, val, n)
    })
}

/// The launch request of `run`/`async_run`: libgomp's arguments decoded once.
///
/// # Safety
/// `args` is libgomp's target-argument array (checked non-NULL by the caller).
unsafe fn launch_request(vars: *mut c_void, args: *mut *mut c_void) -> LaunchRequest {
    // SAFETY: libgomp's NULL-terminated array; a kernel-attribute entry for this
    // product's device type holds the compiler's block (contract).
    unsafe { LaunchRequest::decode(vars, args, Backend::TARGET_TYPE as usize) }
}

/// Runs kernel handle `tgt_fn` of device `ord` through `f`, after the one check of a
/// handle: it must be a live kernel of that device.
fn with_kernel(
    what: &str,
    ord: c_int,
    tgt_fn: *mut c_void,
    f: impl FnOnce(&std::sync::Arc<KernelOf<Backend>>) -> Result<()>,
) -> Result<()> {
    Backend::registry()
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

// Declared, not called, here: the declaration is what include/generate.sh puts in the C
// header (libgomp 12-16's prototype); the definition is `run_any` below.
#[allow(dead_code)]
extern "C" {
    /// Runs an OpenMP target region and waits for it; errors are fatal (contract).
    /// Under libgomp 17 the same symbol takes `(session, tgt_fn, args)` ([`run_any`]).
    pub fn GOMP_OFFLOAD_run(
        ord: c_int,
        tgt_fn: *mut c_void,
        tgt_vars: *mut c_void,
        args: *mut *mut c_void,
    );
}

/// `GOMP_OFFLOAD_run` as exported: libgomp 12-16 call it as `run(int ord, void *fn,
/// void *vars, void **args)`, libgomp 17 as `run(void *session, void *fn, void
/// **args)`. Each argument arrives in its own register (x86-64 System V: the first six
/// integer or pointer arguments), so the entry point takes four register-wide words and
/// reads them as the libgomp that loaded us passes them ([`handshake::uses_sessions`],
/// set by `GOMP_OFFLOAD_version` before libgomp looks `run` up): under 17 the fourth
/// register holds whatever the caller left there and is not read; under 12-16 only the
/// low 32 bits of the first are the `int` device number (the upper half of an `int`
/// argument's register is unspecified). Before any detection (a program linked with
/// the library) it is 12-16's `run`.
///
/// cbindgen:ignore
#[export_name = "GOMP_OFFLOAD_run"]
pub extern "C" fn run_any(w0: usize, tgt_fn: *mut c_void, w2: usize, w3: usize) {
    if handshake::uses_sessions() {
        run_session(w0 as *mut c_void, tgt_fn, w2 as *mut *mut c_void)
    } else {
        run(
            w0 as u32 as c_int,
            tgt_fn,
            w2 as *mut c_void,
            w3 as *mut *mut c_void,
        )
    }
}

/// `GOMP_OFFLOAD_run` of libgomp 12-16 (the contract above). Public for the product's
/// tests.
pub extern "C" fn run(
    ord: c_int,
    tgt_fn: *mut c_void,
    tgt_vars: *mut c_void,
    args: *mut *mut c_void,
) {
    guard::or_fatal("run", || {
        if args.is_null() {
            return Err(Error::invalid("No target arguments provided"));
        }
        let dev = Backend::device(ord)?;
        // SAFETY: libgomp's argument array, checked non-NULL above.
        let req = unsafe { launch_request(tgt_vars, args) };
        with_kernel("run", ord, tgt_fn, |k| Device::run(&*dev, k, &req))
    })
}

/// `GOMP_OFFLOAD_run` of libgomp 17: `run(session, tgt_fn, args)`; the device and the
/// table come from the session. Public for the product's tests.
pub extern "C" fn run_session(session: *mut c_void, tgt_fn: *mut c_void, args: *mut *mut c_void) {
    guard::or_fatal("run", || {
        // SAFETY: libgomp's session block, started, used by this launch only.
        let s = *unsafe { Session::get(session) }?;
        if args.is_null() {
            return Err(Error::invalid("No target arguments provided"));
        }
        let dev = Backend::device(s.ord)?;
        // SAFETY: libgomp's argument array, checked non-NULL above.
        let req = unsafe { launch_request(s.table as *mut c_void, args) };
        with_kernel("run", s.ord, tgt_fn, |k| Device::run(&*dev, k, &req))
    })
}

/// `session_size`: the bytes of this plugin's session block (libgomp 17).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_session_size() -> usize {
    session::SIZE
}

/// `session_start`: a fresh session for a launch on device `ord` (libgomp 17). Errors
/// (a NULL or misaligned block) are fatal: libgomp has no failure value here.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_session_start(session: *mut c_void, ord: c_int) {
    guard::or_fatal("session_start", || {
        // SAFETY: libgomp's block of session_size() bytes.
        unsafe { Session::start(session, ord) }?;
        log::trace!("session {session:p}: started for device {ord}");
        Ok(())
    })
}

/// `session_set_target_var_table`: the launch's table of mapped-variable addresses, as
/// the kernel receives it (libgomp 17). Errors are fatal.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_session_set_target_var_table(
    session: *mut c_void,
    table: *mut c_void,
) {
    guard::or_fatal("session_set_target_var_table", || {
        // SAFETY: libgomp's session block, started, used by this launch only.
        let s = unsafe { Session::get(session) }?;
        if s.sets != 0 {
            return Err(Error::invalid(format!(
                "session {session:p}: target-variable table set twice"
            )));
        }
        s.set_table(table);
        log::trace!("session {session:p}: table {table:p}");
        Ok(())
    })
}

// Declared, not called, here: the declaration is what include/generate.sh puts in the
// C header; the definition is the indirect function below.
#[allow(dead_code)]
extern "C" {
    /// Launches an OpenMP target region without waiting (`nowait`); completion is
    /// reported through `GOMP_PLUGIN_target_task_completion(async_data)`. Errors are fatal.
    /// Not offered to libgomp 12: the symbol is an indirect function (IFUNC) that
    /// resolves to NULL there, so libgomp runs `nowait` regions through `run`, as with
    /// GCC 12's own plugin (docs/plugin-abi.md §4.1).
    pub fn GOMP_OFFLOAD_async_run(
        ord: c_int,
        tgt_fn: *mut c_void,
        tgt_vars: *mut c_void,
        args: *mut *mut c_void,
        async_data: *mut c_void,
    );
}

/// The resolver of `GOMP_OFFLOAD_async_run`, which is a GNU indirect function: the
/// symbol's value is this function (exported under that name like every entry point)
/// and its type STT_GNU_IFUNC. The dynamic loader calls it when the symbol is looked up
/// (libgomp's dlsym, after `GOMP_OFFLOAD_version`) and hands out the address it
/// returns: [`async_run`] (libgomp 13-16), [`async_run_session`] (17), or NULL where the libgomp that loaded us must not be offered
/// one (`handshake::offers_async_run`); glibc's dlsym then answers NULL, which libgomp
/// takes for an absent optional entry point. The loader may run it before the
/// program's libraries are initialised, so it only reads an atomic and calls nothing
/// that could allocate, lock or unwind. Within one link (a test linking the library)
/// the name denotes this resolver, not the entry point: call [`async_run`] there.
///
/// cbindgen:ignore
#[export_name = "GOMP_OFFLOAD_async_run"]
extern "C" fn resolve_async_run() -> *const c_void {
    // SAFETY: an assembler directive, no instruction: it makes the symbol of this very
    // function an indirect function (the assembler keeps that type over the function
    // type the compiler gives it). Written inside the function so that it always lands
    // in the object file that defines the symbol, whatever the code-generation units.
    unsafe {
        std::arch::asm!(
            ".type GOMP_OFFLOAD_async_run, @gnu_indirect_function",
            options(nomem, nostack, preserves_flags)
        )
    };
    if !handshake::offers_async_run() {
        std::ptr::null()
    } else if handshake::uses_sessions() {
        async_run_session as *const c_void
    } else {
        async_run as *const c_void
    }
}

/// `GOMP_OFFLOAD_async_run` itself (the contract above), for libgomp 13-16.
/// Public for the product's tests, which link the library and cannot reach it by the
/// exported name (see [`resolve_async_run`]).
pub extern "C" fn async_run(
    ord: c_int,
    tgt_fn: *mut c_void,
    tgt_vars: *mut c_void,
    args: *mut *mut c_void,
    async_data: *mut c_void,
) {
    guard::or_fatal("async_run", || {
        if args.is_null() {
            return Err(Error::invalid("async_run: no target arguments"));
        }
        let dev = Backend::device(ord)?;
        // SAFETY: libgomp's argument array, checked non-NULL above.
        let req = unsafe { launch_request(tgt_vars, args) };
        with_kernel("async_run", ord, tgt_fn, |k| {
            Device::run_async(&dev, k, &req, async_data)
        })
    })
}

/// `GOMP_OFFLOAD_async_run` of libgomp 17: `async_run(session, tgt_fn, args,
/// async_data)`. Public for the product's tests.
pub extern "C" fn async_run_session(
    session: *mut c_void,
    tgt_fn: *mut c_void,
    args: *mut *mut c_void,
    async_data: *mut c_void,
) {
    guard::or_fatal("async_run", || {
        // SAFETY: libgomp's session block, started, used by this launch only.
        let s = *unsafe { Session::get(session) }?;
        if args.is_null() {
            return Err(Error::invalid("async_run: no target arguments"));
        }
        let dev = Backend::device(s.ord)?;
        // SAFETY: libgomp's argument array, checked non-NULL above.
        let req = unsafe { launch_request(s.table as *mut c_void, args) };
        with_kernel("async_run", s.ord, tgt_fn, |k| {
            Device::run_async(&dev, k, &req, async_data)
        })
    })
}

/// Managed memory on device `ord`; NULL after an error message.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_managed_alloc(ord: c_int, size: usize) -> *mut c_void {
    guard::result("managed_alloc", std::ptr::null_mut(), || {
        Ok(DeviceCore::managed_alloc(Device::core(&*Backend::device(ord)?), size)? as *mut c_void)
    })
}

/// Frees managed memory.
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_managed_free(ord: c_int, ptr: *mut c_void) -> bool {
    guard::ok("managed_free", || {
        DeviceCore::managed_free(Device::core(&*Backend::device(ord)?), ptr as DevPtr)
    })
}

/// 1 if device `ord` can access all of `[ptr, ptr+size)`, else 0 (also after an error
/// message, e.g. for a device that is not open).
#[no_mangle]
pub extern "C" fn GOMP_OFFLOAD_is_accessible_ptr(
    ord: c_int,
    ptr: *const c_void,
    size: usize,
) -> c_int {
    guard::result("is_accessible_ptr", 0, || {
        Ok(
            DeviceCore::is_accessible(Device::core(&*Backend::device(ord)?), ptr as usize, size)
                as c_int,
        )
    })
}

fn side(
    ord: c_int,
    base: *const c_void,
    pitch: usize,
    rows: usize,
    off: (usize, usize, usize),
) -> Result<Side> {
    Side::at(ord, base as usize, pitch, rows, off)
        .ok_or_else(|| Error::invalid("omp_target_memcpy_rect: offsets overflow"))
}

/// 2-D rectangular copy; ord -1 is the host. Returns 1 on success, 0 after an error.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn GOMP_OFFLOAD_memcpy2d(
    dst_ord: c_int,
    src_ord: c_int,
    dim1_size: usize,
    dim0_len: usize,
    dst: *mut c_void,
    dst_off1_size: usize,
    dst_off0_len: usize,
    dst_dim1_size: usize,
    src: *const c_void,
    src_off1_size: usize,
    src_off0_len: usize,
    src_dim1_size: usize,
) -> c_int {
    guard::ok("memcpy2d", || {
        let r = Rect {
            dst: side(
                dst_ord,
                dst,
                dst_dim1_size,
                0,
                (dst_off1_size, dst_off0_len, 0),
            )?,
            src: side(
                src_ord,
                src,
                src_dim1_size,
                0,
                (src_off1_size, src_off0_len, 0),
            )?,
            width: dim1_size,
            height: dim0_len,
            depth: None,
        };
        // SAFETY: libgomp passes host blocks valid for the described rectangle.
        unsafe { Backend::copy_rect(&r) }
    }) as c_int
}

/// 3-D rectangular copy; ord -1 is the host. Returns 1 on success, 0 after an error.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn GOMP_OFFLOAD_memcpy3d(
    dst_ord: c_int,
    src_ord: c_int,
    dim2_size: usize,
    dim1_len: usize,
    dim0_len: usize,
    dst: *mut c_void,
    dst_off2_size: usize,
    dst_off1_len: usize,
    dst_off0_len: usize,
    dst_dim2_size: usize,
    dst_dim1_len: usize,
    src: *const c_void,
    src_off2_size: usize,
    src_off1_len: usize,
    src_off0_len: usize,
    src_dim2_size: usize,
    src_dim1_len: usize,
) -> c_int {
    guard::ok("memcpy3d", || {
        let r = Rect {
            dst: side(
                dst_ord,
                dst,
                dst_dim2_size,
                dst_dim1_len,
                (dst_off2_size, dst_off1_len, dst_off0_len),
            )?,
            src: side(
                src_ord,
                src,
                src_dim2_size,
                src_dim1_len,
                (src_off2_size, src_off1_len, src_off0_len),
            )?,
            width: dim2_size,
            height: dim1_len,
            depth: Some(dim0_len),
        };
        // SAFETY: libgomp passes host blocks valid for the described box.
        unsafe { Backend::copy_rect(&r) }
    }) as c_int
}
