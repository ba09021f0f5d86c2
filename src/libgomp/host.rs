//! The libgomp that loaded us: its release and its `GOMP_PLUGIN_*` functions.
//!
//! Found without any link-time dependency: `dlopen("libgomp.so.1", RTLD_NOLOAD)` gives
//! the already loaded library, `dlvsym` its versioned symbols (so the arity of
//! `GOMP_PLUGIN_target_rev` can be chosen at run time), and `dladdr` its file, whose
//! version definitions reveal a newer, unknown libgomp.

use super::verdef;
use super::version::{classify, Detected, Libgomp};
use once_cell::sync::Lazy;
use std::ffi::{c_char, c_int, c_void, CStr, CString};

/// `GOMP_PLUGIN_debug(int kind, const char *fmt, ...)`.
pub type DebugFn = unsafe extern "C" fn(c_int, *const c_char, ...);
/// `GOMP_PLUGIN_error(const char *fmt, ...)`.
pub type ErrorFn = unsafe extern "C" fn(*const c_char, ...);
/// `GOMP_PLUGIN_fatal(const char *fmt, ...)`, which never returns.
pub type FatalFn = unsafe extern "C" fn(*const c_char, ...) -> !;
/// `GOMP_PLUGIN_malloc(size_t)`, which never returns NULL.
pub type MallocFn = unsafe extern "C" fn(usize) -> *mut c_void;
/// `GOMP_PLUGIN_target_task_completion(void *async_data)`.
pub type TaskCompletionFn = unsafe extern "C" fn(*mut c_void);
/// `GOMP_PLUGIN_acc_default_dim(unsigned i)`.
pub type AccDefaultDimFn = unsafe extern "C" fn(u32) -> c_int;
/// `GOMP_PLUGIN_goacc_thread(void)` and `GOMP_PLUGIN_acc_thread(void)`.
pub type ThreadFn = unsafe extern "C" fn() -> *mut c_void;
/// `GOMP_PLUGIN_goacc_profiling_dispatch(acc_prof_info *, acc_event_info *, acc_api_info *)`.
pub type ProfDispatchFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void);

/// The host libgomp as seen from the plugin. Created once, read-only afterwards, shared
/// by all threads.
pub struct Host {
    /// Which release it is (or why it is refused).
    pub detected: Detected,
    /// The file it was loaded from, for diagnostics.
    pub path: Option<String>,
    /// `GOMP_PLUGIN_debug`.
    pub debug: DebugFn,
    /// `GOMP_PLUGIN_error`.
    pub error: ErrorFn,
    /// `GOMP_PLUGIN_fatal`.
    pub fatal: FatalFn,
    /// `GOMP_PLUGIN_malloc`.
    pub malloc: MallocFn,
    /// `GOMP_PLUGIN_target_task_completion` (GOMP_PLUGIN_1.1).
    pub task_completion: Option<TaskCompletionFn>,
    /// `GOMP_PLUGIN_target_rev` (GOMP_PLUGIN_1.4); its arity depends on the release,
    /// so it is kept untyped (see `target::target_rev`).
    pub target_rev: Option<usize>,
    /// `GOMP_PLUGIN_acc_default_dim` (GOMP_PLUGIN_1.2).
    pub acc_default_dim: Option<AccDefaultDimFn>,
    /// `GOMP_PLUGIN_acc_thread` (GOMP_PLUGIN_1.0): the calling thread's plugin data.
    pub acc_thread: Option<ThreadFn>,
    /// `GOMP_PLUGIN_goacc_thread` (GOMP_PLUGIN_1.3): the calling thread's OpenACC state.
    pub goacc_thread: Option<ThreadFn>,
    /// `GOMP_PLUGIN_goacc_profiling_dispatch` (GOMP_PLUGIN_1.3).
    pub prof_dispatch: Option<ProfDispatchFn>,
}

const RTLD_LAZY: c_int = 0x1;
const RTLD_NOLOAD: c_int = 0x4;

#[repr(C)]
struct DlInfo {
    dli_fname: *const c_char,
    dli_fbase: *mut c_void,
    dli_sname: *const c_char,
    dli_saddr: *mut c_void,
}

#[link(name = "dl")]
extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlvsym(handle: *mut c_void, name: *const c_char, version: *const c_char) -> *mut c_void;
    fn dladdr(addr: *const c_void, info: *mut DlInfo) -> c_int;
}

fn vsym(handle: *mut c_void, name: &str, node: &str) -> *mut c_void {
    let (Ok(n), Ok(v)) = (CString::new(name), CString::new(node)) else {
        return std::ptr::null_mut();
    };
    // SAFETY: `handle` is a live dlopen handle; the strings are valid C strings.
    unsafe { dlvsym(handle, n.as_ptr(), v.as_ptr()) }
}

fn file_of(addr: *const c_void) -> Option<String> {
    let mut info = DlInfo {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only fills `info`; dli_fname points into the loader's link map.
    let ok = unsafe { dladdr(addr, &mut info) } != 0 && !info.dli_fname.is_null();
    ok.then(|| {
        // SAFETY: checked non-NULL just above; the loader keeps the string alive.
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned()
    })
}

fn find() -> Option<Host> {
    // SAFETY: RTLD_NOLOAD never loads anything; it only returns an existing handle.
    let h = unsafe { dlopen(c"libgomp.so.1".as_ptr(), RTLD_LAZY | RTLD_NOLOAD) };
    if h.is_null() {
        return None;
    }
    let sym = |name: &str, node: &str| {
        let p = vsym(h, name, node);
        (!p.is_null()).then_some(p)
    };
    let debug = sym("GOMP_PLUGIN_debug", "GOMP_PLUGIN_1.0")?;
    let error = sym("GOMP_PLUGIN_error", "GOMP_PLUGIN_1.0")?;
    let fatal = sym("GOMP_PLUGIN_fatal", "GOMP_PLUGIN_1.0")?;
    let malloc = sym("GOMP_PLUGIN_malloc", "GOMP_PLUGIN_1.0")?;
    let path = file_of(malloc);
    let nodes = path
        .as_deref()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| verdef::version_nodes(&b));
    let detected = classify(|s, n| sym(s, n).is_some(), nodes.as_deref());
    // SAFETY: (all transmutes below) each pointer is libgomp's definition of that
    // GOMP_PLUGIN_* function at that version node, whose C signature is the alias type.
    unsafe {
        Some(Host {
            detected,
            path,
            debug: std::mem::transmute::<*mut c_void, DebugFn>(debug),
            error: std::mem::transmute::<*mut c_void, ErrorFn>(error),
            fatal: std::mem::transmute::<*mut c_void, FatalFn>(fatal),
            malloc: std::mem::transmute::<*mut c_void, MallocFn>(malloc),
            task_completion: sym("GOMP_PLUGIN_target_task_completion", "GOMP_PLUGIN_1.1")
                .map(|p| std::mem::transmute::<*mut c_void, TaskCompletionFn>(p)),
            target_rev: sym("GOMP_PLUGIN_target_rev", "GOMP_PLUGIN_1.4").map(|p| p as usize),
            acc_default_dim: sym("GOMP_PLUGIN_acc_default_dim", "GOMP_PLUGIN_1.2")
                .map(|p| std::mem::transmute::<*mut c_void, AccDefaultDimFn>(p)),
            acc_thread: sym("GOMP_PLUGIN_acc_thread", "GOMP_PLUGIN_1.0")
                .map(|p| std::mem::transmute::<*mut c_void, ThreadFn>(p)),
            goacc_thread: sym("GOMP_PLUGIN_goacc_thread", "GOMP_PLUGIN_1.3")
                .map(|p| std::mem::transmute::<*mut c_void, ThreadFn>(p)),
            prof_dispatch: sym("GOMP_PLUGIN_goacc_profiling_dispatch", "GOMP_PLUGIN_1.3")
                .map(|p| std::mem::transmute::<*mut c_void, ProfDispatchFn>(p)),
        })
    }
}

static HOST: Lazy<Option<Host>> = Lazy::new(find);

/// The libgomp of this process, or `None` when none is loaded (the plugin's own unit
/// tests). Detected on first use; thread-safe.
pub fn host() -> Option<&'static Host> {
    HOST.as_ref()
}

/// What was detected: the release, or why the plugin refuses it.
pub fn detected() -> Detected {
    host().map_or(Detected::NotLoaded, |h| h.detected.clone())
}

/// The supported release that loaded us if detection has already run (it runs on the
/// first use of [`host`], at the latest in `GOMP_OFFLOAD_version`, libgomp's first
/// call); `None` before that, or when none is loaded or it is refused. Never detects:
/// only an atomic read, so it may be called where nothing else may, such as an IFUNC
/// resolver that the dynamic loader runs while it relocates a program.
pub fn libgomp_if_detected() -> Option<Libgomp> {
    match Lazy::get(&HOST)?.as_ref()?.detected {
        Detected::Known(v) => Some(v),
        _ => None,
    }
}

/// The supported release that loaded us; `None` when none is loaded or it is refused.
pub fn libgomp() -> Option<Libgomp> {
    match detected() {
        Detected::Known(v) => Some(v),
        _ => None,
    }
}
