//! gomp-plugin-nvptx: `libgomp-plugin-nvptx.so.1`, GCC's OpenMP/OpenACC offload plugin
//! for NVIDIA GPUs, on the CUDA driver loaded at run time. The backend of the
//! `gomp_plugin` framework: [`plugin`] implements its traits, the exported edge is the
//! framework's shells instantiated for [`plugin::Nvptx`], plus the plugin's own C API
//! ([`extensions`]). The CUDA side is [`cuda`]; the rest are the backend's concepts.
//!
//! Every public item is documented (`missing_docs`, an error under `clippy -D warnings`).
#![warn(missing_docs)]

pub mod cuda;
pub mod extensions;
pub mod plugin;

pub mod device;
pub mod host;
pub mod image;
pub mod interop;
pub mod launch;
pub mod memory;
pub mod observe;
pub mod open;
pub mod openacc;
pub mod rect;

// The exported `GOMP_OFFLOAD_*` entry points: the framework's shells
// (`src/edge/exports/`), written once for every product, compiled here over this
// backend (they call `super::Backend`).
/// The backend every exported shell calls.
type Backend = plugin::Nvptx;
#[path = "../../src/edge/exports/interop.rs"]
mod interop_exports;
#[path = "../../src/edge/exports/openacc_cuda.rs"]
mod openacc_cuda_exports;
#[path = "../../src/edge/exports/openacc.rs"]
mod openacc_exports;
#[path = "../../src/edge/exports/openmp.rs"]
mod openmp_exports;
/// `GOMP_OFFLOAD_async_run`'s implementation, for tests that link this library: there
/// the exported name denotes its IFUNC resolver (src/edge/exports/openmp.rs).
pub use openmp_exports::async_run;
#[path = "../../src/edge/exports/page_locked.rs"]
mod page_locked_exports;
