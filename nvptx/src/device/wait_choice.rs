//! How a device's synchronous waits are made, chosen by measurement
//! (`GOMP_NVPTX_TUNE=syncwait=auto`, the default): a synchronous kernel launch and a
//! small copy to the host through the thread's ring are waited for either by the word
//! the stream writes after the work (`device::copy::ring::Ring::arm`, polled) or by
//! `cuStreamSynchronize`. Which is faster depends on the host: on an H100 host the word
//! was ahead for both, on an H200 host behind for copies to the host and even for
//! launches (bench/results/h200.md, table 3).
//!
//! So each device measures both ways once, at the first synchronous wait of a thread
//! that has its ring (the thread's stream is idle then): [`ROUNDS`] rounds of a one-byte
//! memset (a launch's wait: device work, then its end seen) and of an 8-byte copy to
//! page-locked memory (a copy's wait), each waited for both ways in alternating order, about 32 waits
//! of a few microseconds; for each kind the other way than `syncwait=run`'s replaces it
//! when faster by median by more than [`MARGIN_PERCENT`], and the choice is said in
//! `GOMP_NVPTX_INFO` and the profile. Until then (and where the measurement cannot be
//! made) launches wait by the word and copies synchronize (`syncwait=run`).
//!
//! The measurement itself waits on the thread's ring, and is the ring's
//! (`device::copy::ring::measure`; the device's parts run it,
//! `device::copy::ring`'s `Parts::measure_waits`): this file holds the choice, below the
//! copy engine.
//!
//! Owned by the device's settings part (`device::settings::Settings`); `Sync` (one
//! atomic byte; the measurement is claimed by one thread).

use crate::config::tune::SyncWait;
use std::sync::atomic::{AtomicU8, Ordering};

/// Rounds of each kind of probe; each round waits once by the word, once by
/// synchronizing.
pub const ROUNDS: usize = 8;

/// How much faster (by median) the other way must be to replace `syncwait=run`'s way
/// of a kind (a launch's: the word; a copy's: synchronizing).
pub const MARGIN_PERCENT: u64 = 3;

/// The measurement has been made (or given up): the two bits below hold.
const MEASURED: u8 = 1;
/// A thread is measuring.
const MEASURING: u8 = 2;
/// A launch's wait polls the word.
const LAUNCH_FLAG: u8 = 4;
/// A copy's wait polls the word.
const COPY_FLAG: u8 = 8;

/// The device's choice of waits under `mode` (`GOMP_NVPTX_TUNE=syncwait`). `Sync`.
pub struct WaitChoice {
    mode: SyncWait,
    state: AtomicU8,
}

/// What one measurement found: the median wall time (ns) of each kind of probe
/// (`launch`, `copy`) waited for by the word (`.0`) and by synchronizing (`.1`).
/// Plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeasuredWaits {
    /// The memset's wait: by the word, by synchronizing.
    pub launch: (u64, u64),
    /// The 8-byte copy's wait: by the word, by synchronizing.
    pub copy: (u64, u64),
}

impl MeasuredWaits {
    /// Whether each kind waits by the word: a launch's unless synchronizing is faster
    /// by more than [`MARGIN_PERCENT`], a copy's only if the word is faster by more than
    /// it (`syncwait=run`'s ways kept when the two are that close: a measurement of
    /// microseconds moves by a few percent from one process to the next). Pure.
    pub fn choice(&self) -> (bool, bool) {
        let clearly_faster = |a: u64, b: u64| a * (100 + MARGIN_PERCENT) < b * 100;
        (
            !clearly_faster(self.launch.1, self.launch.0),
            clearly_faster(self.copy.0, self.copy.1),
        )
    }

    /// The words of the info line and the profile. Pure.
    pub fn describe(&self) -> String {
        let (l, c) = self.choice();
        let way = |flag: bool| {
            if flag {
                "by the word"
            } else {
                "by cuStreamSynchronize"
            }
        };
        let us = |ns: u64| ns as f64 / 1e3;
        format!(
            "synchronous waits measured: a launch's {} ({:.1} us by the word, {:.1} by \
             cuStreamSynchronize), a copy's {} ({:.1} / {:.1})",
            way(l),
            us(self.launch.0),
            us(self.launch.1),
            way(c),
            us(self.copy.0),
            us(self.copy.1)
        )
    }
}

impl WaitChoice {
    /// The choice under `mode`, nothing measured yet.
    pub fn new(mode: SyncWait) -> WaitChoice {
        WaitChoice {
            mode,
            state: AtomicU8::new(0),
        }
    }

    /// Whether a wait for a kernel launch (`kernel`) or for a copy polls the word.
    #[inline]
    pub fn by_flag(&self, kernel: bool) -> bool {
        if self.mode != SyncWait::Auto {
            return self.mode.by_flag(kernel);
        }
        let s = self.state.load(Ordering::Relaxed);
        if s & MEASURED == 0 {
            return self.mode.by_flag(kernel);
        }
        s & if kernel { LAUNCH_FLAG } else { COPY_FLAG } != 0
    }

    /// Whether a launching thread that serves its device's reverse-offload requests
    /// while it waits (`launch::reverse`) polls the word: only under `syncwait=flag`.
    /// Its loop reads the mailbox and asks the stream every few polls; on an H200
    /// (2026-12-01, 3 runs each) an empty region of a program with reverse offload took
    /// 17.05 us with the word (`syncwait=run`) and 15.42 without it (`syncwait=sync`),
    /// the release 15.52.
    #[inline]
    pub fn serving_by_flag(&self) -> bool {
        self.mode == SyncWait::Flag
    }

    /// Whether the waits are still to be measured (one relaxed load).
    #[inline]
    pub fn wanted(&self) -> bool {
        self.mode == SyncWait::Auto
            && self.state.load(Ordering::Relaxed) & (MEASURED | MEASURING) == 0
    }

    /// Claims the measurement for the calling thread: true for one thread only.
    pub fn claim(&self) -> bool {
        self.state
            .compare_exchange(0, MEASURING, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Gives the claim back unmeasured (the thread could not measure: another may).
    pub fn unclaim(&self) {
        self.state.store(0, Ordering::Release);
    }

    /// Keeps the choice of `m`; a launch's and a copy's way from then on.
    pub fn keep(&self, m: &MeasuredWaits) {
        let (l, c) = m.choice();
        let bits = MEASURED | if l { LAUNCH_FLAG } else { 0 } | if c { COPY_FLAG } else { 0 };
        self.state.store(bits, Ordering::Release);
    }

    /// Gives the measurement up: `syncwait=run`'s ways from then on.
    pub fn give_up(&self) {
        self.state.store(MEASURED | LAUNCH_FLAG, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_modes_are_not_measured() {
        for (mode, [copy, kernel]) in [
            (SyncWait::Sync, [false, false]),
            (SyncWait::Flag, [true, true]),
            (SyncWait::Run, [false, true]),
        ] {
            let w = WaitChoice::new(mode);
            assert!(!w.wanted(), "{mode:?}");
            assert_eq!((w.by_flag(false), w.by_flag(true)), (copy, kernel));
        }
    }

    #[test]
    fn auto_keeps_the_faster_way_of_each_kind() {
        let w = WaitChoice::new(SyncWait::Auto);
        assert!(w.wanted());
        // Before the measurement: `run`'s ways.
        assert_eq!((w.by_flag(false), w.by_flag(true)), (false, true));
        assert!(w.claim());
        assert!(!w.claim(), "one thread measures");
        assert!(!w.wanted());
        let m = MeasuredWaits {
            launch: (9_000, 8_000),
            copy: (7_000, 8_000),
        };
        assert_eq!(m.choice(), (false, true));
        // Within the margin: `run`'s ways (the word for a launch, synchronize a copy).
        let close = MeasuredWaits {
            launch: (8_200, 8_000),
            copy: (7_900, 8_000),
        };
        assert_eq!(close.choice(), (true, false));
        w.keep(&m);
        assert_eq!((w.by_flag(false), w.by_flag(true)), (true, false));
        assert!(!w.wanted());
        assert!(m
            .describe()
            .contains("a launch's by cuStreamSynchronize (9.0 us by the word, 8.0"));
        assert!(m.describe().contains("a copy's by the word (7.0 / 8.0)"));
    }

    #[test]
    fn a_tie_keeps_run_and_an_unclaimed_measurement_is_wanted_again() {
        let m = MeasuredWaits {
            launch: (5, 5),
            copy: (5, 5),
        };
        assert_eq!(m.choice(), (true, false));
        let w = WaitChoice::new(SyncWait::Auto);
        assert!(w.claim());
        w.unclaim();
        assert!(w.wanted());
        assert!(w.claim());
        w.give_up();
        assert!(!w.wanted());
        assert_eq!((w.by_flag(false), w.by_flag(true)), (false, true));
    }

    #[test]
    fn a_serving_wait_polls_the_word_only_when_forced() {
        for (mode, flag) in [
            (SyncWait::Auto, false),
            (SyncWait::Run, false),
            (SyncWait::Sync, false),
            (SyncWait::Flag, true),
        ] {
            let w = WaitChoice::new(mode);
            if mode == SyncWait::Auto {
                w.claim();
                w.keep(&MeasuredWaits {
                    launch: (1, 2),
                    copy: (1, 2),
                });
            }
            assert_eq!(w.serving_by_flag(), flag, "{mode:?}");
        }
    }
}
