//! OpenACC on a gcn device (docs/gcn-launch.md §3 "OpenACC", §5; the entry points'
//! contract in docs/plugin-abi.md §2): kernel execution with the OpenACC grid and
//! kernarg block (the launch of `launch/run.rs` with [`crate::launch::Kind::OpenAcc`]: `dummy1` = libgomp's
//! device `devaddrs` block, no team arena), per-thread data, properties, and the async
//! queues; one file each, as nvptx's `openacc/`: [`exec`], [`thread`], [`property`],
//! [`queue`].
//!
//! **Async queues.** Each [`queue::AccQueue`] has its own 64-packet HSA queue and a thread
//! that runs its jobs in order, one after the other: kernel launches (the same blocking
//! launch as `openacc_exec`, console and exit handling included), copies (the
//! synchronous copy code of `device/`), callbacks, and waits on another queue
//! (`serialize`). A counter of jobs queued and done answers `test` and `synchronize`.
//! `destroy` lets the thread finish what is queued, then joins it and destroys the HSA
//! queue. No HSA signal handlers are used (as the stock plugin's `drain_queue`).
//!
//! Not offered: the CUDA-interop entry points (`openacc_cuda_*`: the stock gcn plugin
//! does not export them either).
//!
//! Thread-safety: a queue may be used from any thread; its counter is behind a mutex,
//! its jobs go through a channel to its thread. **Unverified on hardware**: tested
//! against the stand-in runtime of tests/fallback/stub_libhsa.c.

pub mod exec;
pub mod property;
pub mod queue;
pub mod thread;
