//! gomp-plugin-nvptx: `libgomp-plugin-nvptx.so.1`, GCC's OpenMP/OpenACC offload plugin
//! for NVIDIA GPUs, on the CUDA driver loaded at run time. The backend of the
//! `gomp_plugin` framework: [`plugin`] implements its traits, the exported edge is the
//! framework's shells instantiated for [`plugin::Nvptx`], plus the plugin's own C API
//! ([`extensions`]). The CUDA side is [`cuda`]; the rest are the backend's concepts.
//!
//! Every public item is documented (`missing_docs`, an error under `clippy -D warnings`).
#![warn(missing_docs)]

pub mod config;
pub mod cuda;
pub mod extensions;
pub mod plugin;

pub mod cache;
pub mod device;
pub mod device_pool;
pub mod discovery;
pub mod host;
pub mod image;
pub mod interop;
pub mod launch;
pub mod observe;
pub mod open;
pub mod openacc;
pub mod rect;

// The exported `GOMP_OFFLOAD_*` entry points: the shells of the framework's table
// (`src/edge/table.rs`) that name this product, expanded here over this backend.
gomp_plugin::export_entry_points!(nvptx, crate::plugin::Nvptx);
/// `GOMP_OFFLOAD_async_run`'s implementation, for tests that link this library: there
/// the exported name denotes its IFUNC resolver (src/edge/table.rs).
pub use entry_points::async_run;
