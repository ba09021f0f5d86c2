//! gomp-plugin-rs: a drop-in replacement for GCC's `libgomp-plugin-nvptx.so.1`.
//!
//! Layers, each depending only on those below it:
//! - [`edge`]: the exported `GOMP_OFFLOAD_*` functions (panic boundary, libgomp's
//!   error convention);
//! - [`nvptx`]: devices, images, memory and launches on NVIDIA GPUs;
//! - [`libgomp`]: the host libgomp (version detection, `GOMP_PLUGIN_*` calls, logging)
//!   and [`cuda`]: the CUDA driver loaded at run time;
//! - [`error`]: the shared error type.
//!
//! Every public item is documented (`missing_docs`, an error under `clippy -D warnings`).
#![warn(missing_docs)]

pub mod cuda;
pub mod edge;
pub mod error;
pub mod libgomp;
pub mod nvptx;
