//! Work done once something has been idle for a while, without any call from the
//! program: a process-wide thread that, for each watched object, waits until the
//! object's activity count has stayed the same for a whole period, then asks it to
//! give back what it holds beyond its bound ([`IdleTrim::trim_idle`]) and forgets it.
//! A backend uses it for memory it keeps between uses of a busy device but must not
//! keep for an idle process (the nvptx soft stacks).
//!
//! The thread is started at the first [`watch`] and sleeps on a condition variable
//! (no wake-ups) while nothing is watched; a watched object costs one wake-up per
//! period. Thread-safety: [`watch`] may be called from any thread; `trim_idle` runs on
//! the trimmer's thread, one object at a time, with no lock of the trimmer held.

use crate::observe::nvtx;
use gomp_plugin::sync::{Lock, Wait};
use std::sync::{Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

/// An object whose surplus can be given back once it has been idle.
pub trait IdleTrim: Send + Sync {
    /// A count that changes whenever the object is used (relaxed reads suffice).
    fn activity(&self) -> u64;
    /// Called on the trimmer's thread after a whole period without activity: gives
    /// back what the object holds beyond its bound. The object is then no longer
    /// watched; it calls [`watch`] again when it next goes over its bound.
    fn trim_idle(&self);
}

struct Watched {
    obj: Weak<dyn IdleTrim>,
    period: Duration,
    /// The activity count last seen and when it was first seen.
    seen: u64,
    since: Instant,
}

struct State {
    watched: Vec<Watched>,
    started: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    watched: Vec::new(),
    started: false,
});
static WAKE: Condvar = Condvar::new();

/// Watches `obj`: once its [`IdleTrim::activity`] has not changed for `period`, its
/// [`IdleTrim::trim_idle`] runs on the trimmer's thread (within about two periods of
/// its last use). An object dropped meanwhile is forgotten. If the thread cannot be
/// started, nothing is trimmed (reported with `GOMP_DEBUG`).
pub fn watch(obj: Weak<dyn IdleTrim>, period: Duration) {
    let Some(seen) = obj.upgrade().map(|o| o.activity()) else {
        return;
    };
    let mut st = STATE.locked();
    st.watched.push(Watched {
        obj,
        period,
        seen,
        since: Instant::now(),
    });
    if !st.started {
        match nvtx::spawn("gomp-idle-trim".into(), run) {
            Ok(_) => st.started = true,
            Err(e) => log::debug!("idle trimmer not started: {e}"),
        }
    }
    WAKE.notify_one();
}

/// How many objects are watched (for tests).
pub fn watched() -> usize {
    STATE.locked().watched.len()
}

fn run() {
    loop {
        let mut due = {
            let mut st = STATE.locked();
            while st.watched.is_empty() {
                st = WAKE.wait_locked(st);
            }
            std::mem::take(&mut st.watched)
        };
        let now = Instant::now();
        let mut keep = Vec::with_capacity(due.len());
        for mut w in due.drain(..) {
            let Some(obj) = w.obj.upgrade() else {
                continue;
            };
            let a = obj.activity();
            if a != w.seen {
                w.seen = a;
                w.since = now;
            } else if now.duration_since(w.since) >= w.period {
                // A panic here would end the trimmer's thread; the object is
                // forgotten either way.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| obj.trim_idle()));
                continue;
            }
            keep.push(w);
        }
        let next = keep.iter().map(|w| w.since + w.period).min();
        let mut st = STATE.locked();
        st.watched.extend(keep);
        if let Some(next) = next {
            let wait = next.saturating_duration_since(Instant::now());
            // New entries wake the thread early; their own deadline is then included.
            let _ = WAKE.wait_timeout_locked(st, wait.max(Duration::from_millis(1)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::Arc;

    #[derive(Default)]
    struct Counter {
        uses: AtomicU64,
        trims: AtomicUsize,
    }

    impl IdleTrim for Counter {
        fn activity(&self) -> u64 {
            self.uses.load(Ordering::Relaxed)
        }
        fn trim_idle(&self) {
            self.trims.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn wait_for(what: impl Fn() -> bool) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(20) {
            if what() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    #[test]
    fn trims_once_idle_and_not_while_used() {
        let period = Duration::from_millis(50);
        let busy = Arc::new(Counter::default());
        let idle = Arc::new(Counter::default());
        let gone = Arc::new(Counter::default());
        let w = |c: &Arc<Counter>| Arc::downgrade(c) as Weak<dyn IdleTrim>;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // `busy` is used more often than once a period until `stop`.
        let user = {
            let (busy, stop) = (busy.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    busy.uses.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(period / 5);
                }
            })
        };
        watch(w(&busy), period);
        watch(w(&idle), period);
        watch(w(&gone), period);
        drop(gone);
        assert!(wait_for(|| idle.trims.load(Ordering::Relaxed) == 1));
        std::thread::sleep(period * 3);
        assert_eq!(busy.trims.load(Ordering::Relaxed), 0, "trimmed while used");
        // Then left alone: trimmed once, and forgotten (with `gone`).
        stop.store(true, Ordering::Relaxed);
        user.join().unwrap();
        assert!(wait_for(|| busy.trims.load(Ordering::Relaxed) == 1));
        assert!(wait_for(|| watched() == 0));
        assert_eq!(idle.trims.load(Ordering::Relaxed), 1, "trimmed once");
    }
}
