//! What the plugin tells a user who asks: `GOMP_NVPTX_INFO` (a line per device opened,
//! a line when the program falls back to the host: [`info`]), `GOMP_NVPTX_PROFILE` (a
//! table on stderr at exit) and `GOMP_NVPTX_TRACE=FILE` (a Chrome trace-event file
//! written at exit). The aggregation and its table ([`profile`]) and the trace
//! recorder and JSON writer ([`trace`]) call no driver; this module measures: timing events around
//! launches, read at the completion points the plugin already has (a synchronous
//! launch waits for its stream, the completion thread for `nowait` launches) or, for
//! OpenACC queue launches, when later found complete, never by waiting.
//!
//! Off means off: the switches ([`Switches`], `crate::config::switches`) are read once,
//! with every other setting (`crate::config`), and handed in; a device opened with both recording
//! switches off gets no [`DeviceObserve`], and every hook is one check of the core's
//! `observe` field (`None`).
//!
//! Process exit: the first device opened with a recording switch on registers an
//! `atexit` hook ([`at_exit`]), which runs before libgomp's own (registered earlier) or
//! after it: either way it reads what the open devices have left (non-blocking), prints
//! the table once and writes the trace once. `GOMP_PLUGIN_fatal` ends the program with
//! `exit()`, so the hook also runs after an error.
//!
//! Depends on the CUDA layer, [`profile`], [`trace`] and the framework only (the device core holds a
//! [`DeviceObserve`]; nothing here names the core).

pub mod info;
pub mod nvtx;
pub mod profile;
pub mod trace;

pub use crate::config::switches::Switches;

use crate::cuda::safe::{OwnedEvent, Stream};
use crate::cuda::sys::CUDA_ERROR_NOT_READY;
use gomp_plugin::libgomp::report;
use gomp_plugin::sync::Lock;
use once_cell::sync::OnceCell;
use profile::{CopyDir, CopyMem, JitStats, Profile};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use trace::{Span, Trace};

/// The process-wide recorders (only created when a recording switch is on).
struct Recorders {
    profile: Option<Profile>,
    trace: Option<(Trace, PathBuf)>,
    /// Devices with a recorder, for the exit hook.
    devices: Mutex<Vec<Weak<DeviceObserve>>>,
}

/// Made by the first device opened with a recording switch on, from the switches of
/// the process.
static RECORDERS: OnceCell<Recorders> = OnceCell::new();

/// Host spans go to process track 0, a device's to track `ord + 1`.
const HOST_PID: u32 = 0;

/// A launch or copy between two timing events on one stream.
pub struct Timer {
    start: OwnedEvent,
    end: OwnedEvent,
    stream: usize,
    /// Kernel name.
    name: String,
    /// Launch shape, as the table and the trace show it.
    shape: String,
}

/// Recording state of one device opened with a recording switch on. Shared (`Arc`) by
/// the device core and the exit hook's list (weakly). Its events belong to the
/// device's context and are destroyed by [`DeviceObserve::close`] (device close), or
/// left to process exit.
pub struct DeviceObserve {
    ord: i32,
    /// The process's recorders.
    rec: &'static Recorders,
    /// A timing event recorded and completed at open, and the trace time (µs) at
    /// which it completed: device times are placed relative to it.
    epoch: Mutex<Option<(OwnedEvent, f64)>>,
    /// Idle timing events.
    idle: Mutex<Vec<OwnedEvent>>,
    /// Trace track per stream (by handle), numbered from 1 in order of first use.
    tracks: Mutex<HashMap<usize, u32>>,
    /// Launches whose completion was not yet seen (OpenACC queues).
    deferred: Mutex<Vec<Timer>>,
    closed: AtomicBool,
}

extern "C" {
    fn atexit(f: extern "C" fn()) -> std::ffi::c_int;
}

impl DeviceObserve {
    /// A recorder for device `ord` named `name`, or `None` when `switches` record
    /// nothing. The caller records the epoch ([`DeviceObserve::record_epoch`]) once a
    /// stream is at hand.
    pub fn open(ord: i32, name: &str, switches: &Switches) -> Option<Arc<DeviceObserve>> {
        if !switches.recording() {
            return None;
        }
        let rec = RECORDERS.get_or_init(|| Recorders {
            profile: switches.profile.then(Profile::default),
            trace: switches.trace.clone().map(|p| (Trace::default(), p)),
            devices: Mutex::default(),
        });
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| {
            // SAFETY: registering a plain function; the library is never unloaded.
            if unsafe { atexit(at_exit) } != 0 {
                report::error("nvptx: cannot register the profile's exit hook");
            }
        });
        if let Some((t, _)) = &rec.trace {
            t.name_process(HOST_PID, &format!("host (pid {})", std::process::id()));
            t.name_process(ord as u32 + 1, &format!("GPU {ord}: {name}"));
        }
        let d = Arc::new(DeviceObserve {
            ord,
            rec,
            epoch: Mutex::new(None),
            idle: Mutex::default(),
            tracks: Mutex::default(),
            deferred: Mutex::default(),
            closed: AtomicBool::new(false),
        });
        rec.devices.locked().push(Arc::downgrade(&d));
        Some(d)
    }

    /// Records the epoch on `s`; the caller waits for `s` and then calls
    /// [`DeviceObserve::epoch_done`].
    pub fn record_epoch(&self, s: Stream) -> gomp_plugin::Result<()> {
        let e = OwnedEvent::create_timed()?;
        e.handle().record(s)?;
        *self.epoch.locked() = Some((e, 0.0));
        Ok(())
    }

    /// The epoch's stream has been waited for: now is its trace time.
    pub fn epoch_done(&self) {
        if let Some((_, t)) = self.epoch.locked().as_mut() {
            *t = trace::now_us();
        }
    }

    fn event(&self) -> Option<OwnedEvent> {
        match self.idle.locked().pop() {
            Some(e) => Some(e),
            None => OwnedEvent::create_timed()
                .map_err(|e| log::debug!("profile: no timing event: {e}"))
                .ok(),
        }
    }

    /// Counts a launch of kernel `name` with shape `shape` and records a timing event
    /// before it on `s`; `None` if the events cannot be had (the launch is counted,
    /// not timed).
    pub fn start(&self, s: Stream, name: &str, shape: String) -> Option<Timer> {
        let name = display_name(name);
        if let Some(p) = &self.rec.profile {
            p.kernel(&name, &shape, None);
        }
        let (start, end) = (self.event()?, self.event()?);
        start.handle().record(s).ok()?;
        Some(Timer {
            start,
            end,
            stream: s.raw() as usize,
            name,
            shape,
        })
    }

    /// The launch shape chosen for kernel `name` (PTX name) and what its trials
    /// measured, for the table.
    pub fn tuning(&self, name: &str, text: &str) {
        if let Some(p) = &self.rec.profile {
            p.kernel_tuning(&display_name(name), text);
        }
    }

    /// A fact of the device for the profile's summary (e.g. the ways of waiting it
    /// measured).
    pub fn note(&self, text: &str) {
        if let Some(p) = &self.rec.profile {
            p.note(format!("device {}: {text}", self.ord));
        }
    }

    /// Records the timing event after the launch on its stream.
    pub fn stop(&self, t: &Timer, s: Stream) {
        let _ = t.end.handle().record(s);
    }

    fn track(&self, stream: usize) -> u32 {
        let mut m = self.tracks.locked();
        let n = m.len() as u32 + 1;
        let tid = *m.entry(stream).or_insert(n);
        if tid == n {
            if let Some((t, _)) = &self.rec.trace {
                let what = if stream == 0 {
                    "legacy default stream".to_string()
                } else {
                    format!("stream {n}")
                };
                t.name_thread(self.ord as u32 + 1, tid, &what);
            }
        }
        tid
    }

    /// Reads a timer whose launch has completed (a completion point: the stream or a
    /// later event was waited for). A timer not yet complete is kept for later.
    pub fn finish(&self, t: Timer) {
        match t.end.handle().query() {
            Ok(()) => self.read(t),
            Err(e) if e.has_code(CUDA_ERROR_NOT_READY) => self.deferred.locked().push(t),
            Err(_) => {} // a failed launch: counted, not timed
        }
    }

    fn read(&self, t: Timer) {
        let (s, e) = (t.start.handle(), t.end.handle());
        if let Ok(ms) = s.elapsed_ms(e) {
            let ns = (f64::from(ms) * 1e6) as u64;
            if let Some(p) = &self.rec.profile {
                p.kernel_time(&t.name, ns);
            }
            if let Some((tr, _)) = &self.rec.trace {
                let at = self.epoch.locked().as_ref().and_then(|(ep, t0)| {
                    ep.handle()
                        .elapsed_ms(s)
                        .ok()
                        .map(|off| t0 + f64::from(off) * 1e3)
                });
                if let Some(ts) = at {
                    tr.span(Span {
                        name: t.name.clone(),
                        cat: "kernel",
                        ts,
                        dur: ns as f64 / 1e3,
                        pid: self.ord as u32 + 1,
                        tid: self.track(t.stream),
                        args: vec![("geometry", t.shape.clone())],
                    });
                }
            }
        }
        let mut idle = self.idle.locked();
        idle.push(t.start);
        idle.push(t.end);
    }

    /// Reads the deferred timers that have completed since (never waits).
    pub fn harvest(&self) {
        let pending = std::mem::take(&mut *self.deferred.locked());
        for t in pending {
            self.finish(t);
        }
    }

    /// A host span of entry point `name` that started at `t0` (trace µs).
    pub fn entry(&self, name: &'static str, t0: f64) {
        self.host_span(name, "entry", t0, vec![("device", self.ord.to_string())]);
    }

    /// A synchronous copy of `bytes` that started at `t0` (trace µs).
    pub fn copy(&self, dir: CopyDir, mem: CopyMem, bytes: usize, t0: f64) {
        let t1 = trace::now_us();
        if let Some(p) = &self.rec.profile {
            p.copy(dir, mem, bytes as u64, ((t1 - t0) * 1e3) as u64);
        }
        if self.rec.trace.is_some() {
            self.host_span(
                &format!("{} {}", dir.label(), mem.label()),
                "copy",
                t0,
                vec![
                    ("bytes", bytes.to_string()),
                    ("device", self.ord.to_string()),
                ],
            );
        }
    }

    /// An allocation of `bytes` handed to the program.
    pub fn alloc(&self, bytes: usize) {
        if let Some(p) = &self.rec.profile {
            p.alloc(bytes as u64);
        }
    }

    /// A driver or pool allocation made to serve the program's.
    pub fn driver_alloc(&self) {
        if let Some(p) = &self.rec.profile {
            p.driver_alloc();
        }
    }

    /// A block of `bytes` freed by the program.
    pub fn free(&self, bytes: usize) {
        if let Some(p) = &self.rec.profile {
            p.free(bytes as u64);
        }
    }

    /// An image of `objects` PTX objects and `kernels` kernels loaded: its module made
    /// (`how`: linked, or loaded from the linked-image cache) from `t0` to `t1`, the
    /// whole load ending now (trace µs).
    pub fn jit(&self, image: usize, objects: usize, kernels: usize, t0: f64, t1: f64, how: &str) {
        let t2 = trace::now_us();
        if let Some(p) = &self.rec.profile {
            p.jit(JitStats {
                image: format!("{image:#x} (device {})", self.ord),
                objects,
                kernels,
                ns: ((t1 - t0) * 1e3) as u64,
                load_ns: ((t2 - t0) * 1e3) as u64,
                how: how.to_string(),
            });
        }
        self.host_span_to(
            "JIT link",
            "jit",
            t0,
            t1,
            vec![("objects", objects.to_string()), ("how", how.to_string())],
        );
    }

    /// A reverse-offload request served in `ns` on the host.
    pub fn reverse(&self, ns: u64) {
        if let Some(p) = &self.rec.profile {
            p.reverse(ns);
        }
    }

    /// An OpenACC queue created.
    pub fn acc_queue(&self) {
        if let Some(p) = &self.rec.profile {
            p.acc_queue();
        }
    }

    fn host_span(&self, name: &str, cat: &'static str, t0: f64, args: Vec<(&'static str, String)>) {
        self.host_span_to(name, cat, t0, trace::now_us(), args)
    }

    /// A host span from `t0` to `t1` (trace µs) on the calling thread's track.
    fn host_span_to(
        &self,
        name: &str,
        cat: &'static str,
        t0: f64,
        t1: f64,
        args: Vec<(&'static str, String)>,
    ) {
        if let Some((t, _)) = &self.rec.trace {
            let tid = trace::host_tid();
            t.name_thread(HOST_PID, tid, &format!("host thread {tid}"));
            t.span(Span {
                name: name.to_string(),
                cat,
                ts: t0,
                dur: t1 - t0,
                pid: HOST_PID,
                tid,
                args,
            });
        }
    }

    /// Device close (context current, everything waited for): reads what completed,
    /// then destroys the timing events. Later records of this device are dropped.
    pub fn close(&self) {
        self.harvest();
        self.closed.store(true, Ordering::Release);
        drop(std::mem::take(&mut *self.deferred.locked()));
        drop(std::mem::take(&mut *self.idle.locked()));
        drop(self.epoch.locked().take());
    }
}

/// The trace time now (µs), for a hook's start.
#[inline]
pub fn now() -> f64 {
    trace::now_us()
}

/// The exit hook: reads what the open devices have completed (no waiting), prints the
/// profile and writes the trace, once.
pub extern "C" fn at_exit() {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::AcqRel) {
        return;
    }
    let Some(rec) = RECORDERS.get() else {
        return;
    };
    for d in rec.devices.locked().iter().filter_map(Weak::upgrade) {
        if !d.closed.load(Ordering::Acquire) {
            d.harvest();
        }
    }
    if let Some(p) = &rec.profile {
        let table = p.render("libgomp: nvptx profile: ");
        let head = format!(
            "libgomp: nvptx profile: gomp-plugin-rs {}; kernel times are device times (CUDA events), \
             copy times host times of the synchronous call\n",
            env!("CARGO_PKG_VERSION")
        );
        use std::io::Write;
        let _ = std::io::stderr()
            .lock()
            .write_all((head + &table).as_bytes());
    }
    if let Some((t, path)) = &rec.trace {
        if let Err(e) = t.write(path) {
            report::error(&format!(
                "nvptx: cannot write GOMP_NVPTX_TRACE file {}: {e}",
                path.display()
            ));
        }
    }
}

/// The kernel name a user knows: GCC's nvptx back end writes the dots of names like
/// `main._omp_fn.0` as `$` in PTX (where a dot may not appear in a name), so the
/// profile and the trace show them with dots again.
pub fn display_name(ptx_name: &str) -> String {
    ptx_name.replace('$', ".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_get_their_dots_back() {
        assert_eq!(display_name("kernel_a$_omp_fn$0"), "kernel_a._omp_fn.0");
        assert_eq!(display_name("main"), "main");
    }
}
