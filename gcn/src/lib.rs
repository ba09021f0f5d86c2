//! gomp-plugin-gcn: `libgomp-plugin-gcn.so.1`, GCC's OpenMP offload plugin for AMD
//! GPUs, on the HSA runtime loaded at run time; the gcn backend of the `gomp_plugin`
//! framework ([`plugin`] implements its traits). **Experimental: implemented from the contract
//! (`docs/plugin-abi.md`) and the public HSA 1.x API, unverified on AMD
//! hardware** (none was available to this project).
//!
//! The modules follow the skeleton both backends share (docs/architecture.md, "One
//! backend shape"). Implemented: runtime loading and the safe HSA layer ([`hsa`]:
//! `sys`, `table`, `error`, `safe`); GPU-agent discovery ([`discovery`]); reading and
//! checking gcn images, loading them into HSA executables and building libgomp's
//! address table ([`image`]); the opened device ([`open`]: images, launches, close)
//! and its core ([`device`]: memory regions, device memory, copies, memset and
//! `is_accessible_ptr`); running kernels by GCC's gcn launch protocol
//! (docs/gcn-launch.md): the pure parts in [`launch`] and [`config`], the ring drain,
//! queues, dispatch, completion, exit codes, reverse offload and `async_run` in
//! [`launch`]'s files; OpenACC (kernel execution, async queues, properties) in
//! [`openacc`].
//!
//! Not implemented: OpenACC's CUDA interop (`openacc_cuda_*`, CUDA only); images with indirect functions; 2-D/3-D copies; managed
//! memory.
//!
//! Verified: the pure parts by unit tests on real GCC 16 images; everything that talks
//! to HSA only against the stand-in runtime of tests/fallback/stub_libhsa.c, which plays
//! the device side of the protocol (gcn/tests/, tests/host_fallback.sh section 2c), and,
//! for the no-GPU path, Debian's real ROCr runtime without `/dev/kfd` — never on an AMD
//! GPU.
//!
//! This file only declares the modules. Thread-safety: see each module; open devices
//! are in the framework's registry.

pub mod config;
pub mod device;
pub mod discovery;
pub mod hsa;
pub mod image;
pub mod launch;
pub mod open;
pub mod openacc;
pub mod plugin;

// The exported `GOMP_OFFLOAD_*` entry points: the shells of the framework's table
// (`src/edge/table.rs`) that name this product, expanded here over this backend.
gomp_plugin::export_entry_points!(gcn, crate::plugin::Gcn);
/// `GOMP_OFFLOAD_async_run`'s implementation, for tests that link this library: there
/// the exported name denotes its IFUNC resolver (src/edge/table.rs).
pub use entry_points::async_run;
