//! Choosing among a few candidate launch shapes of one kernel by timing its first
//! launches: the decision logic alone, a state machine fed with durations. A backend
//! says which candidates a kernel can run (candidate 0 is the shape it would launch
//! without tuning, the *baseline*), asks [`Trials::step`] which one each launch uses
//! and whether to time it, and hands back each timed launch's duration with
//! [`Trials::record`]; once a [`Decision`] is made, every later launch uses its shape.
//!
//! The schedule ([`Plan`], [`PLAN`] the backends' default):
//! 1. `warmup` untimed launches of the baseline: a kernel launched only that often in a
//!    process is neither timed nor tried, and pays nothing. The trials cost launches of
//!    slower shapes that only later launches repay, so a kernel is tried only once it
//!    has been launched about as often as its trials take (at most
//!    `probes + rounds * candidates` launches): a kernel launched a few times never
//!    starts trials it could not finish, and one launched often loses no more than
//!    those first launches' gain. The warm-up also takes the first launch's loading of
//!    the code, cold caches and idle clocks out of the samples. The backend may hand
//!    back each warm-up launch's host time ([`Trials::record_wall`]: a synchronous
//!    launch and its wait, never shorter than the kernel): when their median is under
//!    `min_ns` the kernel is short ([`Verdict::Short`]) without ever being timed;
//! 2. `probes` timed launches of the baseline: if their median is under `min_ns` the
//!    kernel is too short for its shape to matter, and the baseline is kept
//!    ([`Verdict::Short`]);
//! 3. rounds of one launch of each candidate in order (baseline first), until each has
//!    `rounds` samples; a candidate with one sample slower than `abandon_permille`/1000
//!    of the baseline's median is tried no more (a clear loser costs one launch);
//! 4. the candidate with the smallest median wins if it beats the baseline's median (of
//!    its samples taken in the same rounds, so that clocks ramping up or a cache
//!    warming affects every candidate alike) by `margin_permille`/1000; otherwise the
//!    baseline stays ([`Verdict::Tried`]).
//!
//! A sample taken while other kernels ran on the device ([`Sample::Disturbed`]) or not
//! taken at all ([`Sample::Lost`]) is thrown away and its launch repeated; after
//! `max_dirty` of them the baseline is kept ([`Verdict::Disturbed`]). One outlier cannot
//! pick a loser: it moves no median of three.
//!
//! Several threads may launch a kernel at once: each step handed out and not yet
//! recorded counts as pending, so concurrent launches spread over the candidates still
//! short of samples, and launches beyond what the plan needs use the baseline untimed.
//!
//! Pure code; a [`Trials`] is plain data, owned by its kernel (behind its lock).

/// The schedule of the trials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Untimed launches of the baseline first.
    pub warmup: u32,
    /// Timed launches of the baseline that decide whether to try at all.
    pub probes: u32,
    /// Below this median probe duration (ns) the baseline is kept untried.
    pub min_ns: u64,
    /// Samples per candidate.
    pub rounds: u32,
    /// How much faster (per mille of the baseline's median) a candidate must be.
    pub margin_permille: u64,
    /// A sample slower than this (per mille of the baseline's median) drops its
    /// candidate.
    pub abandon_permille: u64,
    /// Thrown-away samples tolerated before the baseline is kept.
    pub max_dirty: u32,
}

/// The backends' schedule: 10 warm-up launches, 2 probes, kernels of 100 µs and more
/// tried, 3 samples each, a 2 % margin, a candidate 25 % slower dropped at once. With
/// the backends' at most four candidates the trials take at most 14 launches after the
/// warm-up (11 with three), so a kernel launched 10 times or fewer pays nothing, and
/// one launched 24 times settles (when no sample is thrown away).
pub const PLAN: Plan = Plan {
    warmup: 10,
    probes: 2,
    min_ns: 100_000,
    rounds: 3,
    margin_permille: 20,
    abandon_permille: 1250,
    max_dirty: 12,
};

/// What one launch does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The candidate to launch.
    pub candidate: usize,
    /// Why: a timed step must be recorded (or cancelled).
    pub kind: StepKind,
}

/// The part of the schedule a step belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// Not timed (a launch beyond what the plan needs, or after the decision).
    Untimed,
    /// A warm-up launch: not timed by the device; its host time may be recorded
    /// ([`Trials::record_wall`]).
    Warmup,
    /// A timed baseline launch deciding whether to try.
    Probe,
    /// A timed launch of a candidate.
    Trial,
}

impl Step {
    /// Whether the launch must be timed on the device and recorded.
    pub fn timed(&self) -> bool {
        matches!(self.kind, StepKind::Probe | StepKind::Trial)
    }
}

/// The measurement of a timed step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sample {
    /// Its duration in ns, the kernel alone on the device.
    Clean(u64),
    /// Other kernels ran at the same time: thrown away.
    Disturbed,
    /// No duration (the launch or its timing failed): thrown away.
    Lost,
}

/// Why the decision is what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Only one candidate: nothing to try.
    Only,
    /// The baseline's probes were under `min_ns`.
    Short,
    /// Too many samples were disturbed: the baseline stays.
    Disturbed,
    /// The trials ran to the end.
    Tried,
}

/// The outcome of the trials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The chosen candidate.
    pub chosen: usize,
    /// Why.
    pub verdict: Verdict,
    /// Per candidate: what the trials measured.
    pub results: Vec<Measured>,
    /// The median of the baseline's probes (ns), when they were taken.
    pub probe_ns: Option<u64>,
    /// The median host time of the warm-up launches (ns), when recorded.
    pub wall_ns: Option<u64>,
}

/// What the trials measured of one candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Measured {
    /// Median of its samples (ns); `None` without samples.
    pub median_ns: Option<u64>,
    /// Samples taken.
    pub samples: u32,
    /// Whether it was dropped after a slow sample.
    pub abandoned: bool,
}

/// The state of one kernel's trials.
#[derive(Clone, Debug)]
pub struct Trials {
    plan: Plan,
    /// Whether the candidates are known (the vectors below have one entry each).
    counted: bool,
    warmups: u32,
    walls: Vec<u64>,
    probes: Vec<u64>,
    pending_probes: u32,
    samples: Vec<Vec<u64>>,
    pending: Vec<u32>,
    abandoned: Vec<bool>,
    dirty: u32,
    decision: Option<Decision>,
}

/// The median of `v` (its lower middle element for an even count: a duration that was
/// measured); `None` when empty.
pub fn median(v: &[u64]) -> Option<u64> {
    let mut s = v.to_vec();
    s.sort_unstable();
    (!s.is_empty()).then(|| s[(s.len() - 1) / 2])
}

impl Trials {
    /// Trials under `plan`, the candidates not yet counted.
    pub fn new(plan: Plan) -> Trials {
        Trials {
            plan,
            counted: false,
            warmups: 0,
            walls: Vec::new(),
            probes: Vec::new(),
            pending_probes: 0,
            samples: vec![Vec::new()],
            pending: vec![0],
            abandoned: vec![false],
            dirty: 0,
            decision: None,
        }
    }

    /// Trials already decided for candidate `chosen` (a choice remembered from an
    /// earlier run): every step uses it, untimed.
    pub fn decided(chosen: usize, plan: Plan) -> Trials {
        let mut t = Trials::new(plan);
        t.decision = Some(Decision {
            chosen,
            verdict: Verdict::Tried,
            results: Vec::new(),
            probe_ns: None,
            wall_ns: None,
        });
        t
    }

    /// Learns that there are `n` candidates (at least 1); one alone is the decision.
    fn count(&mut self, n: usize) {
        let n = n.max(1);
        self.counted = true;
        self.samples.resize(n, Vec::new());
        self.pending.resize(n, 0);
        self.abandoned.resize(n, false);
        if n == 1 {
            self.decide(Verdict::Only);
        }
    }

    /// The decision, once made.
    pub fn decision(&self) -> Option<&Decision> {
        self.decision.as_ref()
    }

    /// The next launch: which candidate, timed or not. `count` says how many candidates
    /// there are; it is called once, when the trials first need them.
    pub fn step(&mut self, count: impl FnOnce() -> usize) -> Step {
        let untimed = |candidate| Step {
            candidate,
            kind: StepKind::Untimed,
        };
        if let Some(d) = &self.decision {
            return untimed(d.chosen);
        }
        if self.warmups < self.plan.warmup {
            self.warmups += 1;
            return Step {
                candidate: 0,
                kind: StepKind::Warmup,
            };
        }
        if (self.probes.len() as u32) < self.plan.probes {
            if self.probes.len() as u32 + self.pending_probes < self.plan.probes {
                self.pending_probes += 1;
                return Step {
                    candidate: 0,
                    kind: StepKind::Probe,
                };
            }
            return untimed(0);
        }
        if !self.counted {
            self.count(count());
            if let Some(d) = &self.decision {
                return untimed(d.chosen);
            }
        }
        let want = (0..self.samples.len())
            .filter(|&i| !self.abandoned[i])
            .map(|i| (self.samples[i].len() as u32 + self.pending[i], i))
            .min();
        match want {
            Some((have, i)) if have < self.plan.rounds => {
                self.pending[i] += 1;
                Step {
                    candidate: i,
                    kind: StepKind::Trial,
                }
            }
            _ => untimed(0),
        }
    }

    /// A timed step that was not launched, or not timed after all (no events): as if
    /// it had never been handed out.
    pub fn cancel(&mut self, step: Step) {
        match step.kind {
            StepKind::Untimed | StepKind::Warmup => {}
            StepKind::Probe => self.pending_probes = self.pending_probes.saturating_sub(1),
            StepKind::Trial => {
                if let Some(p) = self.pending.get_mut(step.candidate) {
                    *p = p.saturating_sub(1);
                }
            }
        }
    }

    /// Records the measurement of a timed step; the decision if this made it.
    pub fn record(&mut self, step: Step, sample: Sample) -> Option<&Decision> {
        self.cancel(step);
        if self.decision.is_some() || !step.timed() || step.candidate >= self.samples.len() {
            return None;
        }
        match sample {
            Sample::Disturbed | Sample::Lost => {
                self.dirty += 1;
                if self.dirty > self.plan.max_dirty {
                    self.decide(Verdict::Disturbed);
                }
            }
            Sample::Clean(ns) => match step.kind {
                StepKind::Probe => {
                    self.probes.push(ns);
                    if self.probes.len() as u32 >= self.plan.probes
                        && median(&self.probes).is_some_and(|m| m < self.plan.min_ns)
                    {
                        self.decide(Verdict::Short);
                    }
                }
                StepKind::Trial => {
                    let i = step.candidate;
                    self.samples[i].push(ns);
                    if i != 0 && self.slow(ns) {
                        self.abandoned[i] = true;
                    }
                    let done = (0..self.samples.len()).all(|i| {
                        self.abandoned[i] || self.samples[i].len() as u32 >= self.plan.rounds
                    });
                    if done {
                        self.decide(Verdict::Tried);
                    }
                }
                StepKind::Untimed | StepKind::Warmup => {}
            },
        }
        self.decision.as_ref()
    }

    /// Records the host time of a warm-up launch (`ns`: from before the launch to the
    /// end of its wait, at least the kernel's duration); the decision if this made it:
    /// once the warm-up's launches are all recorded and their median is under
    /// `min_ns`, the kernel is short. Ignored for other steps.
    pub fn record_wall(&mut self, step: Step, ns: u64) -> Option<&Decision> {
        if self.decision.is_some() || step.kind != StepKind::Warmup {
            return None;
        }
        self.walls.push(ns);
        if self.walls.len() as u32 >= self.plan.warmup
            && median(&self.walls).is_some_and(|m| m < self.plan.min_ns)
        {
            self.decide(Verdict::Short);
        }
        self.decision.as_ref()
    }

    /// Whether a candidate's sample of `ns` is beyond the abandon limit of the
    /// baseline's durations so far (probes and trial samples).
    fn slow(&self, ns: u64) -> bool {
        let base: Vec<u64> = self
            .probes
            .iter()
            .chain(&self.samples[0])
            .copied()
            .collect();
        median(&base).is_some_and(|m| {
            u128::from(ns) * 1000 > u128::from(m) * u128::from(self.plan.abandon_permille)
        })
    }

    fn decide(&mut self, verdict: Verdict) {
        let results: Vec<Measured> = (0..self.samples.len())
            .map(|i| Measured {
                median_ns: median(&self.samples[i]),
                samples: self.samples[i].len() as u32,
                abandoned: self.abandoned[i],
            })
            .collect();
        let mut chosen = 0;
        if verdict == Verdict::Tried {
            let base = results[0].median_ns;
            let best = (1..results.len())
                .filter(|&i| !results[i].abandoned)
                .filter_map(|i| results[i].median_ns.map(|m| (m, i)))
                .min();
            if let (Some(b), Some((m, i))) = (base, best) {
                if u128::from(m) * 1000
                    <= u128::from(b) * u128::from(1000 - self.plan.margin_permille.min(1000))
                {
                    chosen = i;
                }
            }
        }
        self.decision = Some(Decision {
            chosen,
            verdict,
            results,
            probe_ns: median(&self.probes),
            wall_ns: median(&self.walls),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives `t` one launch at a time, each candidate taking `time(candidate, launch)`
    /// ns (launch counted from 1), until a decision or `max` launches; the candidates
    /// launched, in order.
    fn drive(
        t: &mut Trials,
        n: usize,
        max: usize,
        time: impl Fn(usize, usize) -> Sample,
    ) -> Vec<usize> {
        let mut seq = Vec::new();
        for k in 1..=max {
            let s = t.step(|| n);
            seq.push(s.candidate);
            if s.timed() {
                t.record(s, time(s.candidate, k));
            }
        }
        seq
    }

    /// [`PLAN`] with one warm-up launch: the sequences below stay short.
    const P: Plan = Plan { warmup: 1, ..PLAN };

    fn by_candidate(ns: &'static [u64]) -> impl Fn(usize, usize) -> Sample {
        move |c, _| Sample::Clean(ns[c])
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn trial_order_and_the_winner_kept() {
        let mut t = Trials::new(P);
        let seq = drive(&mut t, 3, 16, by_candidate(&[2 * MS, MS, 2 * MS + MS / 10]));
        // Warm-up, two probes, three rounds of all three, then the winner.
        assert_eq!(seq, [0, 0, 0, 0, 1, 2, 0, 1, 2, 0, 1, 2, 1, 1, 1, 1]);
        let d = t.decision().unwrap();
        assert_eq!((d.chosen, d.verdict), (1, Verdict::Tried));
        assert_eq!(d.probe_ns, Some(2 * MS));
        assert_eq!(
            d.results[1],
            Measured {
                median_ns: Some(MS),
                samples: 3,
                abandoned: false
            }
        );
        assert_eq!(t.step(|| 3).candidate, 1);
    }

    #[test]
    fn a_clear_loser_is_tried_once() {
        let mut t = Trials::new(P);
        // Candidate 2 is 50 % slower: dropped after its first sample.
        let seq = drive(&mut t, 3, 12, by_candidate(&[2 * MS, MS, 3 * MS]));
        assert_eq!(seq, [0, 0, 0, 0, 1, 2, 0, 1, 0, 1, 1, 1]);
        let d = t.decision().unwrap();
        assert_eq!(d.chosen, 1);
        assert!(d.results[2].abandoned && d.results[2].samples == 1);
    }

    #[test]
    fn the_baseline_stays_without_a_clear_margin() {
        // 1 % faster is within the margin.
        let mut t = Trials::new(P);
        drive(
            &mut t,
            2,
            12,
            by_candidate(&[2 * MS, 2 * MS - 2 * MS / 100]),
        );
        assert_eq!(t.decision().unwrap().chosen, 0);
        // 3 % faster is not.
        let mut t = Trials::new(P);
        drive(
            &mut t,
            2,
            12,
            by_candidate(&[2 * MS, 2 * MS - 2 * MS * 3 / 100]),
        );
        assert_eq!(t.decision().unwrap().chosen, 1);
    }

    #[test]
    fn a_noisy_sample_does_not_pick_a_loser() {
        // Candidate 1 is 5 % slower, but one of its samples (the 7th launch) is fast,
        // and one of the baseline's (the 6th) slow: the medians still see the truth.
        let mut t = Trials::new(P);
        let seq = drive(&mut t, 2, 12, |c, n| {
            Sample::Clean(match (c, n) {
                (1, 7) => MS / 2,
                (0, 6) => 4 * MS,
                (0, _) => 2 * MS,
                _ => 2 * MS + MS / 10,
            })
        });
        assert_eq!(seq[..10], [0, 0, 0, 0, 1, 0, 1, 0, 1, 0]);
        assert_eq!(t.decision().unwrap().chosen, 0);
        assert_eq!(t.step(|| 2).candidate, 0);
    }

    #[test]
    fn kernels_short_on_the_host_are_never_timed() {
        // Warm-up launches of 20 µs host time: short, decided without a probe.
        let mut t = Trials::new(PLAN);
        for k in 0..PLAN.warmup {
            let s = t.step(|| panic!("counted the candidates of a short kernel"));
            assert_eq!(s.kind, StepKind::Warmup);
            let d = t.record_wall(s, 20_000);
            assert_eq!(d.is_some(), k + 1 == PLAN.warmup, "launch {k}");
        }
        let d = t.decision().unwrap();
        assert_eq!((d.chosen, d.verdict), (0, Verdict::Short));
        assert_eq!((d.probe_ns, d.wall_ns), (None, Some(20_000)));
        assert_eq!(t.step(|| panic!("not needed")).kind, StepKind::Untimed);
        // Host times say nothing about a longer kernel (a median at or over min_ns,
        // the first launch alone short, or not recorded): its probes follow.
        for walls in [
            vec![PLAN.min_ns; PLAN.warmup as usize],
            [vec![20_000; 4], vec![200_000; 6]].concat(),
            vec![20_000; PLAN.warmup as usize - 1],
        ] {
            let mut t = Trials::new(PLAN);
            let steps: Vec<Step> = (0..PLAN.warmup).map(|_| t.step(|| 3)).collect();
            for (s, w) in steps.iter().zip(&walls) {
                assert!(t.record_wall(*s, *w).is_none(), "{walls:?}");
            }
            assert_eq!(t.step(|| 3).kind, StepKind::Probe, "{walls:?}");
        }
        // Only warm-up launches count.
        let mut t = Trials::new(P);
        let w = t.step(|| 3);
        t.record_wall(w, 200_000);
        let probe = t.step(|| 3);
        assert!(t.record_wall(probe, 1).is_none());
        assert!(t.decision().is_none());
    }

    #[test]
    fn short_kernels_are_not_tried() {
        let mut t = Trials::new(P);
        let seq = drive(&mut t, 3, 8, by_candidate(&[50_000, 10_000, 10_000]));
        assert_eq!(seq, [0; 8]);
        let d = t.decision().unwrap();
        assert_eq!((d.chosen, d.verdict), (0, Verdict::Short));
        assert_eq!(d.probe_ns, Some(50_000));
        // The candidates were never needed.
        let mut t = Trials::new(P);
        for _ in 0..6 {
            let s = t.step(|| panic!("counted the candidates of a short kernel"));
            if s.timed() {
                t.record(s, Sample::Clean(50_000));
            }
        }
        assert_eq!(t.decision().unwrap().verdict, Verdict::Short);
    }

    #[test]
    fn the_backends_plan_tries_only_kernels_launched_more_than_ten_times() {
        // Launched as often as the warm-up: never timed, the candidates never counted.
        let mut t = Trials::new(PLAN);
        for _ in 0..PLAN.warmup {
            let s = t.step(|| panic!("counted the candidates during the warm-up"));
            assert_eq!(s.candidate, 0);
            assert!(!s.timed());
        }
        assert!(t.decision().is_none());
        // Launched more often: the trials start after the warm-up and settle within
        // probes + rounds x candidates launches, four candidates at most.
        for n in 1..=4 {
            let mut t = Trials::new(PLAN);
            let limit = (PLAN.warmup + PLAN.probes + PLAN.rounds * n as u32) as usize;
            let seq = drive(&mut t, n, limit, |c, _| Sample::Clean(2 * MS - c as u64));
            assert!(seq[..PLAN.warmup as usize].iter().all(|&c| c == 0));
            assert!(t.decision().is_some(), "{n} candidate(s): {seq:?}");
        }
    }

    #[test]
    fn a_kernel_launched_once_is_not_timed() {
        let mut t = Trials::new(P);
        let s = t.step(|| panic!("the candidates are not needed yet"));
        assert_eq!(
            s,
            Step {
                candidate: 0,
                kind: StepKind::Warmup
            }
        );
        assert!(!s.timed());
        assert!(t.decision().is_none());
    }

    #[test]
    fn one_candidate_or_a_remembered_one_needs_no_trials() {
        let mut t = Trials::new(P);
        // Warm-up and probes (2 ms) happen; then one candidate alone is the decision.
        let seq = drive(&mut t, 1, 6, |_, _| Sample::Clean(2 * MS));
        assert_eq!(seq, [0; 6]);
        assert_eq!(t.decision().unwrap().verdict, Verdict::Only);
        let mut t = Trials::decided(2, P);
        for _ in 0..5 {
            assert_eq!(
                t.step(|| panic!("not needed")),
                Step {
                    candidate: 2,
                    kind: StepKind::Untimed
                }
            );
        }
    }

    #[test]
    fn disturbed_samples_are_repeated_then_given_up() {
        let mut t = Trials::new(P);
        // Every sample of candidate 1's first try is disturbed twice, then clean.
        let tries = std::cell::Cell::new(0);
        let seq = drive(&mut t, 2, 14, |c, _| {
            if c == 1 && tries.get() < 2 {
                tries.set(tries.get() + 1);
                Sample::Disturbed
            } else {
                Sample::Clean(if c == 0 { 2 * MS } else { MS })
            }
        });
        assert_eq!(seq[..8], [0, 0, 0, 0, 1, 1, 1, 0]);
        assert_eq!(t.decision().unwrap().chosen, 1);
        // Always disturbed: the baseline after max_dirty + 1 throw-aways.
        let mut t = Trials::new(P);
        drive(&mut t, 2, 40, |_, _| Sample::Disturbed);
        let d = t.decision().unwrap();
        assert_eq!((d.chosen, d.verdict), (0, Verdict::Disturbed));
        let mut t = Trials::new(P);
        drive(&mut t, 2, 40, |_, _| Sample::Lost);
        assert_eq!(t.decision().unwrap().verdict, Verdict::Disturbed);
    }

    #[test]
    fn concurrent_launches_spread_over_the_candidates() {
        let mut t = Trials::new(P);
        assert!(!t.step(|| 2).timed()); // warm-up
        let (p1, p2, extra) = (t.step(|| 2), t.step(|| 2), t.step(|| 2));
        assert_eq!((p1.kind, p2.kind), (StepKind::Probe, StepKind::Probe));
        assert_eq!(extra.kind, StepKind::Untimed, "probes all pending");
        t.record(p1, Sample::Clean(MS));
        // A cancelled probe is handed out again.
        t.cancel(p2);
        let p3 = t.step(|| 2);
        assert_eq!(p3.kind, StepKind::Probe);
        t.record(p3, Sample::Clean(MS));
        let steps: Vec<Step> = (0..7).map(|_| t.step(|| 2)).collect();
        let trials: Vec<usize> = steps
            .iter()
            .filter(|s| s.kind == StepKind::Trial)
            .map(|s| s.candidate)
            .collect();
        assert_eq!(trials, [0, 1, 0, 1, 0, 1]);
        assert!(!steps[6].timed(), "every sample is pending");
        for s in steps.into_iter().filter(Step::timed) {
            t.record(s, Sample::Clean(if s.candidate == 0 { MS } else { MS / 2 }));
        }
        assert_eq!(t.decision().unwrap().chosen, 1);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[5]), Some(5));
        assert_eq!(median(&[9, 1, 5]), Some(5));
        assert_eq!(median(&[9, 1, 5, 7]), Some(5));
    }
}
