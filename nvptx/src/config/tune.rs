//! `GOMP_NVPTX_TUNE`: experiment knobs for the launch shape, the JIT and the copies,
//! read once per process with every other setting (`config`), and the switch
//! of the per-kernel shape tuner. The knobs exist to measure what the plugin's choices
//! buy (bench/device-run.sh's KNOBS); the defaults are what measured best for every
//! kernel class of bench/kernel_bench.c. A comma-separated list of `key=value`; the
//! keys, their values, defaults and what they set are `KEYS`, the one list of them.
//!
//! `autotune` is not an experiment knob but the switch of a feature that is on by
//! default. What it does shows in `GOMP_DEBUG=1` lines (`kernel NAME: autotune: chose
//! warps=occupancy 132x416 by trials (medians of 3: warps=8 132x256 1.234 ms, ...);
//! stored in PATH`, `... kept warps=8 132x256 untried: 0.050 ms per launch, under 0.100
//! ms`, `... remembered from an earlier run (...)`, `... ignoring PATH: why`, and at the
//! end of each tuned launch line `; autotune: trial of warps=16`, `; autotune:
//! warps=occupancy` or `; autotune: untuned until the trials`) and in the
//! `GOMP_NVPTX_PROFILE=1` table (an `autotune: ...` line with the same text under the
//! kernel's row). With `autotune=0` the launch lines are as without the tuner.
//!
//! Owned by the process-wide `Config`; plain data, `Sync`.

use gomp_plugin::settings::{apply_list, Entry, Value};

/// How many teams to launch when neither the clause nor the ICV says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Teams {
    /// The blocks resident at once by the occupancy calculator (register estimate
    /// where the driver has none).
    Occupancy,
    /// The register estimate of GCC's plugin: registers per SM / registers per block.
    Regs,
    /// K times the resident blocks.
    Times(u32),
    /// Exactly N.
    Fixed(u32),
}

/// The calling threads' streams and where deferred copies go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadStream {
    /// Blocking streams (ordered with CUDA's legacy default stream); deferred copies on
    /// the thread's stream.
    Blocking,
    /// Non-blocking streams; deferred copies on the thread's stream.
    NonBlocking,
    /// Non-blocking streams; deferred copies on CUDA's legacy default stream.
    Legacy,
}

/// The JIT's default global-load cache mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheMode {
    /// Cache in L1 and L2 (`-dlcm=ca`).
    Ca,
    /// Cache in L2 only (`-dlcm=cg`).
    Cg,
}

/// Whether kernels choose their launch shape by trials (`launch::autotune`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Autotune {
    /// Every launch takes the shape the knobs give.
    Off,
    /// Trials, or the choice remembered from an earlier run.
    On,
    /// Trials even where a choice is remembered (which they replace).
    Fresh,
}

/// The knobs; `Tune::default()` is the plugin's choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tune {
    /// Default warps per team (`None`: the occupancy choice). The default is 8: the
    /// occupancy choice speeds most kernels of bench/kernel_bench.c up but slows some
    /// (the simd n-body, the register-light Fortran simd triad and dot: bench/results/
    /// kernel-sweep.md, kernels.md), so it stays a knob.
    pub warps: Option<u32>,
    /// Default teams.
    pub teams: Teams,
    /// JIT register cap.
    pub maxrreg: Option<u32>,
    /// JIT cache mode.
    pub dlcm: Option<CacheMode>,
    /// Shared-memory carveout, percent.
    pub carveout: Option<u32>,
    /// Whether the device's team ICVs size the launch.
    pub icvs: bool,
    /// Largest host-to-device copy that may return before its DMA has ended (0: none).
    pub defer: usize,
    /// Most bytes a synchronous run reads ahead for the device-to-host copies after it
    /// (`device::copy::read_ahead`; 0: none).
    pub readahead: usize,
    /// The threads' streams.
    pub tstream: ThreadStream,
    /// When the memory pool makes its first (slow) allocation ([`PoolWarm`]).
    pub poolwarm: PoolWarm,
    /// Kernels looked up at their first launch instead of by `load_image`
    /// (`image::Kernel`); never in a program that uses reverse offload.
    pub lazykernels: bool,
    /// A page-locked block kept from device open to close (`host/pin_keep.rs`).
    pub pinkeep: PinKeepAt,
    /// Per-kernel launch-shape tuning.
    pub autotune: Autotune,
    /// OpenACC launches whose gang count the runtime chooses: `None` the tuner's
    /// candidates, `Some(k)` the default gang count over `k` from the first launch,
    /// untimed (`openacc::gang_tuner`; for checking that every shape gives the same results).
    pub accgangs: Option<u32>,
    /// Threads of the JIT's compiler for every image (`None`: the driver's single
    /// thread; `image::link::split_threads`).
    pub jitthreads: Option<u32>,
    /// Bytes of each pinned-pool shard's first chunk (`host::pinned_pool::Shape`).
    pub pinnedchunk: usize,
    /// Shards of the pinned pool's small blocks (`None`: one per processor, up to 16).
    pub pinnedshards: Option<usize>,
    /// Whether page-locked memory is asked on the device's NUMA node (`host::numa`).
    pub pinnednuma: bool,
    /// In programs that use reverse offload, how GCC's device-side request is rewritten
    /// (`image::rev_spin`).
    pub revspin: RevSpin,
    /// Nanoseconds between a reverse-offload request's flag and the device's first
    /// look for the answer (scoped form only; `image::rev_spin`).
    pub revdelay: u32,
    /// How a synchronous kernel launch and a small copy to the host through the
    /// thread's ring are waited for (`device::copy::ring::Ring::wait`).
    pub syncwait: SyncWait,
    /// The values given to the copy paths' own knobs ([`PathKnob`]; read by
    /// [`Tune::size`]).
    pub paths: PathSizes,
}

/// A byte-size key of `GOMP_NVPTX_TUNE` that one copy path (`device/copy/`) reads with
/// [`Tune::size`]: its name, bounds, default and doc line are a `static` here, in the
/// settings ([`PATH_KNOBS`] lists them), which the path names as its knob; parsed with
/// the other keys, its row at the end of the README's table of them. Accepts `0..=max`
/// bytes as [`gomp_plugin::settings::parse_size`] reads them. Plain data; `Sync`.
#[derive(Debug, PartialEq, Eq)]
pub struct PathKnob {
    /// The key.
    pub name: &'static str,
    /// Greatest value accepted (the least is 0).
    pub max: usize,
    /// The value when the key is not given.
    pub default: usize,
    /// The default as the docs and the warnings write it (`16k`); a unit test checks
    /// that it reads as `default`.
    pub default_text: &'static str,
    /// What it sets, one line (Markdown, for the README's table).
    pub doc: &'static str,
}

impl PathKnob {
    /// The knob as a settings entry storing its value in a `usize` (parsing, the docs'
    /// table).
    fn entry(&self) -> Entry<usize> {
        Entry {
            name: self.name,
            value: Value::Bytes {
                min: 0,
                max: self.max,
                set: |s, n| *s = n,
            },
            default: self.default_text,
            doc: self.doc,
        }
    }
}

/// Most copy-path knobs [`PathSizes`] holds (a unit test of `device/copy` checks that
/// the paths name no more).
pub const MAX_PATH_KNOBS: usize = 8;

/// The copy-path knobs given in `GOMP_NVPTX_TUNE` and their values (a knob not given
/// has no slot: [`Tune::size`] answers its default). Plain data, `Copy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathSizes([Option<(&'static PathKnob, usize)>; MAX_PATH_KNOBS]);

impl PathSizes {
    /// Sets `knob`'s value (its slot, else the first free one).
    fn set(&mut self, knob: &'static PathKnob, n: usize) -> Result<(), String> {
        let slot = self
            .0
            .iter()
            .position(|s| s.is_some_and(|(k, _)| std::ptr::eq(k, knob)))
            .or_else(|| self.0.iter().position(Option::is_none))
            .ok_or("too many copy-path knobs")?;
        self.0[slot] = Some((knob, n));
        Ok(())
    }
}

/// How a synchronous kernel launch (`GOMP_OFFLOAD_run`) and a small synchronous copy to
/// the host through the thread's page-locked ring are waited for
/// (`device::copy::ring::Ring::wait`). `Copy`, plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncWait {
    /// `cuStreamSynchronize`.
    Sync,
    /// A word the stream writes after the kernel or the copy (`cuStreamWriteValue32`),
    /// polled by the host (the stream's state asked every few polls;
    /// `cuStreamSynchronize` after `device::copy::ring`'s `SPIN_LIMIT`).
    Flag,
    /// The word for a kernel launch, `cuStreamSynchronize` for a copy (on an H200 the
    /// flag made 4 KiB copies to the host up to 2x slower, while a launch waited by it
    /// was as fast or faster on both the H100 and the H200).
    Run,
    /// Measured on the device (the default): each way for a launch's wait and for a
    /// copy's, at the first synchronous wait of a thread that has its ring; the faster
    /// of each is kept (`device::wait_choice`), `Run` until then.
    Auto,
}

impl SyncWait {
    /// Whether a wait for a kernel launch (`kernel`) or for a copy polls the word
    /// (`Auto` before its measurement: as `Run`).
    #[inline]
    pub fn by_flag(self, kernel: bool) -> bool {
        match self {
            SyncWait::Sync => false,
            SyncWait::Flag => true,
            SyncWait::Run | SyncWait::Auto => kernel,
        }
    }
}

/// How GCC's device-side reverse-offload request is rewritten before the JIT link
/// (`image::rev_spin` does it). `Copy`, plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RevSpin {
    /// As GCC wrote it.
    Off,
    /// The wait polls with volatile loads and fences once after the loop.
    Wait,
    /// The whole request in sm_70's scoped release/acquire forms on devices of compute
    /// capability 7.0 or more (elsewhere, and where the object cannot take them, `Wait`).
    AcqRel,
}

/// Default `revdelay` (ns).
pub const DEFAULT_REVDELAY: u32 = 300;

/// When the kept page-locked block is made (`host/pin_keep.rs`). `Copy`, plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinKeepAt {
    /// Never.
    Off,
    /// On a thread of its own started at device open.
    Open,
    /// On a thread of its own started when the device's first image is loaded.
    Load,
}

/// When the device-memory pool makes its first allocation, which sets the pool up (the
/// driver takes milliseconds). `Copy`, plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolWarm {
    /// In the first allocation that needs the pool.
    Off,
    /// On a thread of its own started at device open.
    Open,
    /// On a thread of its own started by the device's first allocation; allocations
    /// made before that thread is done take plain `cuMemAlloc` memory.
    First,
    /// As `First`, but started by the first allocation made after a kernel of the
    /// device has completed (or after [`LATER_DIRECT`] plain allocations): a program's
    /// first region runs with no warm-up beside it.
    Later,
}

/// Plain allocations after which `poolwarm=later` starts the warm-up even though no
/// kernel has completed.
pub const LATER_DIRECT: usize = 16;

/// Warps per block when no `thread_limit` is given and no occupancy calculator
/// answers (as GCC's plugin); among warp counts that keep equally many warps resident,
/// the one nearest to this.
pub const DEFAULT_WARPS: u32 = 8;

/// Smallest pageable copy that goes through a bounce buffer (`device::copy::bounce` reads it as
/// its `MIN_BYTES`; the `bounce` key's doc names it).
pub const BOUNCE_MIN: usize = 16 << 10;

/// Default `bounce`: the largest pageable copy that goes through a bounce buffer
/// (`device::copy::bounce` reads it as its `DEFAULT_LIMIT`).
pub const DEFAULT_BOUNCE: usize = 1 << 20;

/// Largest host-to-device copy that returns before its DMA has ended, by default: the
/// largest that goes through a bounce buffer.
pub const DEFAULT_DEFER: usize = DEFAULT_BOUNCE;

/// `ring`: copies below this size take the ring path (`device/copy/ring.rs`). Read-only
/// data.
pub static RING: PathKnob = PathKnob {
    name: "ring",
    max: 64 << 10,
    default: BOUNCE_MIN,
    default_text: "16k",
    doc: "copies below this size go through the thread's page-locked ring \
          (`nvptx/src/device/copy/ring.rs`); 0: none",
};

/// `bounce`: the largest copy the bounce path takes, the size of its buffers
/// (`device/copy/bounce.rs`). Read-only data.
pub static BOUNCE: PathKnob = PathKnob {
    name: "bounce",
    max: 16 << 20,
    default: DEFAULT_BOUNCE,
    default_text: "1m",
    doc: "largest pageable copy (from 16 KiB) made through a page-locked bounce buffer \
          (`nvptx/src/device/copy/bounce.rs`); 0: none",
};

/// The copy paths' own knobs, in the order of the paths that read them
/// (`device::copy`'s `PATHS`; a unit test there checks that they are the paths' own):
/// what `GOMP_NVPTX_TUNE`'s parser and the README's table of its keys add to [`KEYS`].
/// Read-only data.
pub static PATH_KNOBS: [&PathKnob; 2] = [&RING, &BOUNCE];

/// Default `pinnedchunk`: bytes of the first chunk of each shard of the page-locked pool
/// (`host::pinned_pool` reads it as its `FIRST_CHUNK`).
pub const DEFAULT_PINNED_CHUNK: usize = 64 << 10;

/// Greatest `pinnedchunk`: the pool's largest small-block chunk (`host::pinned_pool`
/// reads it as its `CHUNK`).
pub const PINNED_CHUNK_MAX: usize = 4 << 20;

/// Greatest `pinnedshards` (`host::pinned_pool` reads it as its `MAX_SHARDS`).
pub const PINNED_SHARDS_MAX: usize = 64;

/// Default `pinnedshards` (its `None`): one shard per processor, up to 16
/// (`host::pinned_pool` reads it for its default shape). Asks the OS for the processor
/// count; thread-safe.
pub fn default_pinned_shards() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get().min(16))
}

/// Most bytes a run reads ahead by default: copies of that size are still small next
/// to a kernel, and a read-ahead no copy uses costs little.
pub const DEFAULT_READAHEAD: usize = 16 << 10;

impl Default for Tune {
    fn default() -> Self {
        Tune {
            warps: Some(DEFAULT_WARPS),
            teams: Teams::Occupancy,
            maxrreg: None,
            dlcm: None,
            carveout: None,
            icvs: true,
            defer: DEFAULT_DEFER,
            readahead: DEFAULT_READAHEAD,
            tstream: ThreadStream::Blocking,
            poolwarm: PoolWarm::First,
            lazykernels: false,
            pinkeep: PinKeepAt::Load,
            autotune: Autotune::On,
            accgangs: None,
            jitthreads: None,
            pinnedchunk: DEFAULT_PINNED_CHUNK,
            pinnedshards: None,
            pinnednuma: true,
            revspin: RevSpin::AcqRel,
            revdelay: DEFAULT_REVDELAY,
            syncwait: SyncWait::Auto,
            paths: PathSizes::default(),
        }
    }
}

/// What [`KEYS`] fill: the knobs, and what decides `autotune` when it is not given.
struct Parsing {
    t: Tune,
    fixed_shape: bool,
    autotune: Option<Autotune>,
}

fn number(v: &str, lo: u32, hi: u32) -> Option<u32> {
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (lo..=hi).contains(n))
}

/// Every key of `GOMP_NVPTX_TUNE`: its values, its default and what it sets.
static KEYS: [Entry<Parsing>; 21] = [
    Entry {
        name: "autotune",
        value: Value::Word(&["0", "1", "fresh"], |p, i| {
            p.autotune = Some([Autotune::Off, Autotune::On, Autotune::Fresh][i])
        }),
        default: "1, or 0 when `warps` or `teams` is given",
        doc: "per-kernel launch-shape tuning ([docs/autotune.md](docs/autotune.md)): `0` \
              off; `1` on, starting from a choice remembered from an earlier run; `fresh` \
              on, trying again and replacing the remembered choice",
    },
    Entry {
        name: "accgangs",
        value: Value::Parsed("`trial`, 1, 4, 16 or 64", |p, v| {
            p.t.accgangs = match v.trim() {
                "trial" => None,
                v => Some(
                    number(v, 1, 64)
                        .filter(|k| [1, 4, 16, 64].contains(k))
                        .ok_or("expected trial, 1, 4, 16 or 64")?,
                ),
            };
            Ok(())
        }),
        default: "trial",
        doc: "OpenACC launches whose gang count the runtime chooses ([docs/autotune.md](docs/autotune.md)): \
              `trial`: the tuner tries the default, a quarter, a sixteenth and a sixty-fourth \
              of it (at least one gang per SM) and keeps the fastest; K (1, 4, 16 or 64): the \
              default over K (at least 1) from the first launch, untimed: every shape the tuner \
              may choose can be run on purpose, to check that it gives the same results",
    },
    Entry {
        name: "warps",
        value: Value::Parsed("`occupancy` or 1..32", |p, v| {
            p.fixed_shape = true;
            p.t.warps = match v.trim() {
                "occupancy" => None,
                _ => Some(number(v, 1, 32).ok_or("expected occupancy or 1..32")?),
            };
            Ok(())
        }),
        default: "8",
        doc: "warps per team when neither `thread_limit` nor `OMP_TEAMS_THREAD_LIMIT` gives \
              one: that number, or (`occupancy`) the count that keeps the most warps resident \
              per SM (the occupancy calculator; nearest to 8 among equals; 8 where the driver \
              has no calculator)",
    },
    Entry {
        name: "teams",
        value: Value::Parsed(
            "`occupancy`, `regs`, K`x` (K: 1..64) or 1..1048576",
            |p, v| {
                p.fixed_shape = true;
                let bad = "expected occupancy, regs, Kx (K = 1..64) or 1..1048576";
                p.t.teams = match v.trim() {
                    "occupancy" => Teams::Occupancy,
                    "regs" => Teams::Regs,
                    v => match v.strip_suffix('x') {
                        Some(k) => Teams::Times(number(k, 1, 64).ok_or(bad)?),
                        None => Teams::Fixed(number(v, 1, 1 << 20).ok_or(bad)?),
                    },
                };
                Ok(())
            },
        ),
        default: "occupancy",
        doc: "teams when neither `num_teams` nor `OMP_NUM_TEAMS` gives them: the occupancy \
              calculator's resident blocks, the register estimate (`regs`, GCC's plugin), K \
              times the resident blocks, or N",
    },
    Entry {
        name: "maxrreg",
        value: Value::Number {
            min: 16,
            max: 255,
            set: |p, n| p.t.maxrreg = Some(n as u32),
        },
        default: "none",
        doc: "JIT register cap per thread (`CU_JIT_MAX_REGISTERS`)",
    },
    Entry {
        name: "dlcm",
        value: Value::Word(&["ca", "cg"], |p, i| {
            p.t.dlcm = Some([CacheMode::Ca, CacheMode::Cg][i])
        }),
        default: "the driver's",
        doc: "JIT default global-load cache mode (`CU_JIT_CACHE_MODE`)",
    },
    Entry {
        name: "carveout",
        value: Value::Number {
            min: 0,
            max: 100,
            set: |p, n| p.t.carveout = Some(n as u32),
        },
        default: "the driver's",
        doc: "preferred shared-memory carveout, percent \
              (`CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`)",
    },
    Entry {
        name: "icvs",
        value: Value::Word(&["0", "1"], |p, i| p.t.icvs = i == 1),
        default: "1",
        doc: "size the launch by the device's `OMP_NUM_TEAMS`/`OMP_TEAMS_THREAD_LIMIT` ICVs",
    },
    Entry {
        name: "defer",
        value: Value::Bytes {
            min: 0,
            max: 16 << 20,
            set: |p, n| p.t.defer = n,
        },
        default: "1m",
        doc: "largest host-to-device copy that returns before its DMA has ended \
              ([docs/copy-ordering.md](docs/copy-ordering.md)); 0: every copy completes before returning",
    },
    Entry {
        name: "readahead",
        value: Value::Bytes {
            min: 0,
            max: 1 << 20,
            set: |p, n| p.t.readahead = n,
        },
        default: "16k",
        doc: "most bytes a synchronous run reads ahead, in its own wait, for the \
              device-to-host copies that follow it (`nvptx/src/device/copy/read_ahead.rs`); 0: none",
    },
    Entry {
        name: "tstream",
        value: Value::Word(&["blocking", "nonblocking", "legacy"], |p, i| {
            p.t.tstream = [
                ThreadStream::Blocking,
                ThreadStream::NonBlocking,
                ThreadStream::Legacy,
            ][i]
        }),
        default: "blocking",
        doc: "the threads' streams: blocking streams with deferred copies on them, \
              non-blocking ones likewise, or non-blocking ones with deferred copies on CUDA's \
              legacy default stream (as the stock plugin's copies)",
    },
    Entry {
        name: "poolwarm",
        value: Value::Word(&["0", "1", "first", "later"], |p, i| {
            p.t.poolwarm = [
                PoolWarm::Off,
                PoolWarm::Open,
                PoolWarm::First,
                PoolWarm::Later,
            ][i]
        }),
        default: "first",
        doc: "when the memory pool makes its first, slow allocation (`nvptx/src/device_pool/pool.rs`): `first` \
              on a thread of its own started by the device's first allocation, which (like \
              any other made before that thread is done) takes plain cuMemAlloc memory; `0` \
              in the first allocation that needs it; `1` on a thread of its own at device \
              open (before 9f09084 reverse offload of device-heap (device `malloc`) memory \
              came back wrong with it on an H100, tests/device/revoff_device_heap, as with \
              `pinkeep=open` on an H200, whose cause was libgomp's (docs/plugin-abi.md \
              §10.14); `1` not measured since); `later` as `first`, but started by the \
              first allocation after a kernel of the device has completed (or after 16 plain \
              allocations), so that no warm-up runs beside a program's first region",
    },
    Entry {
        name: "lazykernels",
        value: Value::Word(&["0", "1"], |p, i| p.t.lazykernels = i == 1),
        default: "0",
        doc: "`1`: look each kernel up (which loads its code onto the device) at its first \
              launch instead of in load_image; shorter loads of images with many kernels, but \
              a first launch may then wait until no kernel runs (CUDA's lazy loading), so a \
              running kernel that waits for the host to launch another never ends; never in a \
              program that uses reverse offload",
    },
    Entry {
        name: "jitthreads",
        value: Value::Number {
            min: 1,
            max: 256,
            set: |p, n| p.t.jitthreads = Some(n as u32),
        },
        default: "1 (the option not passed)",
        doc: "threads the JIT's compiler may use for one link, for every image \
              (`CU_JIT_SPLIT_COMPILE`, drivers of CUDA 12.9 and later; older ones compile on \
              one thread); 1: one thread, the driver's default",
    },
    Entry {
        name: "pinnedchunk",
        value: Value::Bytes {
            min: 4 << 10,
            max: PINNED_CHUNK_MAX,
            set: |p, n| p.t.pinnedchunk = n,
        },
        default: "64k",
        doc: "bytes of the first chunk of each shard of the page-locked pool \
              (`host/pinned_pool.rs`; later chunks grow 4x up to 4 MiB); 4m: every chunk 4 MiB",
    },
    Entry {
        name: "pinnedshards",
        value: Value::Number {
            min: 1,
            max: PINNED_SHARDS_MAX,
            set: |p, n| p.t.pinnedshards = Some(n),
        },
        default: "one per processor, up to 16",
        doc: "shards (each with its own lock) of the page-locked pool's small blocks; \
              a thread allocates from its own; 1: one lock for every thread",
    },
    Entry {
        name: "pinnednuma",
        value: Value::Word(&["0", "1"], |p, i| p.t.pinnednuma = i == 1),
        default: "1",
        doc: "page-locked memory the plugin allocates is asked on the device's NUMA node \
              (`host/numa.rs`; hosts of several nodes); 0: where the allocating thread's \
              policy puts it",
    },
    Entry {
        name: "pinkeep",
        value: Value::Word(&["0", "open", "load"], |p, i| {
            p.t.pinkeep = [PinKeepAt::Off, PinKeepAt::Open, PinKeepAt::Load][i]
        }),
        default: "load",
        doc: "one page-locked block made on a thread of its own and kept until device close \
              (`host/pin_keep.rs`), so the driver's page-locked set-up (about 1 ms, paid \
              again whenever no block is alive) is not paid by the program's first \
              page-locked allocation: `load`: started once the device's first image is \
              loaded; `open`: at device open; `0`: none",
    },
    Entry {
        name: "revspin",
        value: Value::Word(&["0", "wait", "acqrel"], |p, i| {
            p.t.revspin = [RevSpin::Off, RevSpin::Wait, RevSpin::AcqRel][i]
        }),
        default: "acqrel",
        doc: "in a program that uses reverse offload, GCC's device-side request (`image/rev_spin.rs`): \
              `acqrel`: on devices of compute capability 7.0 or more, its lock, flag and wait in \
              sm_70's scoped release/acquire forms, no `membar.sys` left (elsewhere as `wait`); \
              `wait`: the wait (an acquire load with a `membar.sys` in every round) polls with \
              volatile loads and fences once after the loop; `0`: GCC's code as it is",
    },
    Entry {
        name: "revdelay",
        value: Value::Number {
            min: 0,
            max: 100_000,
            set: |p, n| p.t.revdelay = n as u32,
        },
        default: "300",
        doc: "with `revspin=acqrel`, nanoseconds (converted to the device's clock cycles) \
              between a reverse-offload request's flag and the device's first look for the \
              host's answer (`image/rev_spin.rs`); 0: at once",
    },
    Entry {
        name: "syncwait",
        value: Value::Word(&["sync", "flag", "run", "auto"], |p, i| {
            p.t.syncwait = [SyncWait::Sync, SyncWait::Flag, SyncWait::Run, SyncWait::Auto][i]
        }),
        default: "auto",
        doc: "how a synchronous kernel launch and a small synchronous copy to the host through \
              the thread's page-locked ring (`device/copy/ring.rs`) are waited for, once the thread has \
              a ring: `flag`: the stream writes a word after the kernel or copy \
              (`cuStreamWriteValue32`) that the host polls, asking the stream's state every \
              64 polls and waiting by `cuStreamSynchronize` after 200 µs (drivers without it: \
              as `sync`); `run`: the word for a kernel launch, `cuStreamSynchronize` for a copy \
              (on an H200 the word made 4 KiB copies to the host up to 2x slower); `sync`: \
              `cuStreamSynchronize`; `auto`: each device measures both ways for a launch's \
              wait and for a copy's (a one-byte memset and an 8-byte copy to the host, 8 \
              rounds each, well under 1 ms, once) at the first synchronous wait of a thread \
              that has its ring, keeps the faster of each and says which in \
              `GOMP_NVPTX_INFO` and the profile (`device/wait_choice.rs`); `run` until then",
    },
];

/// Whether `name` is a key of `KEYS` (the copy paths' names for shared knobs are
/// checked against it; their own knobs must not be one).
pub fn has_key(name: &str) -> bool {
    KEYS.iter().any(|e| e.name == name)
}

/// The docs' table of the keys (README.md, `GOMP_NVPTX_TUNE`): a row per key of
/// `KEYS`, then one per copy-path knob of `paths`.
pub fn keys_table(paths: &[&'static PathKnob]) -> String {
    let own: Vec<Entry<usize>> = paths.iter().map(|k| k.entry()).collect();
    gomp_plugin::settings::markdown_table("key", &KEYS)
        + &gomp_plugin::settings::markdown_rows(&own)
}

impl Tune {
    /// Parses `GOMP_NVPTX_TUNE`'s value of `KEYS` alone (no copy path's own knob: see
    /// [`Tune::parse_with`]).
    pub fn parse(s: &str) -> Result<Tune, String> {
        Tune::parse_with(s, &[])
    }

    /// Parses `GOMP_NVPTX_TUNE`'s value: the keys of `KEYS` and the copy paths' own
    /// knobs `paths`; an error names the first bad item. A `warps` or `teams` knob
    /// fixes the shape: it turns the tuner off unless `autotune` is given.
    pub fn parse_with(s: &str, paths: &[&'static PathKnob]) -> Result<Tune, String> {
        let mut p = Parsing {
            t: Tune::default(),
            fixed_shape: false,
            autotune: None,
        };
        for item in s.split(',') {
            let key = item.split_once('=').map(|(k, _)| k.trim());
            match paths.iter().find(|k| Some(k.name) == key) {
                Some(&knob) => {
                    let mut n = 0;
                    apply_list(&[knob.entry()], item, &mut n)?;
                    p.t.paths.set(knob, n)?;
                }
                None => apply_list(&KEYS, item, &mut p)?,
            }
        }
        p.t.autotune = p.autotune.unwrap_or(if p.fixed_shape {
            Autotune::Off
        } else {
            Autotune::On
        });
        Ok(p.t)
    }

    /// The value of copy-path knob `knob`: as given, else its default.
    #[inline]
    pub fn size(&self, knob: &'static PathKnob) -> usize {
        self.paths
            .0
            .iter()
            .flatten()
            .find(|(k, _)| std::ptr::eq(*k, knob))
            .map_or(knob.default, |&(_, n)| n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_knob() {
        assert_eq!(Tune::parse("").unwrap(), Tune::default());
        let t = Tune::parse(
            "warps=16, teams=2x,maxrreg=64,dlcm=cg,carveout=0,icvs=0,defer=4k,readahead=64,tstream=legacy,poolwarm=1,lazykernels=1,jitthreads=4,revspin=0,revdelay=400,syncwait=sync,pinkeep=open,accgangs=16",
        )
        .unwrap();
        assert_eq!(
            t,
            Tune {
                warps: Some(16),
                teams: Teams::Times(2),
                maxrreg: Some(64),
                dlcm: Some(CacheMode::Cg),
                carveout: Some(0),
                icvs: false,
                defer: 4096,
                readahead: 64,
                tstream: ThreadStream::Legacy,
                poolwarm: PoolWarm::Open,
                lazykernels: true,
                pinkeep: PinKeepAt::Open,
                autotune: Autotune::Off,
                accgangs: Some(16),
                jitthreads: Some(4),
                pinnedchunk: DEFAULT_PINNED_CHUNK,
                pinnedshards: None,
                pinnednuma: true,
                revspin: RevSpin::Off,
                revdelay: 400,
                syncwait: SyncWait::Sync,
                paths: PathSizes::default(),
            }
        );
        let t = Tune::parse("pinnedchunk=4m,pinnedshards=1,pinnednuma=0").unwrap();
        assert_eq!(
            (t.pinnedchunk, t.pinnedshards, t.pinnednuma),
            (4 << 20, Some(1), false)
        );
        assert_eq!(Tune::parse("poolwarm=0").unwrap().poolwarm, PoolWarm::Off);
        assert_eq!(
            Tune::parse("poolwarm=later").unwrap().poolwarm,
            PoolWarm::Later
        );
        assert_eq!(
            Tune::parse("poolwarm=first").unwrap().poolwarm,
            PoolWarm::First
        );
        assert_eq!(
            Tune::parse("tstream=nonblocking").unwrap().tstream,
            ThreadStream::NonBlocking
        );
        assert_eq!(Tune::parse("teams=1056").unwrap().teams, Teams::Fixed(1056));
        assert_eq!(Tune::parse("teams=regs").unwrap().teams, Teams::Regs);
        assert_eq!(Tune::parse("warps=occupancy").unwrap().warps, None);
    }

    #[test]
    fn syncwait_modes() {
        let sw = |s: &str| Tune::parse(s).unwrap().syncwait;
        assert_eq!(sw(""), SyncWait::Auto);
        let modes = [
            ("sync", [false, false]),
            ("flag", [true, true]),
            ("run", [false, true]),
            ("auto", [false, true]),
        ];
        for (word, [copy, kernel]) in modes {
            let m = sw(&format!("syncwait={word}"));
            assert_eq!(
                (m.by_flag(false), m.by_flag(true)),
                (copy, kernel),
                "{word}"
            );
        }
        assert!(Tune::parse("syncwait=fast").is_err());
    }

    #[test]
    fn autotune_switch() {
        let at = |s: &str| Tune::parse(s).unwrap().autotune;
        assert_eq!(at(""), Autotune::On);
        assert_eq!(at("autotune=0"), Autotune::Off);
        assert_eq!(at("autotune=fresh,maxrreg=64"), Autotune::Fresh);
        assert_eq!(at("maxrreg=64,defer=0"), Autotune::On);
        // A fixed shape turns it off, unless asked for.
        assert_eq!(at("warps=occupancy"), Autotune::Off);
        assert_eq!(at("teams=2x"), Autotune::Off);
        assert_eq!(at("warps=16,autotune=1"), Autotune::On);
        let off = Tune::parse("autotune=0,warps=occupancy").unwrap();
        assert_eq!((off.autotune, off.warps), (Autotune::Off, None));
    }

    #[test]
    fn every_bound_is_enforced() {
        assert_eq!(gomp_plugin::settings::check_table(&KEYS), Ok(()));
        for k in &KEYS {
            let (min, max) = match k.value {
                Value::Bytes { min, max, .. } | Value::Number { min, max, .. } => (min, max),
                _ => continue,
            };
            let name = k.name;
            for ok in [min, max] {
                assert!(Tune::parse(&format!("{name}={ok}")).is_ok(), "{name}={ok}");
            }
            let mut bad = vec![max + 1];
            if min > 0 {
                bad.push(min - 1);
            }
            for b in bad {
                let e = Tune::parse(&format!("{name}={b}")).unwrap_err();
                assert!(
                    e.starts_with(&format!("{name}: '{b}' is not valid (")),
                    "{e}"
                );
            }
        }
    }

    #[test]
    fn refuses_garbage() {
        for bad in [
            "warps=0",
            "warps=33",
            "teams=0x",
            "teams=lots",
            "maxrreg=8",
            "dlcm=cs",
            "carveout=101",
            "icvs=2",
            "poolwarm=yes",
            "lazykernels=2",
            "jitthreads=0",
            "jitthreads=257",
            "defer=32m",
            "readahead=2m",
            "tstream=fast",
            "pinnedchunk=8m",
            "pinnedchunk=1k",
            "pinnedshards=0",
            "pinnedshards=65",
            "pinnednuma=2",
            "autotune=2",
            "autotune=yes",
            "accgangs=0",
            "accgangs=2",
            "accgangs=128",
            "accgangs=all",
            "speed=max",
            "warps",
        ] {
            assert!(Tune::parse(bad).is_err(), "{bad} accepted");
        }
    }
}
