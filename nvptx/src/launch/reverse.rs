//! Reverse offload (`target device(ancestor: 1)`): the device writes a request into a
//! host-pinned mailbox (`struct rev_offload`, spec §6.4) and spins until the host
//! clears it. Each request is handed to libgomp's `GOMP_PLUGIN_target_rev` with the
//! arity of the libgomp that loaded us, by the first of two kinds of thread to claim it:
//! a thread waiting in `GOMP_OFFLOAD_run` for its kernel polls the mailbox while it
//! waits ([`Reverse::wait_serving`]), as GCC's own plugin does; a per-device service
//! thread polls it while kernels of the device run and no such thread waits (kernels
//! of `GOMP_OFFLOAD_async_run`), spinning, so a round trip costs microseconds, not a
//! `usleep`, and parks otherwise. Copies go through the plugin's synchronous copy entry
//! points, which use their own streams and so run beside the kernel.
//!
//! Why the waiting thread serves first: libgomp's `gomp_target_rev` (GCC 14-16) compares
//! a pointer's device address with the host address of the copy it just made of the
//! array descriptor holding it (the `GOMP_MAP_TO_PSET` case), and skips the pointer's
//! fix-up when the host address is the higher: the host function then reads the
//! descriptor itself as the array's data (`tests/device/revoff_device_heap.f90`). Host
//! copies come from the serving thread's `malloc` arena: the main thread's lies below
//! every device address, a thread arena may lie above them (measured on the H200 host:
//! the service thread took over the arena of a thread that had ended before the
//! device's memory was reserved, and the test failed every time).
//!
//! GCC's device runtime sends one request per device at a time (a device-wide lock
//! around the mailbox), so each device's requests are served in order by its own
//! thread, and requests of different devices at once, at most
//! `GOMP_REVERSE_OFFLOAD_THREADS` (default 8) host functions running together.
//!
//! The service thread holds the device core (`Arc<Core>`) and its [`Service`] state
//! (the mailbox, the kernels in flight, its parking place and stop flag), nothing else:
//! the mailbox lives as long as any thread that reads it, and [`Reverse::shutdown`]
//! frees it once the thread has ended.

use crate::cuda::pools::thread_streams;
use crate::cuda::safe::cu_mem::host_device_pointer;
use crate::cuda::safe::{HostAlloc, Stream};
use crate::cuda::sys::*;
use crate::device::copy::ring::{not_ready, Armed, Ring};
use crate::device::Core;
use crate::image::Image;
use crate::observe::nvtx::{self, Kind};
use gomp_plugin::error::Result;
use gomp_plugin::libgomp::report;
use gomp_plugin::libgomp::target::{self, RevCall};
use gomp_plugin::sync::{Lock, Wait};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Counts the host functions running; bounded by `GOMP_REVERSE_OFFLOAD_THREADS`.
struct Limit {
    /// (running, waiting) host functions.
    state: Mutex<(usize, usize)>,
    freed: Condvar,
    max: usize,
    /// Whether the limit can be reached at all (more devices than `max`).
    needed: bool,
}

/// The process-wide limit, sized from the first device that sets up a mailbox.
static LIMIT: once_cell::sync::OnceCell<Limit> = once_cell::sync::OnceCell::new();

impl Limit {
    fn enter(&self) {
        let mut st = self.state.locked();
        while st.0 >= self.max {
            st.1 += 1;
            st = self.freed.wait_locked(st);
            st.1 -= 1;
        }
        st.0 += 1;
    }

    fn leave(&self) {
        let mut st = self.state.locked();
        st.0 -= 1;
        // Waking costs a system call, so only when someone waits.
        if st.1 > 0 {
            self.freed.notify_one();
        }
    }
}

/// Whether `max` host functions at once can be reached with `devices` devices (unknown:
/// assume so): each device's service thread runs one at a time. Pure.
fn limit_needed(devices: Option<i32>, max: usize) -> bool {
    devices.is_none_or(|n| n.max(0) as usize > max)
}

pub use crate::device::serving::serving_request;
use crate::device::serving::set_serving;
use gomp_plugin::DeviceCore;

/// The device's request block (`struct rev_offload`, 48 bytes, same in 13-16).
#[repr(C)]
pub struct Mailbox {
    /// Device address of the host function's device counterpart; non-zero = request.
    pub fn_: AtomicU64,
    /// Number of mapped items.
    pub mapnum: u64,
    /// Device address of the address array.
    pub addrs: u64,
    /// Device address of the size array.
    pub sizes: u64,
    /// Device address of the kind array (u16 each).
    pub kinds: u64,
    /// The requesting device's OpenMP number.
    pub dev_num: i32,
}

/// Reverse-offload state of one device: the service state and the service thread.
/// Thread-safe; owned by the open device (`crate::open`).
#[derive(Default)]
pub struct Reverse {
    /// What the service thread shares.
    service: Arc<Service>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// The state the threads serving reverse-offload requests work on: the mailbox, who
/// serves its request, and the device's kernels in flight as launches count them in and
/// out ([`Service::kernel_started`], [`Service::kernel_finished`]); the service thread
/// spins while any runs, parks otherwise, and ends once `stop` is set. Shared (`Arc`)
/// by the device's [`Reverse`], its service thread and its completion thread (which
/// counts kernels out); launching threads use it through [`Reverse::wait_serving`].
#[derive(Default)]
pub struct Service {
    /// The mailbox (page-locked, device-mapped), freed by [`Reverse::shutdown`] once the
    /// service thread has ended (else with the last holder of this state).
    mailbox: Mutex<Option<HostAlloc>>,
    /// Kernels of this device in flight (low 32 bits; the service thread spins while
    /// non-zero) and kernels started so far (high 32 bits, wrapping): see
    /// [`ran_alone`].
    active: AtomicU64,
    wake: Condvar,
    parked: Mutex<()>,
    stop: AtomicBool,
    /// Set while the service thread is parked (or about to park).
    sleeping: AtomicBool,
    /// The mailbox's address once made (0 before), for [`Reverse::wait_serving`].
    mailbox_addr: AtomicUsize,
    /// Set while a thread serves the mailbox's request: the thread that sets it serves.
    claimed: AtomicBool,
    /// Threads in [`Reverse::wait_serving`]; while any waits, the service thread leaves
    /// the requests to them.
    waiters: AtomicUsize,
    /// Per-request timings, kept under `GOMP_DEBUG` only; reported when the service
    /// thread ends.
    stats: Mutex<Option<Stats>>,
}

/// Runs a copy for libgomp 13's callbacks on the device named by `token` (the
/// serving [`Core`]'s address/// ordinal); a failure is fatal, as the callbacks cannot report one.
fn copy_for_libgomp13(token: *mut c_void, copy: impl FnOnce(&Core) -> Result<()>) {
    // SAFETY: the token is the serving device (see `handle`), alive while its service
    // thread hands the request to libgomp, which calls back during that call.
    let dev = unsafe { &*(token as *const Core) };
    if let Err(e) = dev.activate().and_then(|()| copy(dev)) {
        report::fatal(&format!("reverse offload: {e}"));
    }
}

unsafe extern "C" fn dev_to_host(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    token: *mut c_void,
) {
    // SAFETY: libgomp passes a host buffer of `n` bytes.
    copy_for_libgomp13(token, |d| unsafe { d.dev2host(dst, src as u64, n) });
}

unsafe extern "C" fn host_to_dev(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    token: *mut c_void,
) {
    // SAFETY: libgomp passes a host buffer of `n` bytes.
    copy_for_libgomp13(token, |d| unsafe { d.host2dev(dst as u64, src, n) });
}

/// The in-flight count's part of [`Service::active`].
const IN_FLIGHT: u64 = u32::MAX as u64;
/// One kernel started, in [`Service::active`]'s counts.
const STARTED: u64 = 1 << 32;

/// Whether a kernel ran with no other kernel of its device in flight at any time,
/// from the counts [`Service::kernel_started`] and [`Service::kernel_finished`]
/// returned for it: none was in flight when it started, and when it finished it was
/// the only one, and none had started since.
pub fn ran_alone(started: u64, finished: u64) -> bool {
    started & IN_FLIGHT == 0 && finished == started.wrapping_add(STARTED + 1)
}

impl Service {
    /// Marks a kernel of the device as running (wakes the service thread unless
    /// `waited`: the launching thread waits for it in [`Reverse::wait_serving`], serving
    /// its requests itself); returns the counts before (for [`ran_alone`]).
    #[inline]
    pub fn kernel_started(&self, waited: bool) -> u64 {
        // Waking costs a system call (microseconds under some sandboxes), so only when
        // the service thread really sleeps; between back-to-back kernels it spins on.
        let before = self.active.fetch_add(STARTED + 1, Ordering::SeqCst);
        if !waited && before & IN_FLIGHT == 0 && self.sleeping.load(Ordering::SeqCst) {
            self.wake_up();
        }
        before
    }

    /// Marks a kernel of the device as finished; returns the counts before (for
    /// [`ran_alone`]).
    #[inline]
    pub fn kernel_finished(&self) -> u64 {
        self.active.fetch_sub(1, Ordering::AcqRel)
    }

    /// Wakes the service thread if it is parked (a system call).
    fn wake_up(&self) {
        let _g = self.parked.locked();
        self.wake.notify_all();
    }

    /// Kernels of the device in flight.
    #[inline]
    fn in_flight(&self) -> u64 {
        self.active.load(Ordering::SeqCst) & IN_FLIGHT
    }
}

impl Reverse {
    /// Marks a kernel of the device as running (see [`Service::kernel_started`]);
    /// returns the counts for [`ran_alone`].
    #[inline]
    pub fn kernel_started(&self, waited: bool) -> u64 {
        self.service.kernel_started(waited)
    }

    /// Marks a kernel of the device as finished; returns the counts for [`ran_alone`].
    #[inline]
    pub fn kernel_finished(&self) -> u64 {
        self.service.kernel_finished()
    }

    /// The service state, for a thread that counts kernels out (the completion thread).
    pub fn service(&self) -> &Arc<Service> {
        &self.service
    }

    /// Whether the device has a mailbox (an image with reverse offload was loaded), so
    /// that a launching thread waits with [`Reverse::wait_serving`].
    #[inline]
    pub fn serves(&self) -> bool {
        self.service.mailbox_addr.load(Ordering::Acquire) != 0
    }

    /// Waits until stream `s` (of device `dev`, whose context is current) has run its
    /// work, serving the device's reverse-offload requests on the calling thread
    /// meanwhile (see the module's note on why); the stream's error, if any. `ring`, the
    /// calling thread's, tells the end by its flag where `flag` (`syncwait`) asks for
    /// it ([`Ring::arm`]), else the stream is queried. Without a mailbox, only waits.
    ///
    /// # Safety
    /// `ring` must be the calling thread's lane's, and `s` that lane's stream.
    pub unsafe fn wait_serving(
        &self,
        dev: &Core,
        s: Stream,
        ring: &Ring,
        flag: bool,
    ) -> Result<()> {
        let sv = &*self.service;
        let addr = sv.mailbox_addr.load(Ordering::Acquire);
        if addr == 0 {
            // SAFETY: forwarded caller guarantee.
            return unsafe { ring.wait(s, flag) };
        }
        // SAFETY: the mailbox stays allocated until `shutdown`, which device close runs
        // once no launch of the device is in progress (this one is).
        let mb = unsafe { &*(addr as *const Mailbox) };
        // SAFETY: forwarded caller guarantee; `poll_serving` waits for `s`.
        let armed = unsafe { ring.arm(s, flag) };
        sv.waiters.fetch_add(1, Ordering::SeqCst);
        let r = poll_serving(dev, sv, mb, s, armed);
        // The last waiter leaving while kernels other than its own run (`nowait` ones)
        // hands their requests back to the service thread.
        if sv.waiters.fetch_sub(1, Ordering::SeqCst) == 1
            && sv.in_flight() > 1
            && sv.sleeping.load(Ordering::SeqCst)
        {
            sv.wake_up();
        }
        r
    }

    /// Stops the service thread and frees the mailbox (device close).
    pub fn shutdown(&self) {
        let sv = &self.service;
        sv.stop.store(true, Ordering::Release);
        sv.wake_up();
        if let Some(t) = self.thread.locked().take() {
            // A host function that exits the program finalizes from this very thread.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
        // The thread using the mailbox has ended: freed as it is dropped.
        drop(sv.mailbox.locked().take());
    }
}

/// Sets up reverse offload for a loaded module: reads `$offload_func_table` (the device
/// addresses libgomp maps back to host functions) and, if there are any, points the
/// device runtime's `__gomp_rev_offload_var` at the device's mailbox (created, with its
/// service thread, on first use). Returns the table, malloc'd for libgomp, or NULL.
pub fn setup(dev: &Arc<Core>, rev: &Reverse, img: &Image, num_funcs: usize) -> Result<*mut u64> {
    let Some((table, size)) = img.global(c"$offload_func_table")? else {
        return Ok(std::ptr::null_mut());
    };
    let n = size / 8;
    let mut entries = vec![0u64; n.max(num_funcs)];
    // SAFETY: `entries` has at least `size` writable bytes.
    unsafe { dev.dev2host(entries.as_mut_ptr().cast(), table, n * 8) }?;
    if entries.iter().all(|&e| e == 0) {
        return Ok(std::ptr::null_mut());
    }
    let Some((var, 8)) = img.global(c"__gomp_rev_offload_var")? else {
        log::debug!("image has reverse-offload functions but no __gomp_rev_offload_var");
        return Ok(std::ptr::null_mut());
    };
    LIMIT.get_or_init(|| Limit {
        state: Mutex::new((0, 0)),
        freed: Condvar::new(),
        max: dev.config().reverse_offload_threads,
        // Each device's thread serves one request at a time: with no more devices
        // than the limit, it is never reached, and requests skip its lock.
        needed: limit_needed(
            crate::cuda::safe::query::device_count().ok(),
            dev.config().reverse_offload_threads,
        ),
    });
    let mailbox = ensure_mailbox(dev, rev)?;
    if let Err(e) = dev
        .parts()
        .buffers
        .kernel_copy()
        .prepare(dev.launch().streams())
    {
        log::debug!("reverse offload: no copy kernel for device-allocated memory ({e})");
    }
    // SAFETY: `mailbox` is mapped page-locked memory, alive until `shutdown`.
    let dptr = unsafe { host_device_pointer(mailbox as *mut c_void) }?;
    // SAFETY: `dptr` is 8 readable bytes.
    unsafe { dev.host2dev(var, (&dptr as *const CUdeviceptr).cast(), 8) }?;
    let out = report::malloc(entries.len() * 8).cast::<u64>();
    // SAFETY: `out` has room for every entry.
    unsafe { std::ptr::copy_nonoverlapping(entries.as_ptr(), out, entries.len()) };
    log::debug!(
        "reverse offload: {} function(s), mailbox {mailbox:#x}",
        entries.iter().filter(|&&e| e != 0).count()
    );
    Ok(out)
}

fn ensure_mailbox(dev: &Arc<Core>, r: &Reverse) -> Result<usize> {
    let mut mb = r.service.mailbox.locked();
    if let Some(p) = mb.as_ref() {
        return Ok(p.as_ptr() as usize);
    }
    // Context current (caller).
    let h = HostAlloc::mapped(std::mem::size_of::<Mailbox>())?;
    let p = h.as_ptr();
    // SAFETY: freshly allocated, large enough, exclusively ours.
    unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, std::mem::size_of::<Mailbox>()) };
    *mb = Some(h);
    if log::log_enabled!(log::Level::Debug) {
        *r.service.stats.locked() = Some(Stats::new());
    }
    r.service.mailbox_addr.store(p as usize, Ordering::Release);
    let d = Arc::clone(dev);
    let sv = Arc::clone(&r.service);
    let addr = p as usize;
    let handle = nvtx::spawn(format!("nvptx{}-reverse", dev.ord()), move || {
        serve(&d, &sv, addr)
    })
    .map_err(|e| {
        gomp_plugin::error::Error::invalid(format!("cannot start reverse-offload thread: {e}"))
    })?;
    *r.thread.locked() = Some(handle);
    Ok(p as usize)
}

/// Spins of the service thread after the device's last kernel ended before it parks
/// (about 100 us; parking and waking cost system calls).
const GRACE_SPINS: u32 = 2_000;

fn serve(dev: &Core, r: &Service, mailbox: usize) {
    if let Err(e) = dev.activate() {
        report::fatal(&format!("reverse-offload thread: {e}"));
    }
    // SAFETY: the mailbox stays allocated until `shutdown` has joined this thread (`r`,
    // which this thread holds, owns it until then).
    let mb = unsafe { &*(mailbox as *const Mailbox) };
    let (mut idle, mut quiet) = (0u32, 0u32);
    while !r.stop.load(Ordering::Acquire) {
        if r.waiters.load(Ordering::SeqCst) == 0 && try_serve(dev, r, mb, false) {
            idle = 0;
            continue;
        }
        // While threads wait in `run`, they serve the requests: parked, as when no
        // kernel runs.
        if r.in_flight() > 0 && r.waiters.load(Ordering::SeqCst) == 0 {
            quiet = 0;
            idle = idle.saturating_add(1);
            if idle > 10_000 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
            continue;
        }
        // No kernel runs, or waiting threads serve: spin a little longer (another
        // launch usually follows at once), then park.
        quiet += 1;
        if quiet < GRACE_SPINS {
            std::hint::spin_loop();
            continue;
        }
        quiet = 0;
        let g = r.parked.locked();
        r.sleeping.store(true, Ordering::SeqCst);
        if (r.in_flight() == 0 || r.waiters.load(Ordering::SeqCst) > 0)
            && !r.stop.load(Ordering::Acquire)
        {
            // The timeout also covers kernels that request before being counted.
            let _ = r.wake.wait_timeout_locked(g, Duration::from_millis(2));
        }
        r.sleeping.store(false, Ordering::SeqCst);
    }
    if let Some(st) = r.stats.locked().take() {
        st.report(dev.ord());
    }
}

/// Polls of the mailbox between two queries of the waited-for stream in
/// [`poll_serving`] (a query is a driver call, a poll a load): when the stream's end is
/// seen by the ring's flag; when it is not, during the wait's first [`SHORT_KERNEL`]
/// (an empty region's kernel ends within it: its end is seen within a poll or two of
/// the query's cost), and after that (a kernel that runs longer, making requests: the
/// mailbox is read between queries).
const POLLS_PER_QUERY: (u32, u32, u32) = (4096, 2, 64);
/// How long [`poll_serving`] asks the stream often when it has no flag.
const SHORT_KERNEL: Duration = Duration::from_micros(30);
/// Polls after which [`poll_serving`] yields the processor between polls (a long
/// kernel then costs the host less).
const SPIN_POLLS: u32 = 100_000;

/// [`Reverse::wait_serving`]'s loop: serves requests until `s` has run its work (seen
/// by `armed`'s flag, or by asking the stream).
fn poll_serving(
    dev: &Core,
    sv: &Service,
    mb: &Mailbox,
    s: Stream,
    armed: Option<Armed>,
) -> Result<()> {
    let (mut every, mut early) = if armed.is_some() {
        (POLLS_PER_QUERY.0, None)
    } else {
        (POLLS_PER_QUERY.1, Some(std::time::Instant::now()))
    };
    let mut polls = 0u32;
    loop {
        if try_serve(dev, sv, mb, true) {
            polls = 0;
            continue;
        }
        polls = polls.saturating_add(1);
        let reached = armed.as_ref().is_some_and(Armed::reached);
        // Asked once more when the flag is seen, so that an error is never taken for
        // the end.
        if (reached || polls % every == 0) && !not_ready(s)? {
            return Ok(());
        }
        // Without the flag: the stream asked often while the kernel may be a short
        // one, then seldom, so that the mailbox is read almost all the time.
        if polls % every == 0 && early.is_some_and(|t| t.elapsed() > SHORT_KERNEL) {
            (every, early) = (POLLS_PER_QUERY.2, None);
        }
        if polls > SPIN_POLLS {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Serves the mailbox's request if there is one and no other thread serves it:
/// hands it to libgomp, then answers it. Whether it served one. `waiting`: the calling
/// thread waits for a kernel on its own stream, so it serves aside
/// ([`thread_streams::aside`]): the copies, allocations and launches of the request go
/// on other streams than the one the requesting kernel may run on.
fn try_serve(dev: &Core, sv: &Service, mb: &Mailbox, waiting: bool) -> bool {
    if mb.fn_.load(Ordering::Acquire) == 0
        || sv
            .claimed
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
    {
        return false;
    }
    // The request seen before the claim may have been answered since: read it again.
    let f = mb.fn_.load(Ordering::Acquire);
    if f == 0 {
        sv.claimed.store(false, Ordering::Release);
        return false;
    }
    let seen = ticks();
    let _range = nvtx::range(Kind::Reverse, Some(mb.mapnum), || "reverse offload".into());
    let t0 = dev.observe().map(|_| std::time::Instant::now());
    if waiting {
        thread_streams::aside(|| handle(dev, mb, f));
    } else {
        handle(dev, mb, f);
    }
    mb.fn_.store(0, Ordering::Release);
    sv.claimed.store(false, Ordering::Release);
    if let (Some(o), Some(t0)) = (dev.observe(), t0) {
        o.reverse(t0.elapsed().as_nanos() as u64);
    }
    // The lock only where the statistics are kept (`GOMP_DEBUG`).
    if log::log_enabled!(log::Level::Debug) {
        if let Some(st) = sv.stats.locked().as_mut() {
            st.record(seen, ticks());
        }
    }
    true
}

/// A cheap clock for the `GOMP_DEBUG` statistics: the time-stamp counter where there
/// is one (no system call; they are slow under some sandboxes).
fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC has no preconditions on x86-64.
    return unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    return std::time::UNIX_EPOCH
        .elapsed()
        .map_or(0, |d| d.as_nanos() as u64);
}

/// Per-request timings of one device's mailbox, kept under `GOMP_DEBUG` only.
struct Stats {
    start: (u64, std::time::Instant),
    /// Ticks from seeing a request to answering it.
    host: Vec<u64>,
    /// Ticks from answering a request to seeing the next one (the device's part of a
    /// round trip, when requests follow each other).
    gap: Vec<u64>,
    last_answer: Option<u64>,
}

impl Stats {
    fn new() -> Stats {
        Stats {
            start: (ticks(), std::time::Instant::now()),
            host: Vec::new(),
            gap: Vec::new(),
            last_answer: None,
        }
    }

    fn record(&mut self, seen: u64, answered: u64) {
        self.host.push(answered.wrapping_sub(seen));
        if let Some(prev) = self.last_answer {
            self.gap.push(seen.wrapping_sub(prev));
        }
        self.last_answer = Some(answered);
    }

    fn report(mut self, ord: i32) {
        let ns = self.start.1.elapsed().as_nanos() as f64;
        let per_ns = ticks().wrapping_sub(self.start.0) as f64 / ns.max(1.0);
        if self.host.is_empty() || per_ns <= 0.0 {
            return;
        }
        let median = |v: &mut Vec<u64>| {
            v.sort_unstable();
            v.get(v.len() / 2).map_or(0.0, |&t| t as f64 / per_ns / 1e3)
        };
        log::debug!(
            "device {ord}: reverse offload: {} request(s); median {:.2} us on the host \
             (request seen to answered), {:.2} us from an answer to the next request",
            self.host.len(),
            median(&mut self.host),
            median(&mut self.gap)
        );
    }
}

fn handle(dev: &Core, mb: &Mailbox, f: u64) {
    let call = RevCall {
        fn_addr: f,
        mapnum: mb.mapnum,
        addrs: mb.addrs,
        sizes: mb.sizes,
        kinds: mb.kinds,
        dev_num: mb.dev_num,
    };
    log::trace!("reverse offload: fn {f:#x}, {} mapping(s)", call.mapnum);
    let limit = LIMIT.get().filter(|l| l.needed);
    if let Some(l) = limit {
        l.enter();
    }
    set_serving(true);
    if target::rev_takes_copy_callbacks() {
        static FIRST: std::sync::Once = std::sync::Once::new();
        FIRST.call_once(|| {
            log::debug!("reverse offload: fn {f:#x} via 9-argument GOMP_PLUGIN_target_rev (libgomp 13, copy callbacks); later requests likewise");
        });
    }
    // SAFETY: the request as the device wrote it; the copy callbacks take this
    // device's address as their token, alive while libgomp calls back.
    unsafe {
        target::target_rev(
            &call,
            dev_to_host,
            host_to_dev,
            (dev as *const Core).cast_mut().cast(),
        )
    };
    set_serving(false);
    if let Some(l) = limit {
        l.leave();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_matters_with_more_devices_than_it() {
        assert!(!limit_needed(Some(1), 8));
        assert!(!limit_needed(Some(8), 8));
        assert!(limit_needed(Some(9), 8));
        assert!(limit_needed(Some(2), 1));
        assert!(limit_needed(None, 8));
        assert!(!limit_needed(Some(-1), 1));
    }

    #[test]
    fn a_kernel_alone_is_told_from_one_with_company() {
        let s = Service::default();
        // Alone.
        let a = s.kernel_started(false);
        assert!(ran_alone(a, s.kernel_finished()));
        // Another in flight when it started.
        let other = s.kernel_started(false);
        let a = s.kernel_started(false);
        s.kernel_finished();
        assert!(!ran_alone(a, s.kernel_finished()));
        let _ = other;
        // Another started and finished while it ran.
        let a = s.kernel_started(false);
        s.kernel_started(false);
        s.kernel_finished();
        assert!(!ran_alone(a, s.kernel_finished()));
        // Another still in flight when it finished.
        let a = s.kernel_started(false);
        s.kernel_started(false);
        assert!(!ran_alone(a, s.kernel_finished()));
        s.kernel_finished();
        assert_eq!(s.in_flight(), 0);
        // The start count wraps.
        s.active.store(u64::MAX - IN_FLIGHT, Ordering::SeqCst);
        let a = s.kernel_started(false);
        assert!(ran_alone(a, s.kernel_finished()));
    }
}
