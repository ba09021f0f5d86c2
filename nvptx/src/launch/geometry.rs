//! OpenMP kernel launch parameters: choosing the grid (teams) and block (warps) for a
//! kernel from the clauses (the framework's decoded launch request), the device's team
//! ICVs and `GOMP_NVPTX_TUNE`. Pure functions.

use crate::config::tune::{Teams, Tune, DEFAULT_WARPS};
use gomp_plugin::libgomp::target_args::LaunchRequest;

/// What the `num_teams` and `thread_limit` clauses asked for; 0 means "not given".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requested {
    /// Requested number of teams.
    pub teams: i32,
    /// Requested threads per team (OpenMP threads, i.e. warps on nvptx).
    pub thread_limit: i32,
}

impl From<&LaunchRequest> for Requested {
    fn from(r: &LaunchRequest) -> Requested {
        Requested {
            teams: r.teams,
            thread_limit: r.thread_limit,
        }
    }
}

/// The device and kernel facts the geometry depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Streaming multiprocessors on the device.
    pub num_sms: i32,
    /// 32-bit registers per SM.
    pub regs_per_sm: i32,
    /// The kernel's maximum threads per block (from the JIT).
    pub max_threads_per_block: i32,
    /// The kernel's registers per thread.
    pub regs_per_thread: i32,
    /// Most teams whose soft stacks the device memory allows (bounds a launch sized by
    /// the `OMP_NUM_TEAMS` ICV, which may exceed what is resident at once).
    pub max_teams: i32,
}

/// The nvptx backend supports at most 32 warps (1024 threads) per block.
pub const MAX_WARPS: i32 = 32;

/// The launch shape: `teams` blocks of `warps` × 32 threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Blocks in the grid (one OpenMP team each).
    pub teams: u32,
    /// Warps per block (one OpenMP thread each).
    pub warps: u32,
}

/// Warps per team: the `thread_limit` clause, else the device's `OMP_TEAMS_THREAD_LIMIT`
/// ICV (`icv`, when `tune.icvs`), else `tune.warps`, else the count that keeps the most
/// warps resident on an SM (`resident(w)`: blocks of `w` warps resident per SM, `None`
/// without an occupancy calculator; nearest to [`DEFAULT_WARPS`] among equals), capped
/// by the kernel's and the backend's limits. (GCC's device runtime runs one OpenMP
/// thread per warp and caps a team's threads by the same ICV, so launching that many
/// warps is what it expects.) A kernel heavy in registers fits one block per SM: 8
/// warps then leave the SM a third full where 12 fit.
pub fn warps(
    req: Requested,
    icv: Requested,
    tune: &Tune,
    lim: Limits,
    resident: impl Fn(u32) -> Option<u32>,
) -> u32 {
    let max_warps = (lim.max_threads_per_block / 32).clamp(1, MAX_WARPS) as u32;
    let w = if req.thread_limit > 0 {
        req.thread_limit as u32
    } else if tune.icvs && icv.thread_limit > 0 {
        icv.thread_limit as u32
    } else if let Some(w) = tune.warps {
        w
    } else {
        most_resident(max_warps, resident).unwrap_or(DEFAULT_WARPS)
    };
    w.min(max_warps)
}

/// The warp count in 1..=`max_warps` with the most resident warps per SM, nearest to
/// [`DEFAULT_WARPS`] among equals; `None` if `resident` has no answer.
fn most_resident(max_warps: u32, resident: impl Fn(u32) -> Option<u32>) -> Option<u32> {
    let mut best: Option<(u32, u32)> = None; // (resident warps, warps)
    for w in 1..=max_warps {
        let r = resident(w)? * w;
        let better = match best {
            None => true,
            Some((br, bw)) => {
                r > br || (r == br && w.abs_diff(DEFAULT_WARPS) < bw.abs_diff(DEFAULT_WARPS))
            }
        };
        if better {
            best = Some((r, w));
        }
    }
    best.map(|(_, w)| w)
}

/// Blocks of `warps` warps that fit on one SM by the register estimate of GCC's plugin
/// (registers per SM / registers per block; at least 1).
pub fn regs_estimate(warps: u32, lim: Limits) -> u32 {
    let regs_per_block = lim.regs_per_thread.max(1) * 32 * warps as i32;
    (lim.regs_per_sm / regs_per_block).max(1) as u32
}

/// Teams for blocks of `warps` warps, of which `resident` fit on one SM at once (the
/// occupancy calculator's answer; `None` where the driver has none).
///
/// The `num_teams` clause is honoured up to the blocks resident at once (beyond them
/// GCC's device runtime loops over the extra teams); without it the device's
/// `OMP_NUM_TEAMS` ICV (when `tune.icvs`) is launched as asked, up to `lim.max_teams`
/// (the device runtime takes min(ICV, grid) teams, so a smaller grid would not honour
/// it); without either, `tune.teams` decides (default: the resident blocks).
pub fn teams(
    req: Requested,
    icv: Requested,
    tune: &Tune,
    lim: Limits,
    warps: u32,
    resident: Option<u32>,
) -> u32 {
    let sms = lim.num_sms.max(1) as u32;
    let estimate = regs_estimate(warps, lim) * sms;
    let fit = match (tune.teams, resident) {
        (Teams::Regs, _) | (_, None) => estimate,
        (_, Some(r)) => r.max(1) * sms,
    };
    if req.teams > 0 {
        return (req.teams as u32).min(fit);
    }
    if tune.icvs && icv.teams > 0 {
        return (icv.teams as u32).min(fit.max(lim.max_teams.max(1) as u32));
    }
    match tune.teams {
        Teams::Occupancy | Teams::Regs => fit,
        Teams::Times(k) => fit.saturating_mul(k),
        Teams::Fixed(n) => n,
    }
}

/// The whole choice without an occupancy calculator (the register estimate stands in).
pub fn geometry(req: Requested, icv: Requested, tune: &Tune, lim: Limits) -> Geometry {
    let w = warps(req, icv, tune, lim, |_| None);
    Geometry {
        teams: teams(req, icv, tune, lim, w, None),
        warps: w,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use gomp_plugin::libgomp::target_args::{NUM_TEAMS, SUBSEQUENT_PARAM, THREAD_LIMIT};
    use std::ffi::c_void;

    /// What nvptx reads of the framework's decoding of `words` (a NULL-terminated
    /// target-argument array).
    fn decode(words: &[usize]) -> Requested {
        let v: Vec<*mut c_void> = words.iter().map(|&w| w as *mut c_void).collect();
        // SAFETY: `v` is NULL-terminated by each test and names no attribute block.
        let r = unsafe {
            LaunchRequest::decode(
                std::ptr::null_mut(),
                v.as_ptr(),
                gomp_plugin::libgomp::abi::TARGET_TYPE_NVIDIA_PTX as usize,
            )
        };
        Requested::from(&r)
    }

    #[test]
    fn decodes_inline_and_subsequent_values() {
        assert_eq!(decode(&[0]), Requested::default());
        let teams_inline = NUM_TEAMS | (100 << 16);
        let limit_next = THREAD_LIMIT | SUBSEQUENT_PARAM;
        assert_eq!(
            decode(&[teams_inline, limit_next, 7, 0]),
            Requested {
                teams: 100,
                thread_limit: 7
            }
        );
        // Values for one specific device (not ALL) are ignored.
        assert_eq!(
            decode(&[NUM_TEAMS | 3 | (5 << 16), 0]),
            Requested::default()
        );
        // Huge values clamp to INT_MAX.
        let big = NUM_TEAMS | SUBSEQUENT_PARAM;
        assert_eq!(decode(&[big, usize::MAX >> 1, 0]).teams, i32::MAX);
    }

    const H100: Limits = Limits {
        num_sms: 132,
        regs_per_sm: 65536,
        max_threads_per_block: 1024,
        regs_per_thread: 32,
        max_teams: 1 << 20,
    };
    const NONE: Requested = Requested {
        teams: 0,
        thread_limit: 0,
    };

    fn req(teams: i32, thread_limit: i32) -> Requested {
        Requested {
            teams,
            thread_limit,
        }
    }

    #[test]
    fn default_geometry_fills_the_device() {
        let t = Tune::default();
        assert_eq!(
            geometry(NONE, NONE, &t, H100),
            Geometry {
                teams: 8 * 132,
                warps: 8
            }
        );
        // With an occupancy answer, that many blocks per SM.
        assert_eq!(teams(NONE, NONE, &t, H100, 8, Some(3)), 3 * 132);
        // The register estimate ignores it when asked to.
        let regs = Tune {
            teams: Teams::Regs,
            ..t
        };
        assert_eq!(teams(NONE, NONE, &regs, H100, 8, Some(3)), 8 * 132);
        let times = Tune {
            teams: Teams::Times(2),
            ..t
        };
        assert_eq!(teams(NONE, NONE, &times, H100, 8, Some(3)), 6 * 132);
        let fixed = Tune {
            teams: Teams::Fixed(7),
            warps: Some(16),
            ..t
        };
        assert_eq!(
            geometry(NONE, NONE, &fixed, H100),
            Geometry {
                teams: 7,
                warps: 16
            }
        );
    }

    #[test]
    fn requests_are_honoured_within_limits() {
        let t = Tune::default();
        assert_eq!(
            geometry(req(4, 2), NONE, &t, H100),
            Geometry { teams: 4, warps: 2 }
        );
        let g = geometry(req(1 << 30, 64), NONE, &t, H100);
        assert_eq!(g.warps, 32);
        assert_eq!(g.teams, 2 * 132);
        // The clause wins over the ICV.
        assert_eq!(
            geometry(req(4, 2), req(100, 16), &t, H100),
            Geometry { teams: 4, warps: 2 }
        );
        let small = Limits {
            max_threads_per_block: 128,
            regs_per_thread: 255,
            ..H100
        };
        let g = geometry(NONE, NONE, &t, small);
        assert_eq!(g.warps, 4);
        assert!(g.teams >= 132);
        let odd = Limits {
            max_threads_per_block: 0,
            regs_per_thread: 0,
            ..H100
        };
        assert_eq!(geometry(NONE, NONE, &t, odd).warps, 1);
    }

    /// Resident blocks of `w` warps per SM for a kernel of `regs` registers per thread
    /// (H100: 64 Ki registers, 64 warps, 32 blocks per SM; registers allocated per warp
    /// in units of 256).
    fn h100_resident(regs: u32) -> impl Fn(u32) -> Option<u32> {
        move |w| {
            let per_warp = (regs * 32).next_multiple_of(256);
            Some((65536 / (per_warp * w)).min(64 / w).min(32))
        }
    }

    #[test]
    fn occupancy_warps_keep_the_most_warps_resident() {
        let t = Tune {
            warps: None,
            ..Tune::default()
        };
        // The default is GCC's 8 whatever the occupancy.
        assert_eq!(
            warps(NONE, NONE, &Tune::default(), H100, h100_resident(148)),
            8
        );
        // Light kernels: 8 warps already fill the SM; 8 stays.
        assert_eq!(warps(NONE, NONE, &t, H100, h100_resident(32)), 8);
        // 148 registers (GCC's simd STREAM kernels): 13 warps fit one block, 8 waste 5.
        let heavy = Limits {
            max_threads_per_block: 416,
            regs_per_thread: 148,
            ..H100
        };
        assert_eq!(warps(NONE, NONE, &t, heavy, h100_resident(148)), 13);
        // 72 registers: 7 warps x 4 blocks = 28 resident beat 8 x 3 = 24 (28 x 1 ties,
        // farther from 8).
        let mid = Limits {
            max_threads_per_block: 896,
            regs_per_thread: 72,
            ..H100
        };
        assert_eq!(warps(NONE, NONE, &t, mid, h100_resident(72)), 7);
        // No calculator: GCC's 8; a knob or a clause wins over the calculator.
        assert_eq!(warps(NONE, NONE, &t, heavy, |_| None), 8);
        let knob = Tune {
            warps: Some(4),
            ..t
        };
        assert_eq!(warps(NONE, NONE, &knob, heavy, h100_resident(148)), 4);
        assert_eq!(warps(req(0, 2), NONE, &t, heavy, h100_resident(148)), 2);
    }

    #[test]
    fn team_icvs_size_the_launch_when_no_clause_does() {
        let t = Tune::default();
        // OMP_NUM_TEAMS_ALL=1056 OMP_TEAMS_THREAD_LIMIT_ALL=16: all of it, even beyond
        // what is resident at once (3 blocks of 16 warps per SM here).
        let g = geometry(NONE, req(1056, 16), &t, H100);
        assert_eq!(
            g,
            Geometry {
                teams: 1056,
                warps: 16
            }
        );
        assert_eq!(teams(NONE, req(1056, 16), &t, H100, 16, Some(1)), 1056);
        // ... up to what the soft stacks allow, never below the resident blocks.
        let tight = Limits {
            max_teams: 500,
            ..H100
        };
        assert_eq!(teams(NONE, req(100_000, 0), &t, tight, 8, Some(3)), 500);
        let tighter = Limits {
            max_teams: 10,
            ..H100
        };
        assert_eq!(
            teams(NONE, req(100_000, 0), &t, tighter, 8, Some(3)),
            3 * 132
        );
        // Smaller ICVs are launched as they are.
        assert_eq!(
            geometry(NONE, req(7, 2), &t, H100),
            Geometry { teams: 7, warps: 2 }
        );
        // icvs=0 ignores them.
        let off = Tune { icvs: false, ..t };
        assert_eq!(
            geometry(NONE, req(7, 2), &off, H100),
            geometry(NONE, NONE, &off, H100)
        );
    }
}
