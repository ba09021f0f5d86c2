//! gomp-plugin-rs: a drop-in replacement for GCC's `libgomp-plugin-nvptx.so.1`, and
//! (built with the cargo feature `gcn`) an experimental `libgomp-plugin-gcn.so.1`.
//!
//! One crate, two products. Without `gcn` it is the nvptx plugin; with `gcn` it is the
//! AMD GCN plugin. Layers, each depending only on those below it:
//! - [`edge`]: the exported `GOMP_OFFLOAD_*` functions (panic boundary, libgomp's
//!   error convention); the exported set depends on the product;
//! - `nvptx` (nvptx build): devices, images, memory and launches on NVIDIA GPUs;
//!   `gcn` (gcn build): AMD GPU agents and GCN code objects;
//! - [`libgomp`]: the host libgomp (version detection, `GOMP_PLUGIN_*` calls, logging),
//!   shared by both products; `cuda` (nvptx build): the CUDA driver loaded at run
//!   time; `hsa` (gcn build): the HSA runtime loaded at run time;
//! - [`error`]: the shared error type; [`blocks`]: the registry of device blocks
//!   handed out by `alloc`, used by both products.
//!
//! Every public item is documented (`missing_docs`, an error under `clippy -D warnings`).
#![warn(missing_docs)]

pub mod blocks;
#[cfg(not(feature = "gcn"))]
pub mod cuda;
pub mod edge;
pub mod error;
#[cfg(feature = "gcn")]
pub mod gcn;
#[cfg(feature = "gcn")]
pub mod hsa;
pub mod libgomp;
#[cfg(not(feature = "gcn"))]
pub mod nvptx;

/// The plugin's name as libgomp knows it (`GOMP_OFFLOAD_get_name`), also the prefix of
/// its `GOMP_DEBUG` lines: "nvptx", or "gcn" in the `gcn` build. A constant; thread-safe.
#[cfg(not(feature = "gcn"))]
pub const PLUGIN_NAME: &str = "nvptx";
/// The plugin's name as libgomp knows it (`GOMP_OFFLOAD_get_name`), also the prefix of
/// its `GOMP_DEBUG` lines: "nvptx", or "gcn" in the `gcn` build. A constant; thread-safe.
#[cfg(feature = "gcn")]
pub const PLUGIN_NAME: &str = "gcn";
