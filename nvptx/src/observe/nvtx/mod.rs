//! NVTX ranges, marks and names for profilers that attach through NVTX (Nsight Systems:
//! `nsys profile`), in a domain of the plugin's own, `libgomp`: target regions and
//! OpenACC compute constructs (named after the source: [`names`]), copies with their
//! direction, bytes and path, image loads and JIT links, device allocations, reverse
//! offload, the tuner's trials; the plugin's CUDA streams and threads get names.
//! `docs/nvtx.md` lists what appears.
//!
//! Off unless a tool is attached, and then nearly free: NVTX v3's injection model
//! ([`abi`], [`tool`]): at the plugin's first use ([`attach`], with the other
//! settings) the tool `NVTX_INJECTION64_PATH` names is loaded, unless
//! `GOMP_NVPTX_NVTX=0`; nothing is loaded without it. Every call site checks one
//! process-wide flag with a relaxed load ([`on`]) and builds no name, allocates nothing
//! and calls nothing while it is off (the name is a closure, called only when on).
//!
//! Ownership and threads: the flag and the attached session are process-wide statics,
//! set once; any thread calls. A [`Range`] is pushed and popped on one thread (it is
//! not `Send`); an [`AsyncRange`] (start/end) may end on another thread.

pub mod abi;
pub mod names;
mod tool;

use crate::config::switches::Switches;
use abi::EventAttributes;
use once_cell::sync::OnceCell;
use std::borrow::Cow;
use std::ffi::{c_char, c_void, CStr, CString};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a tool is attached and listens to our domain: the one check of every site.
static ON: AtomicBool = AtomicBool::new(false);

/// The attached session: the domain the tool made for us (NULL: its default domain).
struct Session {
    domain: usize,
}

static SESSION: OnceCell<Session> = OnceCell::new();

/// The domain's name.
pub const DOMAIN: &CStr = c"libgomp";

/// What a range or mark is about: its NVTX category (a number in our domain, named
/// [`Kind::name`]) and colour. Plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A synchronous OpenMP target region's launch (`GOMP_OFFLOAD_run`), entry to return.
    Target,
    /// A `target nowait` region's launch (`GOMP_OFFLOAD_async_run`): the enqueue.
    TargetNowait,
    /// A `target nowait` kernel from its enqueue until the completion thread saw it end.
    InFlight,
    /// An OpenACC compute construct launched synchronously (`openacc_exec`).
    AccCompute,
    /// An OpenACC compute construct enqueued on an async queue (`openacc_async_exec`).
    AccAsync,
    /// Waiting for an OpenACC async queue (`openacc_async_synchronize`).
    AccWait,
    /// A copy between the host and the device or between device buffers.
    Copy,
    /// An image load, its JIT link or its load from the linked-image cache.
    Image,
    /// A device allocation, and where its memory came from (pool or driver).
    Alloc,
    /// A reverse-offload request served on the host.
    Reverse,
    /// The launch-shape tuner: a trial, a choice.
    Tuner,
}

impl Kind {
    /// Every kind, in category order (category = index + 1).
    pub const ALL: [Kind; 11] = [
        Kind::Target,
        Kind::TargetNowait,
        Kind::InFlight,
        Kind::AccCompute,
        Kind::AccAsync,
        Kind::AccWait,
        Kind::Copy,
        Kind::Image,
        Kind::Alloc,
        Kind::Reverse,
        Kind::Tuner,
    ];

    /// The category's name, as profilers show it.
    pub fn name(self) -> &'static CStr {
        match self {
            Kind::Target => c"omp target",
            Kind::TargetNowait => c"omp target nowait",
            Kind::InFlight => c"omp target nowait in flight",
            Kind::AccCompute => c"acc compute",
            Kind::AccAsync => c"acc async",
            Kind::AccWait => c"acc wait",
            Kind::Copy => c"copy",
            Kind::Image => c"image",
            Kind::Alloc => c"alloc",
            Kind::Reverse => c"reverse offload",
            Kind::Tuner => c"tuner",
        }
    }

    /// The category number (1..).
    pub fn category(self) -> u32 {
        self as u32 + 1
    }

    /// The colour (ARGB): launches green, OpenACC teal, copies blue, images orange,
    /// allocations purple, reverse offload red, the tuner grey.
    pub fn color(self) -> u32 {
        match self {
            Kind::Target | Kind::TargetNowait => 0xff2e_7d32,
            Kind::InFlight => 0xff81_c784,
            Kind::AccCompute | Kind::AccAsync => 0xff00_897b,
            Kind::AccWait => 0xff80_cbc4,
            Kind::Copy => 0xff15_65c0,
            Kind::Image => 0xffef_6c00,
            Kind::Alloc => 0xff6a_1b9a,
            Kind::Reverse => 0xffc6_2828,
            Kind::Tuner => 0xff75_7575,
        }
    }
}

/// Whether a tool is attached (one relaxed load): the check every site makes first.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Attaches the tool `switches` name (`NVTX_INJECTION64_PATH`, unless
/// `GOMP_NVPTX_NVTX=0`): loads it, makes the `libgomp` domain and names its
/// categories, then opens the gate. Once per process, with the settings
/// (`Plugin::read_settings`): later calls do nothing; a tool that cannot be loaded is
/// said under `GOMP_DEBUG` and leaves NVTX off. Thread-safe.
pub fn attach(switches: &Switches) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| attach_once(switches));
}

/// [`attach`]'s work, run once.
fn attach_once(switches: &Switches) {
    let Some(path) = switches.nvtx_tool.as_deref() else {
        return;
    };
    if SESSION.get().is_some() {
        return;
    }
    if let Err(e) = tool::load(path) {
        log::debug!("NVTX: tool {} not attached: {e}", path.display());
        return;
    }
    let domain = call::<abi::DomainCreateA>(abi::CORE2, abi::CORE2_DOMAIN_CREATE_A)
        // SAFETY: the slot's type; a NUL-terminated name read during the call.
        .map_or(std::ptr::null_mut(), |f| unsafe { f(DOMAIN.as_ptr()) });
    if let Some(f) = call::<abi::DomainNameCategoryA>(abi::CORE2, abi::CORE2_NAME_CATEGORY_A) {
        for k in Kind::ALL {
            // SAFETY: the slot's type; the domain the tool made; a static name.
            unsafe { f(domain, k.category(), k.name().as_ptr()) };
        }
    }
    let _ = SESSION.set(Session {
        domain: domain as usize,
    });
    ON.store(true, Ordering::Release);
    log::debug!("NVTX: tool {} attached (domain libgomp)", path.display());
}

/// The tool's function in slot `id` of module `module`, typed `F` (the slot's type in
/// `abi`), if the tool filled it.
fn call<F: Copy>(module: usize, id: usize) -> Option<F> {
    debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    let p = tool::slot(module, id)?;
    // SAFETY: `F` is the function-pointer type NVTX declares for this slot (callers
    // pass the `abi` type of the id they name), of a pointer's size; `p` is not NULL.
    Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

/// The session's domain (an acquire load: the slots the tool wrote are seen after).
fn domain() -> Option<abi::DomainHandle> {
    SESSION.get().map(|s| s.domain as abi::DomainHandle)
}

/// The attributes of an event of `kind` named `name`, with `payload` if any.
fn attributes(kind: Kind, payload: Option<u64>, name: &CStr) -> EventAttributes {
    EventAttributes {
        version: abi::NVTX_VERSION,
        size: abi::EVENT_ATTRIBUTES_SIZE,
        category: kind.category(),
        color_type: abi::COLOR_ARGB,
        color: kind.color(),
        payload_type: if payload.is_some() {
            abi::PAYLOAD_U64
        } else {
            abi::PAYLOAD_NONE
        },
        reserved0: 0,
        payload: payload.unwrap_or(0),
        message_type: abi::MESSAGE_ASCII,
        message: name.as_ptr(),
    }
}

/// A name as a C string (an interior NUL, which no name of ours has, cuts it).
fn c_name(name: Cow<'_, str>) -> Cow<'_, CStr> {
    let bytes = match name {
        Cow::Borrowed(s) => s.as_bytes().to_vec(),
        Cow::Owned(s) => s.into_bytes(),
    };
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let mut v = bytes;
    v.truncate(end);
    Cow::Owned(CString::new(v).unwrap_or_default())
}

/// A pushed NVTX range of the calling thread, popped when dropped. Not `Send`: a
/// push/pop range belongs to one thread. Empty (nothing to pop) when no tool is
/// attached.
#[must_use = "the range ends when this is dropped"]
#[derive(Default)]
pub struct Range {
    pushed: bool,
    _thread: PhantomData<*const ()>,
}

impl Range {
    /// A range that was not pushed.
    pub const NONE: Range = Range {
        pushed: false,
        _thread: PhantomData,
    };
}

impl Drop for Range {
    #[inline]
    fn drop(&mut self) {
        if self.pushed {
            pop();
        }
    }
}

#[cold]
fn pop() {
    if let (Some(d), Some(f)) = (
        domain(),
        call::<abi::DomainRangePop>(abi::CORE2, abi::CORE2_RANGE_POP),
    ) {
        // SAFETY: the slot's type; the session's domain.
        unsafe { f(d) };
    }
}

/// Pushes a range of `kind` on the calling thread, named `name()` (called only when a
/// tool is attached), with `payload` (a byte count, a kernel count: `docs/nvtx.md`);
/// it ends when the returned guard is dropped.
#[inline]
pub fn range<'a>(kind: Kind, payload: Option<u64>, name: impl FnOnce() -> Cow<'a, str>) -> Range {
    if !on() {
        return Range::NONE;
    }
    push(kind, payload, &c_name(name()))
}

/// [`range`] with a name already made (a kernel's label).
#[inline]
pub fn range_c(kind: Kind, payload: Option<u64>, name: Option<&CStr>) -> Range {
    match name {
        Some(n) if on() => push(kind, payload, n),
        _ => Range::NONE,
    }
}

#[cold]
fn push(kind: Kind, payload: Option<u64>, name: &CStr) -> Range {
    let (Some(d), Some(f)) = (
        domain(),
        call::<abi::DomainRangePushEx>(abi::CORE2, abi::CORE2_RANGE_PUSH_EX),
    ) else {
        return Range::NONE;
    };
    let a = attributes(kind, payload, name);
    // SAFETY: the slot's type; attributes and name alive during the call.
    unsafe { f(d, &a) };
    Range {
        pushed: true,
        _thread: PhantomData,
    }
}

/// A mark (an instant) of `kind` named `name()` (called only when a tool is attached).
#[inline]
pub fn mark<'a>(kind: Kind, payload: Option<u64>, name: impl FnOnce() -> Cow<'a, str>) {
    if on() {
        mark_now(kind, payload, &c_name(name()));
    }
}

#[cold]
fn mark_now(kind: Kind, payload: Option<u64>, name: &CStr) {
    if let (Some(d), Some(f)) = (
        domain(),
        call::<abi::DomainMarkEx>(abi::CORE2, abi::CORE2_MARK_EX),
    ) {
        let a = attributes(kind, payload, name);
        // SAFETY: the slot's type; attributes and name alive during the call.
        unsafe { f(d, &a) };
    }
}

/// A start/end range (held as NVTX's `nvtxRangeId_t`), which may end on another
/// thread than it started on (a `nowait` kernel: started at its enqueue, ended by the
/// completion thread); a push/pop [`Range`] ends where it began. `Copy`, plain data;
/// [`AsyncRange::NONE`] (nothing to end) when no tool is attached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AsyncRange(u64);

impl AsyncRange {
    /// A range that was not started.
    pub const NONE: AsyncRange = AsyncRange(0);

    /// Starts a range of `kind` named `name` (a kernel's label), if a tool is attached.
    #[inline]
    pub fn start(kind: Kind, name: Option<&CStr>) -> AsyncRange {
        match name {
            Some(n) if on() => start(kind, n),
            _ => AsyncRange::NONE,
        }
    }

    /// Ends the range (nothing for [`AsyncRange::NONE`]).
    #[inline]
    pub fn end(self) {
        if self.0 != 0 {
            end(self.0);
        }
    }
}

#[cold]
fn start(kind: Kind, name: &CStr) -> AsyncRange {
    let (Some(d), Some(f)) = (
        domain(),
        call::<abi::DomainRangeStartEx>(abi::CORE2, abi::CORE2_RANGE_START_EX),
    ) else {
        return AsyncRange::NONE;
    };
    let a = attributes(kind, None, name);
    // SAFETY: the slot's type; attributes and name alive during the call.
    AsyncRange(unsafe { f(d, &a) })
}

#[cold]
fn end(id: u64) {
    if let (Some(d), Some(f)) = (
        domain(),
        call::<abi::DomainRangeEnd>(abi::CORE2, abi::CORE2_RANGE_END),
    ) {
        // SAFETY: the slot's type; an id the tool handed out.
        unsafe { f(d, id) };
    }
}

/// Names CUDA stream `stream` (a raw `CUstream`) `name()` (called only when a tool is
/// attached): `nvtxNameCuStreamA`.
#[inline]
pub fn name_stream<'a>(stream: *mut c_void, name: impl FnOnce() -> Cow<'a, str>) {
    if on() {
        name_stream_now(stream, &c_name(name()));
    }
}

#[cold]
fn name_stream_now(stream: *mut c_void, name: &CStr) {
    if let (Some(_), Some(f)) = (
        domain(),
        call::<abi::NameCuStreamA>(abi::CUDA, abi::CUDA_NAME_CU_STREAM_A),
    ) {
        // SAFETY: the slot's type; the tool only records the handle.
        unsafe { f(stream, name.as_ptr()) };
    }
}

/// Starts a thread of the plugin named `name` (`nvptx0-reverse`, `nvptx-staging`...)
/// that first names itself to an attached tool ([`name_this_thread`]), then runs `f`:
/// every thread the plugin starts starts here. `std::thread::Builder::spawn`'s result.
pub fn spawn<F, T>(name: String, f: F) -> std::io::Result<std::thread::JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    std::thread::Builder::new().name(name).spawn(move || {
        name_this_thread();
        f()
    })
}

/// Names the calling thread after its Rust name with `nvtxNameOsThreadA`, if a tool is
/// attached ([`spawn`] calls it first thing in each thread it starts).
#[inline]
fn name_this_thread() {
    if on() {
        name_this_thread_now();
    }
}

extern "C" {
    fn syscall(n: std::ffi::c_long, ...) -> std::ffi::c_long;
}

#[cold]
fn name_this_thread_now() {
    #[cfg(not(target_arch = "aarch64"))]
    const SYS_GETTID: std::ffi::c_long = 186;
    #[cfg(target_arch = "aarch64")]
    const SYS_GETTID: std::ffi::c_long = 178;
    let t = std::thread::current();
    let Some(name) = t.name() else { return };
    let (Some(_), Some(f)) = (
        domain(),
        call::<abi::NameOsThreadA>(abi::CORE, abi::CORE_NAME_OS_THREAD_A),
    ) else {
        return;
    };
    // SAFETY: gettid has no arguments and cannot fail.
    let tid = unsafe { syscall(SYS_GETTID) } as u32;
    let name = c_name(Cow::Owned(format!("libgomp nvptx: {name}")));
    // SAFETY: the slot's type; a NUL-terminated name read during the call.
    unsafe { f(tid, name.as_ptr() as *const c_char) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_costs_no_name() {
        // No tool in unit tests: the closures are never called.
        assert!(!on());
        let _r = range(Kind::Copy, Some(8), || unreachable!());
        mark(Kind::Tuner, None, || unreachable!());
        name_stream(std::ptr::null_mut(), || unreachable!());
        assert_eq!(
            AsyncRange::start(Kind::InFlight, Some(c"k")),
            AsyncRange::NONE
        );
        AsyncRange::NONE.end();
        name_this_thread();
    }

    #[test]
    fn categories_are_numbered_from_one_in_order() {
        for (i, k) in Kind::ALL.iter().enumerate() {
            assert_eq!(k.category() as usize, i + 1);
            assert_eq!(k.color() >> 24, 0xff, "{k:?} opaque");
        }
    }

    #[test]
    fn names_lose_what_follows_a_nul() {
        assert_eq!(&*c_name(Cow::Borrowed("a\0b")), c"a");
        assert_eq!(&*c_name(Cow::Owned("h2d ring".into())), c"h2d ring");
    }
}
