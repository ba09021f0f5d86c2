//! The gcn launch protocol of docs/gcn-launch.md, the pure parts: the kernarg block and
//! output ring layout (§1, §2), grid choice from libgomp's target arguments (§3), the
//! packet's dimensions after the `GCN_*` overrides, LDS sizing, the ephemeral memory
//! (team arena + stacks) layout, and decoding the kernel's return value (§4). The side
//! effects (queue, memory, waiting, printing) are in `run.rs` and `console.rs`.
//!
//! Implemented from the specification, not from GCC's source; never run on AMD
//! hardware. Pure; thread-safe.

use crate::config::Config;
use gomp_plugin::libgomp::target_args::LaunchRequest;

// ---- §1 kernarg block (`struct kernargs`) ----

/// Offset of `dummy1`, the kernel's one explicit argument (tgt_vars / NULL).
pub const KA_ARG: usize = 0;
/// Offset of `out_ptr` (→ the output ring).
pub const KA_OUT_PTR: usize = 16;
/// Offset of `heap_ptr` (→ the module's heap).
pub const KA_HEAP_PTR: usize = 24;
/// Offset of `arena_ptr` (0 unless OpenMP).
pub const KA_ARENA_PTR: usize = 32;
/// Offset of `stack_ptr`.
pub const KA_STACK_PTR: usize = 40;
/// Offset of `int arena_size_per_team`.
pub const KA_ARENA_SIZE: usize = 48;
/// Offset of `int stack_size_per_thread`.
pub const KA_STACK_SIZE: usize = 52;
/// Size of the kernargs struct; the output ring follows it in our block.
pub const KERNARGS_SIZE: usize = 56;
/// Size of `struct output`.
pub const OUTPUT_SIZE: usize = 270_352;
/// The whole block: kernargs + output ring.
pub const KERNARG_BLOCK: usize = KERNARGS_SIZE + OUTPUT_SIZE;
/// Where a launch's target-variable table starts in a kernarg block that carries one
/// (libgomp 17's `session_allocate_target_var_table`, docs/gcn-launch.md §1a): right
/// after kernargs + output ring, 16-byte aligned (libgomp asserts the alignment).
pub const TABLE_OFFSET: usize = (KERNARG_BLOCK + 15) & !15;

/// The size of a kernarg block with room for a table of `table` bytes at
/// [`TABLE_OFFSET`]: rounded up to whole 4 KiB pages, so that one block serves every
/// table up to the page's end (4016 bytes, 502 entries, on its first page).
pub fn table_block_size(table: usize) -> usize {
    (TABLE_OFFSET + table.max(1)).div_ceil(4096) * 4096
}

/// The largest explicit kernarg segment the protocol allows (one pointer).
pub const MAX_EXPLICIT_KERNARGS: u32 = 8;

// ---- §2 output ring (`struct output`), offsets inside it ----

/// `int return_value`.
pub const OUT_RETURN: usize = 0;
/// `unsigned next_output`.
pub const OUT_NEXT: usize = 4;
/// `printf_data queue[1024]`.
pub const OUT_QUEUE: usize = 8;
/// Slots in the ring.
pub const RING_SLOTS: u32 = 1024;
/// Bytes per slot.
pub const SLOT_SIZE: usize = 264;
/// `unsigned consumed`.
pub const OUT_CONSUMED: usize = 270_344;
/// Slot fields: `int written`, `char msg[128]`, `int type`, the 128-byte union.
pub const SLOT_WRITTEN: usize = 0;
/// See [`SLOT_WRITTEN`].
pub const SLOT_MSG: usize = 4;
/// See [`SLOT_WRITTEN`].
pub const SLOT_TYPE: usize = 132;
/// See [`SLOT_WRITTEN`].
pub const SLOT_VALUE: usize = 136;
/// What the host stores in `return_value` before a launch.
pub const RETURN_INIT: u32 = 0xcafe_0000;

/// Offset of slot `i` (any index; taken modulo the ring) inside `struct output`.
pub fn slot_offset(i: u32) -> usize {
    OUT_QUEUE + (i % RING_SLOTS) as usize * SLOT_SIZE
}

// ---- §3 grid ----

/// The kind of a launch: what the arena and the overrides apply to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An OpenMP target region (`run`, `async_run`).
    OpenMp,
    /// An OpenACC compute region (`openacc_exec`, `openacc_async_exec`): no team arena.
    OpenAcc,
    /// `_init_array` / `_fini_array` (no overrides, no arena).
    Cdtor,
}

/// `{ndim, gdims, wdims}` as the device code's grid is described.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    /// Dimensions (1-3).
    pub ndim: u32,
    /// Grid sizes.
    pub gdims: [u32; 3],
    /// Work-group sizes (0: the default for `ndim`).
    pub wdims: [u32; 3],
}

/// The init/fini kernels' grid: `{3,{1,64,1},{1,64,1}}`.
pub const CDTOR_DIMS: Dims = Dims {
    ndim: 3,
    gdims: [1, 64, 1],
    wdims: [1, 64, 1],
};

/// The grid [`omp_grid`] chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// Launch with these dimensions.
    Run(Dims),
    /// Launch with these (no device-0 entry in the arguments: the stock plugin warns).
    Default(Dims),
    /// A legacy attribute block with a zero grid size: skip the kernel.
    Skip,
}

/// Turns libgomp's launch request (the framework's decoding of its target arguments)
/// into the grid, with `cu` compute units; `gfx900` and whether
/// `GCN_NUM_THREADS`/`GCN_NUM_WORKERS` is set select the Vega default of 4 threads.
pub fn omp_grid(req: &LaunchRequest, cu: u32, gfx900: bool, threads_env: bool) -> Grid {
    if let Some(a) = req.kernel_attributes {
        let d = Dims {
            ndim: a.ndim,
            gdims: a.gdims,
            wdims: a.wdims,
        };
        return if (1..=3).contains(&d.ndim) && !d.gdims[..d.ndim as usize].contains(&0) {
            Grid::Run(d)
        } else {
            Grid::Skip
        };
    }
    if !req.for_all_devices {
        return Grid::Default(Dims {
            ndim: 1,
            gdims: [1, 1, 1],
            wdims: [1, 1, 1],
        });
    }
    let teams = i64::from(req.teams).min(2 * cu as i64);
    let threads = i64::from(req.thread_limit).min(16);
    let dflt = if gfx900 && threads == 0 && !threads_env {
        4
    } else {
        16
    };
    let (t, w) = match (teams <= 0, threads <= 0) {
        (true, true) => (cu as i64, dflt),
        (true, false) => (cu as i64, threads),
        (false, true) => (teams, dflt),
        (false, false) => (teams, threads),
    };
    Grid::Run(Dims {
        ndim: 3,
        gdims: [t as u32, 64, w as u32],
        wdims: [1, 64, 16],
    })
}

/// The grid of an OpenACC launch (§3 "OpenACC", `gcn_exec`): libgomp's `dims`
/// (gangs, workers, vector; 0 = choose) with the nonzero compile-time `oacc_dims`
/// overriding them; then gangs=0 and workers=0 → (4*CU, 8), gangs=0 →
/// CU*(32/workers), workers=0 → CU*32/gangs clamped to 1-16. The vector length is
/// always 64: `{3, {gangs, 64, workers}, {1, 64, 16}}`.
pub fn acc_dims(dims: [u32; 3], oacc_dims: [i32; 3], cu: u32) -> Dims {
    let mut d = dims;
    for (v, o) in d.iter_mut().zip(oacc_dims) {
        if o > 0 {
            *v = o as u32;
        }
    }
    let (gangs, workers) = match (d[0], d[1]) {
        (0, 0) => (4 * cu, 8),
        (0, w) => (cu * (32 / w), w),
        (g, 0) => (g, (cu * 32 / g).clamp(1, 16)),
        (g, w) => (g, w),
    };
    Dims {
        ndim: 3,
        gdims: [gangs.max(1), 64, workers],
        wdims: [1, 64, 16],
    }
}

/// The most VGPRs a wavefront may have on `isa` (`gfx90a`-class chips have 512,
/// the others 256). **Not in the spec's sources as a table; from the ISA manuals.**
pub fn max_isa_vgprs(isa: &str) -> u32 {
    match isa {
        "gfx90a" | "gfx942" | "gfx950" | "gfx9-4-generic" => 512,
        _ => 256,
    }
}

/// Step 1 of `run_kernel`: caps the threads per team by the kernel's VGPR use.
pub fn cap_by_vgprs(mut d: Dims, vgprs: i32, max_vgprs: u32) -> Dims {
    if d.ndim == 3 && vgprs > 0 {
        let per = (vgprs as u32).next_multiple_of(4);
        let cap = (max_vgprs / per).max(1) * 4;
        d.gdims[2] = d.gdims[2].min(cap);
    }
    d
}

fn group_size(ndim: u32, grid: u32, wdim: u32) -> u32 {
    let w = if wdim != 0 {
        wdim
    } else {
        match ndim {
            1 => 64,
            2 => 8,
            _ => 4,
        }
    };
    w.min(grid)
}

/// The packet's dimensions: grid `(x, y, z)` and work-group `(x, y, z)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketDims {
    /// Dimensions (the setup word).
    pub ndim: u16,
    /// Grid sizes: x = teams, y = 64 lanes, z = threads per team.
    pub grid: [u32; 3],
    /// Work-group sizes.
    pub wg: [u16; 3],
}

/// Step 5 of `run_kernel`: the packet's dimensions from `d`, with the `GCN_NUM_TEAMS`
/// and `GCN_NUM_THREADS` overrides (`GCN_NUM_GANGS`/`GCN_NUM_WORKERS` as fallbacks)
/// for OpenMP and OpenACC launches.
pub fn packet_dims(d: &Dims, kind: Kind, cfg: &Config) -> PacketDims {
    let (ot, ow) = match kind {
        Kind::OpenMp | Kind::OpenAcc => (cfg.num_teams, cfg.num_threads),
        Kind::Cdtor => (None, None),
    };
    let gx = ot.unwrap_or(d.gdims[0]).max(1);
    let gy = d.gdims[1].max(1);
    let gz = ow.unwrap_or(d.gdims[2]).clamp(1, 16);
    PacketDims {
        ndim: d.ndim as u16,
        grid: [gx, gy, gz],
        wg: [
            group_size(d.ndim, gx, d.wdims[0]) as u16,
            group_size(d.ndim, gy, d.wdims[1]) as u16,
            gz.min(16) as u16,
        ],
    }
}

/// `GCN_LOWLAT_HEAP`: the LDS offset of the low-latency heap (GCC 14: 40; 15 and 16:
/// 48, after the new team-number word).
pub fn lowlat_heap_offset(gcc: u32) -> u32 {
    if gcc <= 14 {
        40
    } else {
        48
    }
}

/// The packet's `group_segment_size` (§2 LDS).
pub fn lds_size(meta_group: u32, teams: u32, cu: u32, pool: Option<u32>, gcc: u32) -> u32 {
    match pool {
        Some(v) => v.clamp(lowlat_heap_offset(gcc) + 8, 65536),
        None => {
            let tpc = teams / cu.max(1);
            meta_group.max(65536u32.checked_div(tpc).unwrap_or(65536))
        }
    }
}

/// The ephemeral memory of a launch: team arenas then stacks (§2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ephemeral {
    /// Arena bytes per team (0 unless OpenMP).
    pub arena: u32,
    /// Stack bytes per wavefront.
    pub stack: u32,
    /// Total bytes: `arena*teams + teams*threads*stack`.
    pub total: u64,
}

/// Sizes the ephemeral memory for `teams` × `threads` (the packet's grid x and z).
pub fn ephemeral(kind: Kind, teams: u32, threads: u32, cfg: &Config) -> Ephemeral {
    let arena = match kind {
        Kind::OpenMp => cfg.team_arena_size,
        Kind::OpenAcc | Kind::Cdtor => 0,
    };
    let (t, w) = (teams as u64, threads as u64);
    Ephemeral {
        arena,
        stack: cfg.stack_size,
        total: arena as u64 * t + t * w * cfg.stack_size as u64,
    }
}

/// How a kernel ended, from its `return_value` (§4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// 0xcafe....: returned normally.
    Normal,
    /// The device called `exit(code)`: the host exits with `code`.
    Exit(u8),
    /// The device called `abort` (signal byte 6): the host aborts.
    Abort,
    /// Another nonzero signal byte: the host aborts.
    Signal(u8),
    /// Neither 0xcafe nor 0xffff in the top half: corruption, the host aborts.
    Corrupt(u32),
}

/// Decodes `return_value`.
pub fn decode_return(v: u32) -> Ending {
    match v >> 16 {
        0xcafe => Ending::Normal,
        0xffff => match (v >> 8) as u8 {
            0 => Ending::Exit(v as u8),
            6 => Ending::Abort,
            s => Ending::Signal(s),
        },
        _ => Ending::Corrupt(v),
    }
}

/// The packet header of every dispatch: KERNEL_DISPATCH, system-scope acquire and
/// release fences, no barrier bit (0x1402).
pub const HEADER: u16 = 2 | 2 << 9 | 2 << 11;

#[cfg(test)]
mod tests {
    use super::*;
    use gomp_plugin::libgomp::abi::TARGET_TYPE_GCN;
    use gomp_plugin::libgomp::target_args::{decode, KernelAttributes};

    /// The framework's request for argument words `a`, with kernel-attribute blocks
    /// read by `read`.
    fn req<const N: usize>(
        a: [usize; N],
        read: impl Fn(usize) -> KernelAttributes,
    ) -> LaunchRequest {
        LaunchRequest::from_args(0, decode(a), TARGET_TYPE_GCN as usize, read)
    }
    fn none(_: usize) -> KernelAttributes {
        panic!("no attribute block expected")
    }

    fn run(teams: u32, threads: u32) -> Grid {
        Grid::Run(Dims {
            ndim: 3,
            gdims: [teams, 64, threads],
            wdims: [1, 64, 16],
        })
    }

    #[test]
    fn layout_matches_the_spec() {
        assert_eq!(KERNARG_BLOCK, 270_408);
        assert_eq!(TABLE_OFFSET, 270_416);
        assert_eq!(table_block_size(8), 274_432);
        assert_eq!(table_block_size(4016), 274_432);
        assert_eq!(table_block_size(4017), 278_528);
        assert_eq!(table_block_size(0) % 4096, 0);
        assert_eq!(OUT_QUEUE + RING_SLOTS as usize * SLOT_SIZE, OUT_CONSUMED);
        assert_eq!(OUT_CONSUMED + 8, OUTPUT_SIZE, "consumed + padding to 8");
        assert_eq!(slot_offset(1025), slot_offset(1));
        assert_eq!(SLOT_VALUE + 128, SLOT_SIZE);
        assert_eq!(HEADER, 0x1402);
    }

    #[test]
    fn target_arguments() {
        // NUM_TEAMS 3 and THREAD_LIMIT 8 in the id words (value << 16).
        let a = [3 << 16 | 0x100, 8 << 16 | 0x200, 0];
        assert_eq!(omp_grid(&req(a, none), 104, false, false), run(3, 8));
        // Caps: 2*CU teams, 16 threads; values in a subsequent word.
        let a = [0x80 | 0x100, 1000, 0x80 | 0x200, 99, 0];
        assert_eq!(omp_grid(&req(a, none), 10, false, false), run(20, 16));
        // teams 0 / threads 0 / negative: defaults (CU, 16), Vega 4 only when unset.
        let a = [0x100, 0x200, 0];
        assert_eq!(omp_grid(&req(a, none), 8, false, false), run(8, 16));
        assert_eq!(omp_grid(&req(a, none), 8, true, false), run(8, 4));
        assert_eq!(omp_grid(&req(a, none), 8, true, true), run(8, 16));
        let a = [(-1isize << 16) as usize | 0x100, 5 << 16 | 0x200, 0];
        assert_eq!(omp_grid(&req(a, none), 8, false, false), run(8, 5));
        let a = [6 << 16 | 0x100, 0];
        assert_eq!(omp_grid(&req(a, none), 8, false, false), run(6, 16));
        // Other devices' entries are skipped; no device-0 entry: the 1x1x1 default.
        let a = [5 << 16 | 0x105, 0];
        assert!(matches!(
            omp_grid(&req(a, none), 8, false, false),
            Grid::Default(Dims { ndim: 1, .. })
        ));
        // The legacy HSA attribute block.
        let d = Dims {
            ndim: 2,
            gdims: [4, 2, 0],
            wdims: [2, 1, 0],
        };
        let block = KernelAttributes {
            ndim: 2,
            gdims: [4, 2, 0],
            wdims: [2, 1, 0],
        };
        let a = [0x80 | 0x108, 0x1234, 0];
        let read = |p: usize| {
            assert_eq!(p, 0x1234);
            block
        };
        assert_eq!(omp_grid(&req(a, read), 8, false, false), Grid::Run(d));
        let zero = |_| KernelAttributes {
            gdims: [4, 0, 0],
            ..block
        };
        assert_eq!(omp_grid(&req(a, zero), 8, false, false), Grid::Skip);
        // A NULL block reads as no dimensions: skipped.
        let null = |_| KernelAttributes::default();
        assert_eq!(omp_grid(&req(a, null), 8, false, false), Grid::Skip);
    }

    #[test]
    fn packet_dimensions_lds_and_memory() {
        let mut cfg = Config::default();
        let d = Dims {
            ndim: 3,
            gdims: [8, 64, 16],
            wdims: [1, 64, 16],
        };
        let p = packet_dims(&d, Kind::OpenMp, &cfg);
        assert_eq!((p.ndim, p.grid, p.wg), (3, [8, 64, 16], [1, 64, 16]));
        let p = packet_dims(&CDTOR_DIMS, Kind::Cdtor, &cfg);
        assert_eq!((p.grid, p.wg), ([1, 64, 1], [1, 64, 1]));
        cfg.num_teams = Some(500);
        cfg.num_threads = Some(40);
        let p = packet_dims(&d, Kind::OpenMp, &cfg);
        assert_eq!((p.grid, p.wg), ([500, 64, 16], [1, 64, 16]), "no 2*CU cap");
        let p = packet_dims(&CDTOR_DIMS, Kind::Cdtor, &cfg);
        assert_eq!(p.grid, [1, 64, 1], "no overrides for init/fini");
        let one = Dims {
            ndim: 1,
            gdims: [1, 1, 1],
            wdims: [1, 1, 1],
        };
        let p = packet_dims(&one, Kind::Cdtor, &cfg);
        assert_eq!((p.ndim, p.grid, p.wg), (1, [1, 1, 1], [1, 1, 1]));
        // VGPR cap: 100 VGPRs on a 256-VGPR ISA: (256/100)*4 = 8 threads.
        assert_eq!(cap_by_vgprs(d, 100, 256).gdims[2], 8);
        assert_eq!(cap_by_vgprs(d, 48, 512).gdims[2], 16);
        assert_eq!(cap_by_vgprs(d, 0, 256).gdims[2], 16);
        // LDS.
        assert_eq!(lds_size(0x600, 8, 104, None, 16), 65536);
        assert_eq!(lds_size(0x600, 208, 104, None, 16), 32768);
        assert_eq!(lds_size(40000, 208, 104, None, 16), 40000);
        assert_eq!(lds_size(0x600, 8, 104, Some(0), 16), 56);
        assert_eq!(lds_size(0x600, 8, 104, Some(0), 14), 48);
        assert_eq!(lds_size(0x600, 8, 104, Some(4096), 15), 4096);
        // Ephemeral memory.
        let e = ephemeral(Kind::OpenMp, 3, 4, &Config::default());
        assert_eq!(e.total, 3 * 65536 + 3 * 4 * 32768);
        let e = ephemeral(Kind::Cdtor, 1, 1, &Config::default());
        assert_eq!((e.arena, e.total), (0, 32768));
    }

    #[test]
    fn openacc_grid() {
        let g = |d: Dims| (d.ndim, d.gdims, d.wdims);
        assert_eq!(
            g(acc_dims([0, 0, 0], [0; 3], 8)),
            (3, [32, 64, 8], [1, 64, 16])
        );
        assert_eq!(acc_dims([0, 4, 32], [0; 3], 8).gdims, [64, 64, 4]);
        assert_eq!(acc_dims([4, 0, 0], [0; 3], 8).gdims, [4, 64, 16]);
        assert_eq!(acc_dims([1000, 0, 0], [0; 3], 8).gdims, [1000, 64, 1]);
        assert_eq!(acc_dims([3, 5, 7], [0; 3], 8).gdims, [3, 64, 5]);
        // Compile-time dimensions win over libgomp's.
        assert_eq!(acc_dims([3, 5, 0], [2, 0, 64], 8).gdims, [2, 64, 5]);
        assert_eq!(acc_dims([0, 0, 0], [0, 2, 0], 8).gdims, [128, 64, 2]);
        // Overrides apply to OpenACC as to OpenMP; no arena.
        let cfg = Config {
            num_teams: Some(7),
            ..Config::default()
        };
        let p = packet_dims(&acc_dims([3, 5, 0], [0; 3], 8), Kind::OpenAcc, &cfg);
        assert_eq!((p.grid, p.wg), ([7, 64, 5], [1, 64, 5]));
        let e = ephemeral(Kind::OpenAcc, 3, 5, &Config::default());
        assert_eq!((e.arena, e.total), (0, 3 * 5 * 32768));
    }

    #[test]
    fn return_values() {
        assert_eq!(decode_return(RETURN_INIT), Ending::Normal);
        assert_eq!(decode_return(0xffff_0003), Ending::Exit(3));
        assert_eq!(decode_return(0xffff_0000 | 6 << 8 | 134), Ending::Abort);
        assert_eq!(decode_return(0xffff_0b00), Ending::Signal(11));
        assert_eq!(decode_return(0x1234_5678), Ending::Corrupt(0x1234_5678));
    }
}
