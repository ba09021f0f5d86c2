//! Kernels that choose their own launch shape: for an OpenMP kernel launched without
//! `num_teams`/`thread_limit` and not sized by the team ICVs, a few candidate shapes
//! ([`candidates`]: the untuned one first, then `warps=occupancy`, `warps=8`,
//! `warps=16`, as the geometry code makes them for this kernel, equal shapes once;
//! worked out only when the trials begin, so a kernel launched once or too short to
//! tune never pays for them) are tried on its first synchronous launches and the
//! fastest is kept for the rest of the process (the schedule and the rules:
//! `crate::image::trials`), and remembered for later runs ([`super::choice_cache`]).
//!
//! - Timing: two timing events around each trial launch, read after the wait every
//!   synchronous launch makes anyway: the kernel's device time, without the host's
//!   launch and wake-up costs. Only trial launches record them (about 11 launches per
//!   kernel, none once a choice is made or remembered); a kernel's first launches, the
//!   plan's warm-up, are not timed on the device: the host's clock read around a
//!   synchronous warm-up launch and its wait (`std::time::Instant`, no driver call)
//!   marks a kernel whose launches complete within the plan's `min_ns` as short
//!   without any timing event, and a kernel launched a few times pays nothing. A sample during which another kernel of the device ran is thrown
//!   away (`reverse::ran_alone`).
//! - `nowait` launches (`async_run`) take the chosen shape once there is one, the
//!   untuned shape until then; they are never timed.
//! - `GOMP_NVPTX_TUNE=autotune=0` (or a `warps`/`teams` knob) turns it off: every
//!   launch then takes the path it took before the tuner existed. `autotune=fresh`
//!   tries again where a choice is remembered.
//! - `GOMP_DEBUG=1` says when a choice is made or found, and marks trial launches in the
//!   launch lines; the profile table (`GOMP_NVPTX_PROFILE=1`) shows each kernel's
//!   choice and what the trials measured.
//!
//! Threading: the kernel's `Tuning` (image::launch_facts) holds the trials behind a
//! lock taken on tuned launches until the choice is made; then one lock-free read per
//! launch.

use crate::cache::{Key, Lookup, Store};
use crate::config::tune::{Autotune, Tune, DEFAULT_WARPS};
use crate::cuda::safe::{query, OwnedEvent};
use crate::cuda::sys::CUDA_ERROR_NOT_READY;
use crate::device::Core;
pub use crate::image::launch_facts::Trial;
use crate::image::launch_facts::{Candidate, Tuner};
use crate::image::link_cache;
use crate::image::trials::{Decision, Sample, StepKind, Trials, Verdict, PLAN};
use crate::image::Kernel;
use crate::launch::choice_cache::{self, KeyFacts};
use crate::launch::geometry::{Geometry, Requested};
use crate::observe::nvtx::{self, Kind};

/// Whether a launch may be tuned: tuning on, neither clause given, no team ICV that
/// sizes it.
pub fn eligible(tune: &Tune, req: Requested, icv: Requested) -> bool {
    tune.autotune != Autotune::Off
        && req.teams <= 0
        && req.thread_limit <= 0
        && !(tune.icvs && (icv.teams > 0 || icv.thread_limit > 0))
}

/// The `GOMP_NVPTX_TUNE` setting of a warp count.
fn label(warps: Option<u32>) -> String {
    match warps {
        None => "warps=occupancy".into(),
        Some(w) => format!("warps={w}"),
    }
}

/// The candidate shapes of a kernel: the one `tune` gives (the untuned launch), then
/// those of `warps=occupancy`, `warps=8` and `warps=16` with the other knobs of `tune`,
/// each as `shape` (the geometry code, for this kernel and device) makes it; a shape
/// already listed is left out.
pub fn candidates(tune: &Tune, shape: impl Fn(&Tune) -> Geometry) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for w in [
        tune.warps,
        None,
        Some(DEFAULT_WARPS),
        Some(2 * DEFAULT_WARPS),
    ] {
        let g = shape(&Tune { warps: w, ..*tune });
        if !out.iter().any(|c| c.teams == g.teams && c.warps == g.warps) {
            out.push(Candidate {
                label: label(w),
                teams: g.teams,
                warps: g.warps,
            });
        }
    }
    out
}

/// A candidate as the profile and the messages show it: setting and teams x threads.
fn show(c: &Candidate) -> String {
    format!("{} {}x{}", c.label, c.teams, c.warps * 32)
}

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// What the trials measured, one candidate after the other.
fn measured(cands: &[Candidate], d: &Decision) -> String {
    let parts: Vec<String> = cands
        .iter()
        .zip(&d.results)
        .map(|(c, r)| {
            let m = r.median_ns.map_or("-".into(), ms);
            let n = r.samples;
            let how = if r.abandoned {
                format!(" (dropped after {n} sample(s))")
            } else if n == PLAN.rounds {
                String::new()
            } else {
                format!(" ({n} sample(s))")
            };
            format!("{} {m}{how}", show(c))
        })
        .collect();
    format!("medians of {}: {}", PLAN.rounds, parts.join(", "))
}

/// The decision in words (for `GOMP_DEBUG`, the profile and the remembered entry).
fn describe(cands: &[Candidate], d: &Decision) -> String {
    let c = show(&cands[d.chosen]);
    match d.verdict {
        Verdict::Only => format!("{c}: no other shape to try"),
        Verdict::Short => match (d.probe_ns, d.wall_ns) {
            (None, Some(w)) => format!(
                "kept {c} untried: {} per synchronous launch on the host, under {}",
                ms(w),
                ms(PLAN.min_ns)
            ),
            (p, _) => format!(
                "kept {c} untried: {} per launch, under {}",
                p.map_or("?".into(), ms),
                ms(PLAN.min_ns)
            ),
        },
        Verdict::Disturbed => {
            format!("kept {c}: other kernels ran alongside its trials")
        }
        Verdict::Tried if d.chosen == 0 => format!("kept {c} by trials ({})", measured(cands, d)),
        Verdict::Tried => format!("chose {c} by trials ({})", measured(cands, d)),
    }
}

/// The key of `f`'s choice (`None` when the linked-image cache is off).
fn entry_key(dev: &Core, f: &Kernel) -> Option<Key> {
    let image = f.image_key.as_ref()?;
    let code = f.code_if_known()?;
    let t = &dev.config().tune;
    Some(choice_cache::key(
        image,
        &KeyFacts {
            kernel: &f.name,
            cc: dev.props().cc,
            driver: link_cache::driver_identity(query::driver_version().unwrap_or(0)),
            device: &dev.props().name,
            num_sms: dev.props().num_sms,
            regs_per_sm: dev.props().regs_per_sm,
            total_mem: dev.props().total_mem,
            regs: code.regs,
            max_threads_per_block: code.max_threads_per_block,
            lowlat_pool: dev.config().lowlat_pool,
            soft_stack: dev.config().soft_stack,
            knobs: format!(
                "warps={:?} teams={:?} maxrreg={:?} dlcm={:?} carveout={:?} icvs={}",
                t.warps, t.teams, t.maxrreg, t.dlcm, t.carveout, t.icvs
            ),
        },
    ))
}

/// The store of remembered choices and `f`'s key in it, when there is one.
fn entry(dev: &Core, f: &Kernel) -> Option<(&'static Store, Key)> {
    let store = link_cache::store(&dev.config().link_cache)?;
    Some((store, entry_key(dev, f)?))
}

/// The trials of `f`, started at its first tuned launch with the untuned shape
/// `baseline` alone (the other candidates are found when the trials need them), or
/// the choice remembered from an earlier run (unless `autotune=fresh`).
fn start(dev: &Core, f: &Kernel, baseline: Candidate, all: impl Fn() -> Vec<Candidate>) -> Tuner {
    let fresh = Tuner {
        candidates: vec![baseline],
        trials: Trials::new(PLAN),
        pending: Vec::new(),
    };
    if dev.config().tune.autotune != Autotune::On {
        return fresh;
    }
    let Some((store, key)) = entry(dev, f) else {
        return fresh;
    };
    let path = store.path(choice_cache::KIND, &key);
    let why = match store.get(choice_cache::KIND, &key) {
        Lookup::Miss => return fresh,
        Lookup::Unusable(why) => why,
        Lookup::Hit(p) => {
            let cands = all();
            match choice_cache::decode(p.bytes(), &cands) {
                Ok(r) => {
                    let text = format!(
                        "{} remembered from an earlier run ({})",
                        show(&cands[r.chosen]),
                        r.trials
                    );
                    log::debug!("kernel {}: autotune: {text}: {}", f.name, path.display());
                    if let Some(o) = dev.observe() {
                        o.tuning(&f.name, &text);
                    }
                    f.tuning.choose(cands[r.chosen].clone());
                    return Tuner {
                        candidates: cands,
                        trials: Trials::decided(r.chosen, PLAN),
                        pending: Vec::new(),
                    };
                }
                Err(why) => why,
            }
        }
    };
    log::debug!(
        "kernel {}: autotune: ignoring {}: {why}",
        f.name,
        path.display()
    );
    fresh
}

/// The shape of a tuned launch of `f` and, when it is a trial (only if `may_try`: a
/// synchronous launch), its timing. `shape` is the geometry code for this launch.
pub fn pick(
    dev: &Core,
    f: &Kernel,
    may_try: bool,
    shape: impl Fn(&Tune) -> Geometry,
) -> (Geometry, Option<Trial>) {
    let tune = &dev.config().tune;
    let timing = if may_try {
        Timing::Synchronous
    } else {
        Timing::None
    };
    let (c, trial) = pick_candidate(
        dev,
        f,
        timing,
        || {
            let g = shape(tune);
            Candidate {
                label: label(tune.warps),
                teams: g.teams,
                warps: g.warps,
            }
        },
        || candidates(tune, &shape),
    );
    (
        Geometry {
            teams: c.teams,
            warps: c.warps,
        },
        trial,
    )
}

/// How a tuned launch can be timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// Not at all (the untuned shape until a choice is made).
    None,
    /// A synchronous launch: events around a trial, the host's clock around a warm-up
    /// launch and its wait; handed back with [`finish`].
    Synchronous,
    /// A launch on a queue that nobody waits for here: events around trials and warm-up
    /// launches alike, read once complete ([`defer`]).
    Queued,
}

/// The candidate of a tuned launch of `f` and, when the launch is to be timed, its
/// [`Trial`]. `baseline` makes the untuned candidate (asked at the first tuned launch);
/// `all` every candidate, the baseline first (asked only when the trials begin or a
/// remembered choice is checked). Reads the kernel's completed queued trials first.
pub fn pick_candidate(
    dev: &Core,
    f: &Kernel,
    timing: Timing,
    baseline: impl FnOnce() -> Candidate,
    all: impl Fn() -> Vec<Candidate>,
) -> (Candidate, Option<Trial>) {
    if let Some(c) = f.tuning.chosen() {
        return (c.clone(), None);
    }
    let mut guard = f.tuning.tuner();
    let t = guard.get_or_insert_with(|| start(dev, f, baseline(), &all));
    harvest(dev, f, t);
    if let Some(c) = f.tuning.chosen() {
        return (c.clone(), None);
    }
    if timing == Timing::None {
        return (t.candidates[0].clone(), None);
    }
    let cands = &mut t.candidates;
    let step = t.trials.step(|| {
        *cands = all();
        cands.len()
    });
    if let Some(d) = t.trials.decision().cloned() {
        // One candidate alone: decided now.
        settle(dev, f, t, &d);
        return (t.candidates[d.chosen].clone(), None);
    }
    let c = t.candidates[step.candidate].clone();
    let what = match step.kind {
        StepKind::Warmup => Some("warm-up"),
        StepKind::Probe => Some("probe"),
        StepKind::Trial => Some("trial"),
        StepKind::Untimed => None,
    };
    if let Some(w) = what {
        nvtx::mark(Kind::Tuner, None, || {
            format!("tuner {w}: {}", c.label).into()
        });
    }
    if step.kind == StepKind::Warmup && timing == Timing::Synchronous {
        let warmup = Trial {
            step,
            label: String::new(),
            events: None,
        };
        return (c, Some(warmup));
    }
    if !step.timed() && step.kind != StepKind::Warmup {
        return (c, None);
    }
    match (OwnedEvent::create_timed(), OwnedEvent::create_timed()) {
        (Ok(start), Ok(end)) => {
            let label = c.label.clone();
            (
                c,
                Some(Trial {
                    step,
                    label,
                    events: Some((start, end)),
                }),
            )
        }
        _ => {
            // No timing events: this launch is not a trial after all.
            t.trials.cancel(step);
            (t.candidates[0].clone(), None)
        }
    }
}

/// Keeps the queued launch `t` of `f` (its events recorded around the kernel on the
/// queue's stream) until its end event completes; read by a later launch of `f`.
pub fn defer(f: &Kernel, t: Trial) {
    if let Some(tuner) = f.tuning.tuner().as_mut() {
        tuner.pending.push(t);
    }
}

/// Records the queued launches of `tuner` (of `f`) whose end event has completed, and
/// keeps the choice when that decides. A failed event counts as a lost sample.
fn harvest(dev: &Core, f: &Kernel, tuner: &mut Tuner) {
    let mut i = 0;
    while i < tuner.pending.len() {
        let Some((start, end)) = &tuner.pending[i].events else {
            tuner.pending.swap_remove(i);
            continue;
        };
        let sample = match end.handle().query() {
            Err(e) if e.has_code(CUDA_ERROR_NOT_READY) => {
                i += 1;
                continue;
            }
            Ok(()) => match start.handle().elapsed_ms(end.handle()) {
                Ok(ms) => Sample::Clean((f64::from(ms) * 1e6) as u64),
                Err(_) => Sample::Lost,
            },
            Err(_) => Sample::Lost,
        };
        let t = tuner.pending.swap_remove(i);
        let decided = match (t.step.kind, sample) {
            (StepKind::Warmup, Sample::Clean(ns)) => tuner.trials.record_wall(t.step, ns),
            (StepKind::Warmup, _) => None,
            _ => tuner.trials.record(t.step, sample),
        };
        if let Some(d) = decided.cloned() {
            settle(dev, f, tuner, &d);
        }
    }
}

/// The launch `t` of `f` has completed (its stream was waited for): `ok` whether the
/// launch succeeded, `alone` whether no other kernel ran meanwhile, `wall_ns` the host
/// time from before the launch to the end of the wait. Records its duration (a
/// trial's from its events, a warm-up launch's `wall_ns` when it succeeded) and, when
/// that decides, keeps the choice.
pub fn finish(dev: &Core, f: &Kernel, t: Trial, ok: bool, alone: bool, wall_ns: u64) {
    let Some((start, end)) = &t.events else {
        if !ok {
            return;
        }
        let mut guard = f.tuning.tuner();
        let Some(tuner) = guard.as_mut() else {
            return;
        };
        if let Some(d) = tuner.trials.record_wall(t.step, wall_ns).cloned() {
            settle(dev, f, tuner, &d);
        }
        return;
    };
    let sample = match start.handle().elapsed_ms(end.handle()) {
        _ if !ok => Sample::Lost,
        Ok(ms) if alone => Sample::Clean((f64::from(ms) * 1e6) as u64),
        Ok(_) => Sample::Disturbed,
        Err(_) => Sample::Lost,
    };
    let mut guard = f.tuning.tuner();
    let Some(tuner) = guard.as_mut() else {
        return;
    };
    if let Some(d) = tuner.trials.record(t.step, sample).cloned() {
        settle(dev, f, tuner, &d);
    }
}

/// Keeps the decision `d` of `f`'s trials: says it, shows it in the profile and, after
/// trials that ran to the end, remembers it.
fn settle(dev: &Core, f: &Kernel, t: &Tuner, d: &Decision) {
    if f.tuning.chosen().is_some() {
        return;
    }
    let cands = &t.candidates;
    let chosen = &cands[d.chosen];
    f.tuning.choose(chosen.clone());
    let text = describe(cands, d);
    nvtx::mark(Kind::Tuner, None, || format!("tuner: {text}").into());
    if let Some(o) = dev.observe() {
        o.tuning(&f.name, &text);
    }
    let mut kept = String::new();
    if d.verdict == Verdict::Tried {
        if let Some((store, key)) = entry(dev, f) {
            let path = store.path(choice_cache::KIND, &key);
            let payload = choice_cache::encode(chosen, &measured(cands, d));
            kept = match store.put(choice_cache::KIND, &key, &payload) {
                Ok(()) => format!("; stored in {}", path.display()),
                Err(e) => format!("; not stored: {e}"),
            };
        }
    }
    log::debug!("kernel {}: autotune: {text}{kept}", f.name);
}

/// For the launch line of a tuned launch: what the tuner made of it.
pub fn launch_note(f: &Kernel, trial: Option<&Trial>) -> String {
    match (trial.and_then(Trial::label), f.tuning.chosen()) {
        (Some(label), _) => format!("; autotune: trial of {label}"),
        (None, Some(c)) => format!("; autotune: {}", c.label),
        (None, None) => "; autotune: untuned until the trials".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::geometry::{self, Limits};

    const NONE: Requested = Requested {
        teams: 0,
        thread_limit: 0,
    };

    /// The geometry code for a kernel of `regs` registers on an H100 (occupancy as
    /// the calculator answers it: 64 warps, 32 blocks per SM, registers per warp
    /// allocated in units of 256).
    fn h100(regs: u32, max_threads: i32) -> impl Fn(&Tune) -> Geometry {
        move |t: &Tune| {
            let lim = Limits {
                num_sms: 132,
                regs_per_sm: 65536,
                max_threads_per_block: max_threads,
                regs_per_thread: regs as i32,
                max_teams: 1 << 20,
            };
            let resident = move |w: u32| {
                let per_warp = (regs * 32).next_multiple_of(256);
                Some((65536 / (per_warp * w)).min(64 / w).min(32))
            };
            let w = geometry::warps(NONE, NONE, t, lim, resident);
            Geometry {
                teams: geometry::teams(NONE, NONE, t, lim, w, resident(w)),
                warps: w,
            }
        }
    }

    fn shapes(c: &[Candidate]) -> Vec<(&str, u32, u32)> {
        c.iter()
            .map(|c| (c.label.as_str(), c.teams, c.warps))
            .collect()
    }

    #[test]
    fn candidates_are_the_shapes_the_geometry_code_makes() {
        let t = Tune::default();
        // GCC's 148-register C kernels: 13 warps at most, so 16 is 13 again.
        assert_eq!(
            shapes(&candidates(&t, h100(148, 416))),
            [("warps=8", 132, 8), ("warps=occupancy", 132, 13)]
        );
        // The 72-register Fortran kernels.
        assert_eq!(
            shapes(&candidates(&t, h100(72, 896))),
            [
                ("warps=8", 396, 8),
                ("warps=occupancy", 528, 7),
                ("warps=16", 132, 16)
            ]
        );
        // A light kernel: 8 warps already fill the SM.
        assert_eq!(
            shapes(&candidates(&t, h100(32, 1024))),
            [("warps=8", 1056, 8), ("warps=16", 528, 16)]
        );
        // A kernel limited to 8 warps has nothing to try.
        assert_eq!(candidates(&t, h100(255, 256)).len(), 1);
        // The untuned shape comes first whatever the knobs make it.
        let occ = Tune {
            warps: None,
            autotune: Autotune::On,
            ..t
        };
        assert_eq!(
            shapes(&candidates(&occ, h100(72, 896)))[0],
            ("warps=occupancy", 528, 7)
        );
        let four = Tune {
            warps: Some(4),
            ..occ
        };
        assert_eq!(candidates(&four, h100(72, 896)).len(), 4);
    }

    #[test]
    fn only_unsized_launches_are_tuned() {
        let t = Tune::default();
        let icv = |teams, thread_limit| Requested {
            teams,
            thread_limit,
        };
        assert!(eligible(&t, NONE, NONE));
        assert!(!eligible(&t, icv(4, 0), NONE));
        assert!(!eligible(&t, icv(0, 2), NONE));
        assert!(!eligible(&t, NONE, icv(1056, 0)));
        assert!(!eligible(&t, NONE, icv(0, 16)));
        // Ignored ICVs size nothing.
        let no_icvs = Tune { icvs: false, ..t };
        assert!(eligible(&no_icvs, NONE, icv(1056, 16)));
        let off = Tune {
            autotune: Autotune::Off,
            ..t
        };
        assert!(!eligible(&off, NONE, NONE));
        let fresh = Tune {
            autotune: Autotune::Fresh,
            ..t
        };
        assert!(eligible(&fresh, NONE, NONE));
    }

    #[test]
    fn decisions_in_words() {
        let c = vec![
            Candidate {
                label: "warps=8".into(),
                teams: 396,
                warps: 8,
            },
            Candidate {
                label: "warps=occupancy".into(),
                teams: 528,
                warps: 7,
            },
            Candidate {
                label: "warps=16".into(),
                teams: 132,
                warps: 16,
            },
        ];
        let mut t = Trials::new(PLAN);
        let ns = [2_000_000, 1_500_000, 3_000_000];
        while t.decision().is_none() {
            let s = t.step(|| 3);
            if s.timed() {
                t.record(s, Sample::Clean(ns[s.candidate]));
            }
        }
        let d = t.decision().unwrap();
        assert_eq!(
            describe(&c, d),
            "chose warps=occupancy 528x224 by trials (medians of 3: warps=8 396x256 2.000 ms, \
             warps=occupancy 528x224 1.500 ms, warps=16 132x512 3.000 ms (dropped after 1 \
             sample(s)))"
        );
        let mut t = Trials::new(PLAN);
        while t.decision().is_none() {
            let s = t.step(|| 3);
            if s.timed() {
                t.record(s, Sample::Clean(20_000));
            }
        }
        assert_eq!(
            describe(&c, t.decision().unwrap()),
            "kept warps=8 396x256 untried: 0.020 ms per launch, under 0.100 ms"
        );
        let mut t = Trials::new(PLAN);
        while t.decision().is_none() {
            let s = t.step(|| 3);
            t.record_wall(s, 30_000);
        }
        assert_eq!(
            describe(&c, t.decision().unwrap()),
            "kept warps=8 396x256 untried: 0.030 ms per synchronous launch on the host, under \
             0.100 ms"
        );
    }
}
