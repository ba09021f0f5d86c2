//! Choosing the gang, worker and vector counts of an OpenACC launch.
//!
//! A dimension the compiler fixed (the image's function entry) wins; then the value
//! libgomp passes (clauses evaluated at run time); then `GOMP_OPENACC_DIM`; then a
//! default sized from the kernel's occupancy. On the GPU a gang is a block, a worker a
//! row of `vector` threads (`block = (vector, workers, 1)`).

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
pub struct Limits {
    /// Most threads per block the kernel can be launched with.
    pub max_threads_per_block: u32,
    /// The occupancy calculator's (minimum grid for full occupancy, block size), if the
    /// driver has one.
    pub occupancy: Option<(u32, u32)>,
    /// Streaming multiprocessors (fallback when there is no occupancy calculator).
    pub num_sms: u32,
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

/// Picks the launch dimensions.
pub fn choose(inp: &Inputs, lim: &Limits) -> Result<Dims, DimsError> {
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
    let workers = if fixed[1] != 0 {
        fixed[1]
    } else {
        let block = lim
            .occupancy
            .map_or(max_threads, |(_, b)| b)
            .min(max_threads);
        let cap = if vector > WARP {
            MAX_WORKERS_WIDE
        } else {
            MAX_WORKERS
        };
        (block / vector).clamp(1, cap)
    };
    let gangs = if fixed[0] != 0 {
        fixed[0]
    } else {
        match lim.occupancy {
            Some((grid, block)) => grid.max(1) * (block / (workers * vector)).max(1),
            None => lim.num_sms.max(1) * 2,
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
    Ok(d)
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

    const LIM: Limits = Limits {
        max_threads_per_block: 1024,
        occupancy: Some((132, 1024)),
        num_sms: 132,
    };

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
        )
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
    fn environment_fills_what_is_left() {
        let d = dims([1, 0, 128], [0; 3], [0, 2, 0]).unwrap();
        assert_eq!(d.workers, 2);
    }

    #[test]
    fn defaults_fit_the_block() {
        let d = dims([1, 0, 128], [0; 3], [0; 3]).unwrap();
        assert_eq!((d.workers, d.vector), (8, 128));
        let d = dims([0; 3], [0; 3], [0; 3]).unwrap();
        assert_eq!((d.workers, d.vector), (32, 32));
        assert_eq!(d.gangs, 132);
        let small = Limits {
            max_threads_per_block: 256,
            occupancy: None,
            num_sms: 10,
        };
        let d = choose(&Inputs::default(), &small).unwrap();
        assert_eq!((d.gangs, d.workers, d.vector), (20, 8, 32));
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
