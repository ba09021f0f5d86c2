//! OpenACC profiling (acc_prof.h): the events the plugin reports itself, dispatched
//! through `GOMP_PLUGIN_goacc_profiling_dispatch` while libgomp has profiling set up for
//! the calling thread (its `goacc_thread` has a `prof_info`).
//!
//! libgomp owns `prof_info` and `api_info` (its thread state points at them during a
//! construct); the plugin sets the event type in `prof_info` and the device API in
//! `api_info` (the CUDA handles stay NULL, as tools observe with the stock plugin),
//! and passes an event-info block of its own.

use super::host;
use std::ffi::{c_char, c_void, CStr};

/// `acc_ev_alloc`.
pub const EV_ALLOC: i32 = 8;
/// `acc_ev_free`.
pub const EV_FREE: i32 = 9;
/// `acc_ev_enqueue_launch_start`.
pub const EV_ENQUEUE_LAUNCH_START: i32 = 18;
/// `acc_ev_enqueue_launch_end`.
pub const EV_ENQUEUE_LAUNCH_END: i32 = 19;
/// `acc_construct_parallel`.
pub const CONSTRUCT_PARALLEL: i32 = 0;
/// `acc_device_api_cuda`.
pub const DEVICE_API_CUDA: i32 = 1;

/// `acc_prof_info` (x86-64 layout; the plugin touches only `event_type`).
#[repr(C)]
pub struct ProfInfo {
    /// `acc_event_t`.
    pub event_type: i32,
    /// Bytes valid in this struct.
    pub valid_bytes: i32,
    /// `_ACC_PROF_INFO_VERSION`.
    pub version: i32,
    /// `acc_device_t`.
    pub device_type: i32,
    /// Device number.
    pub device_number: i32,
    /// Host thread id.
    pub thread_id: i32,
    /// Async argument.
    pub async_: isize,
    /// Async queue number.
    pub async_queue: isize,
    /// Source file.
    pub src_file: *const c_char,
    /// Function name.
    pub func_name: *const c_char,
    /// Line numbers (line, end line, function line, function end line).
    pub lines: [i32; 4],
}

/// `acc_api_info`.
#[repr(C)]
pub struct ApiInfo {
    /// `acc_device_api`.
    pub device_api: i32,
    /// Bytes valid in this struct.
    pub valid_bytes: i32,
    /// `acc_device_t`.
    pub device_type: i32,
    /// Vendor id.
    pub vendor: i32,
    /// CUdevice pointer, context and stream (or NULL).
    pub device_handle: *const c_void,
    /// Context.
    pub context_handle: *const c_void,
    /// Stream.
    pub async_handle: *const c_void,
}

/// `acc_launch_event_info`.
#[repr(C)]
pub struct LaunchEvent {
    /// `acc_event_t`.
    pub event_type: i32,
    /// Bytes valid in this struct.
    pub valid_bytes: i32,
    /// `acc_construct_t`.
    pub parent_construct: i32,
    /// Implicit event.
    pub implicit: i32,
    /// Tool's data.
    pub tool_info: *mut c_void,
    /// Kernel name.
    pub kernel_name: *const c_char,
    /// Gangs.
    pub num_gangs: usize,
    /// Workers.
    pub num_workers: usize,
    /// Vector length.
    pub vector_length: usize,
}

/// `acc_data_event_info`.
#[repr(C)]
pub struct DataEvent {
    /// `acc_event_t`.
    pub event_type: i32,
    /// Bytes valid in this struct.
    pub valid_bytes: i32,
    /// `acc_construct_t`.
    pub parent_construct: i32,
    /// Implicit event.
    pub implicit: i32,
    /// Tool's data.
    pub tool_info: *mut c_void,
    /// Variable name.
    pub var_name: *const c_char,
    /// Bytes.
    pub bytes: usize,
    /// Host address.
    pub host_ptr: *const c_void,
    /// Device address.
    pub device_ptr: *const c_void,
}

/// Valid bytes of a launch event: through `vector_length`.
pub const LAUNCH_EVENT_VALID_BYTES: i32 = std::mem::size_of::<LaunchEvent>() as i32;
/// Valid bytes of a data event: through `device_ptr`.
pub const DATA_EVENT_VALID_BYTES: i32 = std::mem::size_of::<DataEvent>() as i32;
/// Valid bytes of `acc_api_info`: through `async_handle`.
pub const API_INFO_VALID_BYTES: i32 = std::mem::size_of::<ApiInfo>() as i32;

/// Profiling state of the calling thread while libgomp has it set up. Valid only for
/// the duration of the entry point that obtained it, on that thread.
pub struct Profiler {
    prof: *mut ProfInfo,
    api: *mut ApiInfo,
}

/// Byte offsets in libgomp's `struct goacc_thread` (identical in 13–16).
const THREAD_PROF_INFO: usize = 32;
const THREAD_API_INFO: usize = 40;
const THREAD_PROF_CALLBACKS_ENABLED: usize = 48;

thread_local! {
    static MUTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with profiling muted on this thread: for libgomp's queue callbacks that
/// the plugin runs on whichever thread observes them ready. Their frees are deferred
/// work, not the current construct's, and must not be reported inside it.
pub fn muted<T>(f: impl FnOnce() -> T) -> T {
    let was = MUTED.with(|m| m.replace(true));
    let r = f();
    MUTED.with(|m| m.set(was));
    r
}

/// The calling thread's profiler, or `None` when nothing is profiling (the usual case;
/// costs one call into libgomp). `None` also while the thread's callbacks are
/// switched off (a tool calling back into OpenACC from its callback: dispatching then
/// would re-enter libgomp's profiling lock).
pub fn current() -> Option<Profiler> {
    if MUTED.with(std::cell::Cell::get) {
        return None;
    }
    let h = host::host()?;
    let (thread, _) = (h.goacc_thread?, h.prof_dispatch?);
    // SAFETY: GOMP_PLUGIN_goacc_thread returns the calling thread's goacc_thread or NULL.
    let thr = unsafe { thread() }.cast::<u8>();
    if thr.is_null() {
        return None;
    }
    // SAFETY: `thr` is a live goacc_thread; the fields are at fixed offsets.
    let (prof, api, enabled) = unsafe {
        (
            thr.add(THREAD_PROF_INFO).cast::<*mut ProfInfo>().read(),
            thr.add(THREAD_API_INFO).cast::<*mut ApiInfo>().read(),
            thr.add(THREAD_PROF_CALLBACKS_ENABLED).read() != 0,
        )
    };
    (!prof.is_null() && !api.is_null() && enabled).then_some(Profiler { prof, api })
}

impl Profiler {
    fn dispatch(&self, event_type: i32, info: *mut c_void) {
        let Some(dispatch) = host::host().and_then(|h| h.prof_dispatch) else {
            return;
        };
        // SAFETY: `prof`/`api` are libgomp's live structs for this thread (see
        // `current`); `info` points to a live event block.
        unsafe {
            (*self.prof).event_type = event_type;
            let api = &mut *self.api;
            api.device_api = DEVICE_API_CUDA;
            api.valid_bytes = API_INFO_VALID_BYTES;
            dispatch(self.prof.cast(), info, self.api.cast());
        }
    }

    /// A launch event block for `kernel` with dimensions `dims`, to report with
    /// [`Profiler::launch`] at enqueue start and again at enqueue end (the same block:
    /// a tool may keep its `tool_info` there).
    pub fn launch_event(kernel: &CStr, dims: [usize; 3]) -> LaunchEvent {
        LaunchEvent {
            event_type: EV_ENQUEUE_LAUNCH_START,
            valid_bytes: LAUNCH_EVENT_VALID_BYTES,
            parent_construct: CONSTRUCT_PARALLEL,
            implicit: 1,
            tool_info: std::ptr::null_mut(),
            kernel_name: kernel.as_ptr(),
            num_gangs: dims[0],
            num_workers: dims[1],
            vector_length: dims[2],
        }
    }

    /// Reports `ev` as `event_type` (`acc_ev_enqueue_launch_start`/`_end`).
    pub fn launch(&self, event_type: i32, ev: &mut LaunchEvent) {
        ev.event_type = event_type;
        self.dispatch(event_type, (ev as *mut LaunchEvent).cast());
    }

    /// Reports a device allocation or free (`acc_ev_alloc` / `acc_ev_free`; a free
    /// reports `bytes` as `(size_t)-1`, as tools see with the stock plugin).
    pub fn data(&self, event_type: i32, bytes: usize, device_ptr: *const c_void) {
        let mut ev = DataEvent {
            event_type,
            valid_bytes: DATA_EVENT_VALID_BYTES,
            parent_construct: CONSTRUCT_PARALLEL,
            implicit: 1,
            tool_info: std::ptr::null_mut(),
            var_name: std::ptr::null(),
            bytes,
            host_ptr: std::ptr::null(),
            device_ptr,
        };
        self.dispatch(event_type, (&mut ev as *mut DataEvent).cast());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_acc_prof_h() {
        assert_eq!(std::mem::size_of::<ProfInfo>(), 72);
        assert_eq!(std::mem::offset_of!(ProfInfo, async_), 24);
        assert_eq!(std::mem::offset_of!(ProfInfo, src_file), 40);
        assert_eq!(std::mem::size_of::<ApiInfo>(), 40);
        assert_eq!(std::mem::offset_of!(LaunchEvent, kernel_name), 24);
        assert_eq!(LAUNCH_EVENT_VALID_BYTES, 56);
        assert_eq!(DATA_EVENT_VALID_BYTES, 56);
        assert_eq!(API_INFO_VALID_BYTES, 40);
    }
}
