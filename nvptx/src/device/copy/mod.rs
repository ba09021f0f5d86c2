//! The copy engine of one device: every copy between the host and the device, and
//! between device buffers, goes through here, whoever asks for it.
//!
//! Two kinds of callers ([`Via`]):
//! - *Synchronous* copies (`GOMP_OFFLOAD_host2dev` and kin, OpenMP and OpenACC alike) run
//!   on the calling thread's stream, or on CUDA's legacy default stream once OpenACC is
//!   in use (see `LaunchResources::copy_stream`). Device-to-host and device-to-device
//!   copies are complete when the call returns; a small host-to-device copy may return once its
//!   source bytes are safe to reuse, before its DMA has ended (a *deferred* copy), with
//!   everything that can observe device memory ordered after it (`device::copy_order`).
//! - *Queued* copies of an OpenACC async queue run on the queue's stream, in stream
//!   order with the queue's launches, callbacks and waits; the program waits for the
//!   queue before it relies on them (OpenACC's rule).
//!
//! Both take the same paths for the same memory. A copy between the host and the
//! device is offered to the copy paths of [`PATHS`] (the route list) in their order;
//! the first that takes it makes it. Each path is one file of this folder holding all
//! of it: its route ([`Route`]: which copies it takes, direction, caller and size in
//! [`Route::takes`], read once per device into [`Copies`]' routes so that a copy is
//! offered only to the paths that may take it, the rest in its `try_copy`; the
//! `GOMP_NVPTX_TUNE` key that sizes it, [`Knob`]: its own or a shared one; the profile
//! row it counts its copies under, an existing row or its own, `CopyMem::Path`), its
//! copies ([`CopyPath`]), and the engine and buffers only it uses:
//!
//! | file | route | engine and buffers |
//! |---|---|---|
//! | `read_ahead.rs` | [`FromReadAhead`]: a synchronous copy to the host served from what the thread's run read ahead | `ReadAhead`, each thread's |
//! | `staged.rs` | [`Staged`]: large pageable copies | `Staging`, the device's staging engine (lane threads, page-locked buffers) |
//! | `queued.rs` | [`Queued`]: a queue's copy to page-locked memory, queued | none |
//! | `ring.rs` | [`ByRing`]: copies of a few bytes | `Ring`, each thread's page-locked ring (also its synchronous launches' wait) |
//! | `deferred.rs` | [`Deferred`]: a small synchronous copy to the device that returns before its DMA ends | the bounce buffers (`bounce.rs`'s) |
//! | `bounce.rs` | [`Bounced`]: mid-sized pageable copies | `Bounce`, the device's page-locked bounce buffers |
//! | `direct.rs` | [`Direct`]: the driver's copy, every copy no earlier path took | none |
//! | `kernel_copy.rs` | [`ByKernel`]: a refused copy of device-heap memory, again, while serving reverse offload | `KernelCopy`, the device's copy kernel |
//!
//! A path's engine lives in the device's copy buffers ([`Buffers`], one of the
//! device's parts) or in the calling thread's lane ([`ThreadBuffers`]), both
//! `buffers.rs`. A path is given the device's parts (`device::parts::Parts`), never
//! the core. A synchronous copy whose driver call failed may be made again by a later
//! path ([`CopyPath::retry`]: by kernel, for device-heap memory while serving a
//! reverse-offload request). The profile and the trace count every copy by how it
//! reached the host (`staged`, `pinned`, `pageable`) or how it ended (`deferred`;
//! `queued` for a queue's copy that returned before it ran). A path that takes a copy
//! says so before making it ([`HostCopy::taken`]): with an NVTX tool attached, the
//! copy's range (`h2d ring`, with its bytes) runs from there to the copy's return.
//!
//! Adding a path: its file here (its zero-sized type with `impl Route` and
//! `impl CopyPath`, its own profile row if it has one, and its engine, if it has one),
//! its `mod` line and its line in [`PATHS`] in this file, and its tests; when its
//! engine is kept per device or per thread, its field in `Buffers` or `ThreadBuffers`
//! (`buffers.rs`, with an `AsRef` for it). Its own `GOMP_NVPTX_TUNE` key, if it has one,
//! is a `PathKnob` of the settings (`config::tune`'s `PATH_KNOBS`, which the key
//! parser and the README's table read at the first `get_num_devices`, before any
//! device exists; the settings are below the device and cannot name this folder), named
//! by its file; a unit test here holds the two lists to each other. What a path is
//! ([`Route`], [`CopyPath`], [`Takes`], [`Knob`], [`Taken`]) is `path.rs`; the copy as
//! the paths see it ([`HostCopy`], [`Via`]) is `host_copy.rs`. No file here names this
//! body: the paths import their siblings, this body imports them.

pub mod bounce;
pub mod buffers;
pub mod deferred;
pub mod direct;
pub mod host_copy;
pub mod kernel_copy;
pub mod path;
pub mod queued;
pub mod read_ahead;
pub mod ring;
pub mod staged;

pub use bounce::Bounced;
pub use buffers::{Buffers, ThreadBuffers};
pub use deferred::Deferred;
pub use direct::Direct;
pub use host_copy::{HostCopy, Via};
pub use kernel_copy::ByKernel;
pub use path::{CopyPath, Ended, Failed, Knob, Route, Taken, Takes};
pub use queued::Queued;
pub use read_ahead::FromReadAhead;
pub use ring::ByRing;
pub use staged::Staged;

use crate::config::tune::PathKnob;
use crate::config::Config;
use crate::cuda::sys::CUdeviceptr;
use crate::device::parts;
use crate::observe::nvtx::{self, Kind};
use crate::observe::profile::{CopyDir, CopyMem};
use gomp_plugin::error::{Error, Result};
#[cfg(test)]
use host_copy::kind_index;
use host_copy::KINDS;
use std::ffi::c_void;

/// The copy paths between the host and the device, in the order a copy is offered to
/// them: one line per path. A static list of zero-sized paths: asking one is an
/// indirect call, nothing is allocated per copy; a copy is offered only to the paths
/// whose [`Route::takes`] holds it ([`Copies`]' routes).
static PATHS: &[&dyn CopyPath<Buffers, ThreadBuffers>] = &[
    &FromReadAhead,
    &Staged,
    &Queued,
    &ByRing,
    &Deferred,
    &Bounced,
    &Direct,
    &ByKernel,
];

/// The device's parts as the core holds them (`device/whole.rs`), which copies are
/// given: its copy buffers and each thread's are this folder's.
type Parts = parts::Parts<Buffers, ThreadBuffers>;

/// For each kind of copy ([`kind_index`]), the paths that may take it, in [`PATHS`]'
/// order: each one's index in `PATHS` and the byte counts it takes. Made once per
/// device from the paths' [`Route::takes`] under its settings.
type Routes = [Vec<(usize, (usize, usize))>; KINDS];

/// The routes of a device opened with `config`.
fn routes(config: &Config) -> Routes {
    let takes: Vec<Takes> = PATHS.iter().map(|p| p.takes(config)).collect();
    std::array::from_fn(|k| {
        (takes.iter().enumerate())
            .filter(|(_, t)| t.kinds & (1 << k) != 0)
            .map(|(i, t)| (i, t.bytes))
            .collect()
    })
}

/// The copy paths' own knobs, in the paths' order: `config::tune`'s `PATH_KNOBS`, which
/// `GOMP_NVPTX_TUNE`'s parser and the README's table of its keys add to its keys (a unit
/// test checks that the two lists agree).
pub fn knobs() -> Vec<&'static PathKnob> {
    PATHS
        .iter()
        .filter_map(|p| match p.knob() {
            Some(Knob::Own(k)) => Some(k),
            _ => None,
        })
        .collect()
}

/// The copy engine of a device core: the paths each kind of copy is offered to. Owned
/// by the core; `Sync` (read only). Its copies are given the device's parts
/// ([`Parts`]: the copy paths' buffers among them).
pub struct Copies {
    /// The paths each kind of copy is offered to (the paths' `takes` under the device's
    /// settings).
    routes: Routes,
}

impl Copies {
    /// The copy engine of a device opened with `config` (nothing allocated yet).
    pub(super) fn new(config: &Config) -> Copies {
        Copies {
            routes: routes(config),
        }
    }

    /// The copy paths' buffers of a device opened with `config` (sized by the paths'
    /// knobs; nothing allocated yet), for the device's [`Parts`].
    pub(super) fn buffers(config: &Config) -> Buffers {
        Buffers::new(config, config.tune.size(&bounce::KNOB))
    }

    /// Copies `n` bytes from host `src` to device `dst` (see [`Via`]), with the device's parts `d`.
    ///
    /// # Safety
    /// `src` must be readable for `n` bytes; for [`Via::Queue`], until the queue's work
    /// queued so far has run (libgomp keeps or stages it).
    pub unsafe fn host2dev(
        &self,
        d: &Parts,
        dst: CUdeviceptr,
        src: *const c_void,
        n: usize,
        via: Via,
    ) -> Result<()> {
        // SAFETY: `src` is only read (the caller's guarantee); `dst` is checked first.
        unsafe { self.host_copy(d, CopyDir::H2D, dst, src.cast_mut(), n, via) }
    }

    /// Copies `n` bytes from device `src` to host `dst` (see [`Via`]), with the device's parts `d`.
    ///
    /// # Safety
    /// `dst` must be writable for `n` bytes; for [`Via::Queue`], until the queue's work
    /// queued so far has run.
    pub unsafe fn dev2host(
        &self,
        d: &Parts,
        dst: *mut c_void,
        src: CUdeviceptr,
        n: usize,
        via: Via,
    ) -> Result<()> {
        // SAFETY: forwarded caller guarantee; `src` is checked first.
        unsafe { self.host_copy(d, CopyDir::D2H, src, dst, n, via) }
    }

    /// The part every copy between the host and the device shares, either direction
    /// (`dir`: `H2D` or `D2H`): nothing for 0 bytes; the address checks; the copy paths
    /// in their order ([`PATHS`]); the copy recorded in the profile and the trace when
    /// either is on (the row: the path's, from how the copy reached the host or ended).
    ///
    /// # Safety
    /// `host` readable (to the device) or writable (to the host) for `n` bytes; for
    /// [`Via::Queue`], until the queue's work queued so far has run.
    unsafe fn host_copy(
        &self,
        d: &Parts,
        dir: CopyDir,
        dev: CUdeviceptr,
        host: *mut c_void,
        n: usize,
        via: Via,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let c = HostCopy::new(dir, dev, host, n, via);
        let copy = || {
            d.memory.check_host_copy(dev, host, n)?;
            // SAFETY: `host` as the caller guarantees; `dev` checked above.
            unsafe { self.by_paths(d, &c) }
        };
        let Some(o) = d.observe() else {
            return copy().map(|_| ());
        };
        let (t0, mem) = (crate::observe::now(), d.copy_mem(host, n, via == Via::Sync));
        let r = copy();
        o.copy(dir, r.as_ref().map_or(mem, |(e, p)| p.row(*e, mem)), n, t0);
        r.map(|_| ())
    }

    /// Offers checked copy `c` to the paths that may take it ([`Route::takes`]) in
    /// order; the first that takes it makes it. A synchronous copy that failed in the
    /// driver is offered to the later paths' [`CopyPath::retry`]. How it ended and the
    /// path that made it.
    ///
    /// # Safety
    /// As [`CopyPath::try_copy`].
    unsafe fn by_paths(
        &self,
        d: &Parts,
        c: &HostCopy,
    ) -> Result<(Ended, &'static dyn CopyPath<Buffers, ThreadBuffers>)> {
        for &(i, (at_least, below)) in &self.routes[c.kind()] {
            if c.n < at_least || c.n >= below {
                continue;
            }
            let p = PATHS[i];
            // SAFETY: forwarded caller guarantee; `c` is among the path's `takes`.
            let Some(r) = (unsafe { p.try_copy(d, c) }) else {
                c.given_up();
                continue;
            };
            return match r {
                Ok(ended) => Ok((ended, p)),
                Err(f) if f.retry && c.via == Via::Sync => {
                    c.given_up();
                    for &q in &PATHS[i + 1..] {
                        // SAFETY: forwarded caller guarantee.
                        if let Some(r) = unsafe { q.retry(d, c, &f.error) } {
                            return r.map(|()| (Ended::Done, q));
                        }
                    }
                    Err(f.error)
                }
                Err(f) => Err(f.error),
            };
        }
        Err(Error::invalid("no copy path took the copy"))
    }

    /// Copies `n` bytes between two device buffers (see [`Via`]: a synchronous copy is
    /// waited for), with the device's parts `d`.
    pub fn dev2dev(
        &self,
        d: &Parts,
        dst: CUdeviceptr,
        src: CUdeviceptr,
        n: usize,
        via: Via,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        d.memory.check_dev2dev(dst, src, n)?;
        let _range = nvtx::range(Kind::Copy, Some(n as u64), || match via {
            Via::Sync => "d2d".into(),
            Via::Queue(_) => "d2d queued".into(),
        });
        let t0 = d.observe().map(|_| crate::observe::now());
        // Device addresses are checked by the driver.
        let (r, ended) = match via {
            // Waited for before returning.
            Via::Sync => (
                d.launch
                    .on_copy_stream(&d.settings, |s| s.copy_dtod(dst, src, n)),
                Ended::Done,
            ),
            Via::Queue(s) => (s.copy_dtod(dst, src, n), Ended::Queued),
        };
        if let (Some(o), Some(t0)) = (d.observe(), t0) {
            o.copy(CopyDir::D2D, ended.row(CopyMem::Device), n, t0);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tune::{has_key, Tune, MAX_PATH_KNOBS, PATH_KNOBS};
    use gomp_plugin::settings::ProcessSettings;

    /// The paths in today's order of decisions, each named once; every shared knob a
    /// path names is a key of `config::tune`'s table, no own knob is one, and the own
    /// knobs fit `PathSizes`, read as their defaults say and parse through the settings.
    #[test]
    fn paths_in_order_with_known_knobs() {
        let labels: Vec<_> = PATHS.iter().map(|p| p.label()).collect();
        assert_eq!(
            labels,
            [
                "read_ahead",
                "staged",
                "queued",
                "ring",
                "deferred",
                "bounce",
                "direct",
                "kernel_copy"
            ]
        );
        let names: Vec<_> = PATHS
            .iter()
            .filter_map(|p| p.knob())
            .map(Knob::name)
            .collect();
        assert_eq!(names, ["readahead", "ring", "defer", "bounce"]);
        for p in PATHS {
            match p.knob() {
                Some(Knob::Shared(k)) => assert!(has_key(k), "{}: {k}", p.label()),
                Some(Knob::Own(k)) => assert!(!has_key(k.name), "{}: {}", p.label(), k.name),
                None => {}
            }
        }
        let own = knobs();
        assert!(own.len() <= MAX_PATH_KNOBS);
        // The settings' list of the paths' own knobs is theirs, in their order.
        assert_eq!(own.len(), PATH_KNOBS.len());
        assert!(own
            .iter()
            .zip(PATH_KNOBS.iter())
            .all(|(a, b)| std::ptr::eq(*a, *b)));
        for k in &own {
            let default = gomp_plugin::settings::parse_size(k.default_text);
            assert_eq!(default, Some(k.default), "{}", k.name);
            assert!(k.default <= k.max, "{}", k.name);
            let t = Tune::parse_with(&format!("{}={}", k.name, k.max), &own).unwrap();
            assert_eq!(t.size(k), k.max);
            assert_eq!(Tune::parse_with("", &own).unwrap().size(k), k.default);
            let e = Tune::parse_with(&format!("{}={}", k.name, k.max + 1), &own).unwrap_err();
            assert!(e.starts_with(&format!("{}: '", k.name)), "{e}");
            // Not a key without the paths' knobs.
            assert!(Tune::parse(&format!("{}=0", k.name)).is_err());
        }
        let t = Tune::parse_with("ring=0,bounce=4k,ring=2k", &own).unwrap();
        assert_eq!((t.size(&ring::KNOB), t.size(&bounce::KNOB)), (2048, 4096));
    }

    /// The paths each kind of copy is offered to, in order, with the byte counts they
    /// take: under the default settings and with the ring's knob set.
    #[test]
    fn routes_per_kind_of_copy() {
        let names = |r: &Routes| -> Vec<Vec<(&str, (usize, usize))>> {
            r.iter()
                .map(|k| k.iter().map(|&(i, b)| (PATHS[i].label(), b)).collect())
                .collect()
        };
        let config = |tune: &str| {
            Config::from_lookup(
                gomp_plugin::settings::lookup(&[("GOMP_NVPTX_TUNE", tune)]),
                |w| panic!("{w}"),
            )
        };
        let (any, staged) = ((0, usize::MAX), (staged::MIN_STAGED, usize::MAX));
        let ring = (0, bounce::MIN_BYTES);
        assert_eq!(
            names(&routes(&config(""))),
            [
                // H2D, the calling thread's
                vec![
                    ("staged", staged),
                    ("ring", ring),
                    ("deferred", any),
                    ("bounce", any),
                    ("direct", any)
                ],
                // D2H, the calling thread's
                vec![
                    ("read_ahead", any),
                    ("staged", staged),
                    ("ring", ring),
                    ("bounce", any),
                    ("direct", any)
                ],
                // H2D, a queue's
                vec![("staged", staged), ("bounce", any), ("direct", any)],
                // D2H, a queue's
                vec![
                    ("staged", staged),
                    ("queued", any),
                    ("ring", ring),
                    ("bounce", any),
                    ("direct", any)
                ],
            ]
        );
        assert_eq!(
            names(&routes(&config("ring=2k")))[1][2],
            ("ring", (0, 2048))
        );
        assert_eq!(names(&routes(&config("ring=0")))[0][1], ("ring", (0, 0)));
        assert_eq!(
            kind_index(CopyDir::D2H, true),
            KINDS - 1,
            "the kinds fit the routes"
        );
    }
}
