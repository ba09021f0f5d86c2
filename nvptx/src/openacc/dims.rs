//! Choosing the gang, worker and vector counts of an OpenACC launch.
//!
//! A dimension the compiler fixed (the image's function entry) wins; then the value
//! libgomp passes (clauses evaluated at run time); then `GOMP_OPENACC_DIM`; then a
//! default sized from the kernel's occupancy. On the GPU a gang is a block, a worker a
//! row of `vector` threads (`block = (vector, workers, 1)`).
//!
//! The default gang count, when nothing fixes it, is many times what the GPU holds at
//! once: twice the occupancy calculator's grid (the blocks of this size resident on the
//! whole device) times the block's warps, as GCC's plugin launches. Measured on the
//! H100 with GCC 16's OpenACC code (docs/autotune.md), one grid of resident gangs (what
//! this plugin launched before) made real loop nests up to 4.5x slower: a gang loop's
//! iterations are dealt to the gangs in blocks, so few gangs leave SMs idle behind the
//! slowest block. Where the gang count is the runtime's choice the tuner
//! (`openacc::gang_tuner`) also tries fewer gangs ([`gang_candidates`]), which is what a loop
//! far smaller than the GPU wants.

/// Gang, worker and vector counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    /// Blocks.
    pub gangs: u32,
    /// Rows of threads per block.
    pub workers: u32,
    /// Threads per row.
    pub vector: u32,
}

/// What decides the dimensions. Index 0 is gang, 1 worker, 2 vector; 0 means "not set".
#[derive(Clone, Copy, Debug, Default)]
pub struct Inputs {
    /// Fixed by the compiler.
    pub compiled: [u16; 3],
    /// Passed by libgomp for this launch.
    pub requested: [u32; 3],
    /// `GOMP_OPENACC_DIM` defaults (≤ 0: not set).
    pub defaults: [i32; 3],
}

/// The kernel's and device's limits.
#[derive(Clone, Copy, Debug, Default)]
pub struct AccLimits {
    /// Most threads per block the kernel can be launched with.
    pub max_threads_per_block: u32,
    /// Streaming multiprocessors (fallback when there is no occupancy calculator).
    pub num_sms: u32,
}

/// The occupancy calculator of one kernel: for a block-size limit (0: none), the
/// smallest grid that fills the device and the block size that does it
/// (`cuOccupancyMaxPotentialBlockSize`), or `None` when the driver has no calculator.
pub trait Occupancy {
    /// (grid, block) under `limit` threads per block.
    fn at(&self, limit: u32) -> Option<(u32, u32)>;
}

impl<F: Fn(u32) -> Option<(u32, u32)>> Occupancy for F {
    fn at(&self, limit: u32) -> Option<(u32, u32)> {
        self(limit)
    }
}

/// The dimensions of a launch and whether the runtime chose its gang count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// What to launch when nothing is tuned.
    pub dims: Dims,
    /// The gang count was left to the runtime (no compiled dimension, clause or
    /// `GOMP_OPENACC_DIM` gang value): the tuner may choose it.
    pub gangs_open: bool,
}

/// A launch the device cannot run with the dimensions the program fixed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimsError {
    /// More threads per block than the kernel allows.
    Threads(Dims, u32),
    /// More workers than named barriers, with vectors wider than a warp.
    Barriers(Dims),
}

/// Warp width, the default and smallest vector length.
pub const WARP: u32 = 32;
/// Most workers per gang the nvptx code generator supports.
pub const MAX_WORKERS: u32 = 32;
/// Most workers when the vector is wider than a warp: each worker then needs one of the
/// 16 hardware barriers, and barrier 0 is the gang's.
pub const MAX_WORKERS_WIDE: u32 = 15;

/// Picks the launch dimensions; `occ` is the kernel's occupancy calculator.
pub fn choose(inp: &Inputs, lim: &AccLimits, occ: &impl Occupancy) -> Result<Choice, DimsError> {
    let fixed: [u32; 3] = std::array::from_fn(|i| {
        if inp.compiled[i] != 0 {
            u32::from(inp.compiled[i])
        } else if inp.requested[i] != 0 {
            inp.requested[i]
        } else {
            inp.defaults[i].max(0) as u32
        }
    });
    let vector = if fixed[2] != 0 { fixed[2] } else { WARP };
    let max_threads = lim.max_threads_per_block.max(WARP);
    // The calculator's unlimited answer, when an open worker count was sized from it.
    let mut unlimited = None;
    let workers = if fixed[1] != 0 {
        fixed[1]
    } else {
        let o = occ.at(0);
        unlimited = Some(o);
        let block = o.map_or(max_threads, |(_, b)| b).min(max_threads);
        let cap = if vector > WARP {
            MAX_WORKERS_WIDE
        } else {
            MAX_WORKERS
        };
        (block / vector).clamp(1, cap)
    };
    let threads = workers.saturating_mul(vector);
    let gangs_open = fixed[0] == 0;
    let gangs = if !gangs_open {
        fixed[0]
    } else {
        // The calculator for blocks of this launch's size (GCC's plugin asks it with the
        // fixed worker and vector counts as the limit; an open worker count was sized
        // from the unlimited answer, which the limit would give again).
        let sized = unlimited.unwrap_or_else(|| occ.at(threads));
        let warps = (threads / WARP).max(1);
        match sized {
            // Twice the resident grid times the block's warps.
            Some((grid, block)) => 2 * grid.max(1) * (block / WARP).max(1),
            // No calculator: as if 2048 threads per SM were resident.
            None => 2 * lim.num_sms.max(1) * (2048 / threads.max(1)).max(1) * warps,
        }
    };
    let d = Dims {
        gangs,
        workers,
        vector,
    };
    if u64::from(workers) * u64::from(vector) > u64::from(max_threads) {
        return Err(DimsError::Threads(d, max_threads));
    }
    if vector > WARP && workers > MAX_WORKERS_WIDE {
        return Err(DimsError::Barriers(d));
    }
    Ok(Choice {
        dims: d,
        gangs_open,
    })
}

/// The gang counts the tuner tries for a launch the runtime sizes, the untuned one
/// first: `c.dims.gangs`, then a quarter, a sixteenth and a sixty-fourth of it, none
/// below `floor` gangs (one per SM). Never more gangs than the default: measured on the
/// H100 (docs/autotune.md), more never ran faster, while fewer won where each gang
/// costs something of its own: a gang reduction's combining step (a `+` reduction over
/// 2^24 doubles 3.7x faster with a quarter of the gangs), a gang-redundant part, or a
/// loop far smaller than the grid.
pub fn gang_candidates(c: &Choice, floor: u32) -> Vec<u32> {
    let mut out = vec![c.dims.gangs];
    for div in [4u32, 16, 64] {
        let g = c.dims.gangs / div;
        if g >= floor.max(1) && !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

impl DimsError {
    /// libgomp's message for launching `kernel` with these dimensions.
    pub fn message(&self, kernel: &str) -> String {
        match self {
            DimsError::Threads(d, max) => format!(
                "The Nvidia accelerator has insufficient resources to launch '{kernel}' with num_workers = {} and vector_length = {}; recompile the program with 'num_workers = x and vector_length = y' on that offloaded region or '-fopenacc-dim=:x:y' where x * y <= {max}.",
                d.workers, d.vector
            ),
            DimsError::Barriers(d) => format!(
                "The Nvidia accelerator has insufficient barrier resources to launch '{kernel}' with num_workers = {} and vector_length = {}; recompile the program with 'num_workers = x' on that offloaded region or '-fopenacc-dim=:x:' where x <= {MAX_WORKERS_WIDE}; or, recompile the program with 'vector_length = 32' on that offloaded region or '-fopenacc-dim=::32'.",
                d.workers, d.vector
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIM: AccLimits = AccLimits {
        max_threads_per_block: 1024,
        num_sms: 132,
    };

    /// An H100-like calculator for a kernel that fits two 1024-thread blocks per SM:
    /// resident blocks per SM = 2048 / block (at most 32), 132 SMs.
    fn h100(limit: u32) -> Option<(u32, u32)> {
        let block = if limit == 0 { 1024 } else { limit.min(1024) };
        Some((132 * (2048 / block).min(32), block))
    }

    fn dims(
        compiled: [u16; 3],
        requested: [u32; 3],
        defaults: [i32; 3],
    ) -> Result<Dims, DimsError> {
        choose(
            &Inputs {
                compiled,
                requested,
                defaults,
            },
            &LIM,
            &h100,
        )
        .map(|c| c.dims)
    }

    #[test]
    fn compiler_wins_over_clauses_and_environment() {
        let d = dims([1, 1, 32], [4, 4, 128], [8, 8, 128]).unwrap();
        assert_eq!((d.gangs, d.workers, d.vector), (1, 1, 32));
    }

    #[test]
    fn clauses_win_over_environment() {
        let d = dims([0, 0, 128], [1, 2, 0], [0, 4, 0]).unwrap();
        assert_eq!((d.gangs, d.workers, d.vector), (1, 2, 128));
    }

    #[test]
    fn given_dimensions_are_launched_exactly() {
        let d = dims([0; 3], [1000, 4, 64], [0; 3]).unwrap();
        assert_eq!((d.gangs, d.workers, d.vector), (1000, 4, 64));
        let c = choose(
            &Inputs {
                requested: [1000, 4, 64],
                ..Inputs::default()
            },
            &LIM,
            &h100,
        )
        .unwrap();
        assert!(!c.gangs_open);
        let env = choose(
            &Inputs {
                defaults: [4224, 0, 0],
                ..Inputs::default()
            },
            &LIM,
            &h100,
        )
        .unwrap();
        assert_eq!(env.dims.gangs, 4224);
        assert!(!env.gangs_open);
    }

    #[test]
    fn environment_fills_what_is_left() {
        let d = dims([1, 0, 128], [0; 3], [0, 2, 0]).unwrap();
        assert_eq!(d.workers, 2);
    }

    #[test]
    fn default_gangs_are_many_waves() {
        // 32 workers of 32: 2 blocks per SM, 264 resident; 2 * 264 * 32 warps.
        let c = choose(&Inputs::default(), &LIM, &h100).unwrap();
        assert_eq!(
            (c.dims.gangs, c.dims.workers, c.dims.vector),
            (16896, 32, 32)
        );
        assert!(c.gangs_open);
        // 16 workers fixed by the compiler: the calculator asked for 512-thread
        // blocks (4 per SM, 528 resident): 2 * 528 * 16.
        let c = choose(
            &Inputs {
                compiled: [0, 16, 32],
                ..Inputs::default()
            },
            &LIM,
            &h100,
        )
        .unwrap();
        assert_eq!(c.dims.gangs, 16896);
        // A register-heavy kernel: one 512-thread block per SM.
        let heavy = |limit: u32| Some((132, if limit == 0 { 512 } else { limit.min(512) }));
        let c = choose(
            &Inputs {
                compiled: [0, 16, 32],
                ..Inputs::default()
            },
            &LIM,
            &heavy,
        )
        .unwrap();
        assert_eq!(c.dims.gangs, 4224);
        assert_eq!(gang_candidates(&c, 132), [4224, 1056, 264]);
    }

    #[test]
    fn defaults_fit_the_block() {
        let d = dims([1, 0, 128], [0; 3], [0; 3]).unwrap();
        assert_eq!((d.workers, d.vector), (8, 128));
        let d = dims([0; 3], [0; 3], [0; 3]).unwrap();
        assert_eq!((d.workers, d.vector), (32, 32));
        let small = AccLimits {
            max_threads_per_block: 256,
            num_sms: 10,
        };
        let none = |_: u32| None;
        let c = choose(&Inputs::default(), &small, &none).unwrap();
        assert_eq!((c.dims.workers, c.dims.vector), (8, 32));
        // 8 resident blocks of 256 threads per SM: 80 at once, 2 * 80 * 8 launched.
        assert_eq!(c.dims.gangs, 1280);
    }

    #[test]
    fn candidates_are_fewer_gangs_than_the_default() {
        let c = choose(&Inputs::default(), &LIM, &h100).unwrap();
        assert_eq!(gang_candidates(&c, 132), [16896, 4224, 1056, 264]);
        // Blocks of one warp (32 resident per SM): down to one gang per SM.
        let c = choose(
            &Inputs {
                compiled: [0, 1, 32],
                ..Inputs::default()
            },
            &LIM,
            &h100,
        )
        .unwrap();
        assert_eq!(c.dims.gangs, 8448);
        assert_eq!(gang_candidates(&c, 132), [8448, 2112, 528, 132]);
        // A default of a few gangs per SM: nothing else to try.
        let one = Choice {
            dims: Dims {
                gangs: 264,
                workers: 32,
                vector: 32,
            },
            gangs_open: true,
        };
        assert_eq!(gang_candidates(&one, 132), [264]);
    }

    #[test]
    fn fixed_dimensions_that_cannot_run_are_refused() {
        assert!(matches!(
            dims([0, 32, 64], [0; 3], [0; 3]),
            Err(DimsError::Threads(_, 1024))
        ));
        assert!(matches!(
            dims([0, 16, 64], [0; 3], [0; 3]),
            Err(DimsError::Barriers(_))
        ));
        let e = dims([0, 16, 64], [0; 3], [0; 3]).unwrap_err().message("k");
        assert!(e.contains("insufficient barrier resources"), "{e}");
    }
}
