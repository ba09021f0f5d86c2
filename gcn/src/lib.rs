//! gomp-plugin-gcn: `libgomp-plugin-gcn.so.1`, GCC's OpenMP offload plugin for AMD
//! GPUs, on the HSA runtime loaded at run time; the gcn backend of the `gomp_plugin`
//! framework ([`plugin`] implements its traits). **Experimental: implemented from the contract
//! (`docs/plugin-abi.md`) and the public HSA 1.x API, unverified on AMD
//! hardware** (none was available to this project).
//!
//! Implemented: runtime loading and the safe HSA layer ([`hsa`]); GPU-agent discovery
//! ([`discovery`]); reading and checking gcn images ([`image`] over [`descriptor`],
//! [`code_object`], [`mach`], the kernel metadata in [`metadata`] over [`msgpack`]); opening a device (its memory regions,
//! [`device`]); device memory, copies, memset and `is_accessible_ptr` ([`memory`]);
//! loading an image into an HSA executable and building libgomp's address table
//! ([`executable`], [`table`]); running kernels by GCC's gcn launch protocol
//! (docs/gcn-launch.md): the pure parts in [`launch`] and [`config`], the ring drain in
//! [`console`], queues, dispatch, completion, exit codes, reverse offload and
//! `async_run` in [`run`]; OpenACC (kernel execution, async queues, properties) in
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

pub mod code_object;
pub mod config;
pub mod console;
pub mod descriptor;
pub mod device;
pub mod discovery;
pub mod dispatch;
pub mod executable;
pub mod image;
pub mod launch;
pub mod mach;
pub mod memory;
pub mod metadata;
pub mod msgpack;
pub mod openacc;
pub mod plugin;
pub mod run;
pub mod table;

pub mod hsa;

// The exported `GOMP_OFFLOAD_*` entry points: the shells of the framework's table
// (`src/edge/table.rs`) that name this product, expanded here over this backend.
gomp_plugin::export_entry_points!(gcn, crate::plugin::Gcn);
/// `GOMP_OFFLOAD_async_run`'s implementation, for tests that link this library: there
/// the exported name denotes its IFUNC resolver (src/edge/table.rs).
pub use entry_points::async_run;

#[cfg(test)]
pub mod image_tests;
