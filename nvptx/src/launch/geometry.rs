//! OpenMP kernel launch parameters: decoding libgomp's target-argument array and
//! choosing the grid (teams) and block (warps) for a kernel. Pure functions.

use std::ffi::c_void;

use gomp_plugin::libgomp::target_args::{self, DEVICE_ALL, NUM_TEAMS, THREAD_LIMIT};

/// What the `num_teams` and `thread_limit` clauses asked for; 0 means "not given".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requested {
    /// Requested number of teams.
    pub teams: i32,
    /// Requested threads per team (OpenMP threads, i.e. warps on nvptx).
    pub thread_limit: i32,
}

/// Decodes libgomp's NULL-terminated target-argument array.
///
/// # Safety
/// `args` must be NULL or point to a NULL-terminated array of pointer-sized words,
/// where an id word with `SUBSEQUENT_PARAM` set is followed by its value word.
pub unsafe fn decode_args(args: *const *mut c_void) -> Requested {
    let mut req = Requested::default();
    // SAFETY: forwarded caller guarantee.
    for a in unsafe { target_args::decode_ptr(args) } {
        if a.device != DEVICE_ALL {
            continue;
        }
        let val = a.value.clamp(i32::MIN as isize, i32::MAX as isize) as i32;
        match a.id {
            NUM_TEAMS => req.teams = val,
            THREAD_LIMIT => req.thread_limit = val,
            _ => {}
        }
    }
    req
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
}

/// Warps per block when `thread_limit` is not given (as GCC's plugin).
pub const DEFAULT_WARPS: i32 = 8;
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

/// Chooses the geometry: warps from `thread_limit` (default 8, capped by the kernel's
/// and the backend's limits); teams from `num_teams`, capped by how many blocks of that
/// size fit on the device at once (register budget), which is also the default.
pub fn geometry(req: Requested, lim: Limits) -> Geometry {
    let max_warps = (lim.max_threads_per_block / 32).clamp(1, MAX_WARPS);
    let warps = if req.thread_limit <= 0 {
        DEFAULT_WARPS
    } else {
        req.thread_limit
    }
    .min(max_warps);
    let regs_per_block = lim.regs_per_thread.max(1) * 32 * warps;
    let fit = (lim.regs_per_sm / regs_per_block).max(1) * lim.num_sms.max(1);
    let teams = if req.teams <= 0 || req.teams > fit {
        fit
    } else {
        req.teams
    };
    Geometry {
        teams: teams as u32,
        warps: warps as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(words: &[usize]) -> Requested {
        let v: Vec<*mut c_void> = words.iter().map(|&w| w as *mut c_void).collect();
        // SAFETY: `v` is NULL-terminated by each test.
        unsafe { decode_args(v.as_ptr()) }
    }

    #[test]
    fn decodes_inline_and_subsequent_values() {
        assert_eq!(decode(&[0]), Requested::default());
        let teams_inline = NUM_TEAMS | (100 << 16);
        let limit_next = THREAD_LIMIT | target_args::SUBSEQUENT_PARAM;
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
        let big = NUM_TEAMS | target_args::SUBSEQUENT_PARAM;
        assert_eq!(decode(&[big, usize::MAX >> 1, 0]).teams, i32::MAX);
        // SAFETY: NULL is allowed.
        assert_eq!(
            unsafe { decode_args(std::ptr::null()) },
            Requested::default()
        );
    }

    const H100: Limits = Limits {
        num_sms: 132,
        regs_per_sm: 65536,
        max_threads_per_block: 1024,
        regs_per_thread: 32,
    };

    #[test]
    fn default_geometry_fills_the_device() {
        let g = geometry(Requested::default(), H100);
        assert_eq!(
            g,
            Geometry {
                teams: 8 * 132,
                warps: 8
            }
        );
    }

    #[test]
    fn requests_are_honoured_within_limits() {
        let g = geometry(
            Requested {
                teams: 4,
                thread_limit: 2,
            },
            H100,
        );
        assert_eq!(g, Geometry { teams: 4, warps: 2 });
        let g = geometry(
            Requested {
                teams: 1 << 30,
                thread_limit: 64,
            },
            H100,
        );
        assert_eq!(g.warps, 32);
        assert_eq!(g.teams, 2 * 132);
        let small = Limits {
            max_threads_per_block: 128,
            regs_per_thread: 255,
            ..H100
        };
        let g = geometry(Requested::default(), small);
        assert_eq!(g.warps, 4);
        assert!(g.teams >= 132);
        let odd = Limits {
            max_threads_per_block: 0,
            regs_per_thread: 0,
            ..H100
        };
        assert_eq!(geometry(Requested::default(), odd).warps, 1);
    }
}
