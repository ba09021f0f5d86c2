//! The launch-shape tuner for OpenACC kernels whose gang count the runtime chooses:
//! the OpenMP kernels' trials (`launch::autotune`) over gang counts
//! ([`super::dims::gang_candidates`]: the default first, then fewer gangs), the worker and
//! vector counts as chosen. Synchronous launches are timed as OpenMP ones are; a launch
//! on a queue gets timing events on the queue's stream, read by a later launch of the
//! kernel once complete (never waited for). Samples of queued launches are taken as
//! they come: other queues' kernels may run beside them, which the medians of three
//! absorb. `GOMP_NVPTX_TUNE=autotune=0` launches the default; a choice is remembered
//! for later runs like an OpenMP kernel's.
//!
//! A trial changes only how many gangs run the kernel, which an OpenACC program cannot
//! depend on (gang reductions combine every gang's part, whatever their number).

use super::dims::{gang_candidates, Choice, Dims, WARP};
use crate::config::tune::Autotune;
use crate::device::Core;
use crate::image::launch_facts::{Candidate, Trial};
use crate::image::Kernel;
use crate::launch::autotune::{self, Timing};

/// Warps per block of `d` (how the tuner's shapes count threads).
fn warps(d: &Dims) -> u32 {
    (d.workers * d.vector).div_ceil(WARP)
}

/// The candidate launching `gangs` gangs of `c`'s blocks.
fn candidate(c: &Choice, gangs: u32) -> Candidate {
    Candidate {
        label: if gangs == c.dims.gangs {
            "gangs=default".into()
        } else {
            format!("gangs={gangs}")
        },
        teams: gangs,
        warps: warps(&c.dims),
    }
}

/// Whether a launch of choice `c` is tuned: its gang count is open, tuning is on and
/// no `accgangs` count is forced.
pub fn eligible(dev: &Core, c: &Choice) -> bool {
    c.gangs_open
        && dev.config().tune.autotune != Autotune::Off
        && dev.config().tune.accgangs.is_none()
}

/// The dimensions `GOMP_NVPTX_TUNE=accgangs=K` gives a launch of choice `c` whose gang
/// count is open: the default over K (at least 1), from the first launch and untimed;
/// `None` when no count is forced or the gangs are fixed.
pub fn forced(dev: &Core, c: &Choice) -> Option<Dims> {
    let k = dev.config().tune.accgangs?;
    c.gangs_open.then(|| forced_dims(c, k))
}

fn forced_dims(c: &Choice, k: u32) -> Dims {
    Dims {
        gangs: (c.dims.gangs / k.max(1)).max(1),
        ..c.dims
    }
}

/// The dimensions of a tuned launch of `f` (choice `c`) and, when it is timed, its
/// trial; `queued` for a launch on a queue's stream.
pub fn pick(dev: &Core, f: &Kernel, c: &Choice, queued: bool) -> (Dims, Option<Trial>) {
    let timing = if queued {
        Timing::Queued
    } else {
        Timing::Synchronous
    };
    let (got, trial) = autotune::pick_candidate(
        dev,
        f,
        timing,
        || candidate(c, c.dims.gangs),
        || {
            gang_candidates(c, dev.props().num_sms.max(1) as u32)
                .into_iter()
                .map(|g| candidate(c, g))
                .collect()
        },
    );
    if got.warps != warps(&c.dims) {
        // Tuned for blocks of another size (the kernel launched with other worker or
        // vector counts before): this launch keeps its default.
        if let Some(t) = trial {
            autotune::finish(dev, f, t, false, false, 0);
        }
        return (c.dims, None);
    }
    (
        Dims {
            gangs: got.teams,
            ..c.dims
        },
        trial,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_counts_divide_the_default_gangs_only() {
        let c = Choice {
            dims: Dims {
                gangs: 10560,
                workers: 20,
                vector: 32,
            },
            gangs_open: true,
        };
        let g = |k| forced_dims(&c, k);
        assert_eq!(g(1), c.dims);
        assert_eq!((g(4).gangs, g(16).gangs, g(64).gangs), (2640, 660, 165));
        assert_eq!((g(64).workers, g(64).vector), (20, 32));
        let few = Choice {
            dims: Dims { gangs: 3, ..c.dims },
            gangs_open: true,
        };
        assert_eq!(forced_dims(&few, 64).gangs, 1);
    }

    #[test]
    fn candidates_keep_the_block_and_name_the_gangs() {
        let c = Choice {
            dims: Dims {
                gangs: 4224,
                workers: 16,
                vector: 32,
            },
            gangs_open: true,
        };
        let all: Vec<(String, u32, u32)> = gang_candidates(&c, 132)
            .into_iter()
            .map(|g| candidate(&c, g))
            .map(|k| (k.label, k.teams, k.warps))
            .collect();
        assert_eq!(
            all,
            [
                ("gangs=default".to_string(), 4224, 16),
                ("gangs=1056".to_string(), 1056, 16),
                ("gangs=264".to_string(), 264, 16),
            ]
        );
        let wide = Dims {
            gangs: 10,
            workers: 2,
            vector: 128,
        };
        assert_eq!(warps(&wide), 8);
    }
}
