//! gomp-plugin: the vendor-neutral framework of gomp-plugin-rs, GCC's libgomp offload
//! plugins written in Rust. The products are the crates beside it: `nvptx/`
//! (`libgomp-plugin-nvptx.so.1`, CUDA) and `gcn/` (`libgomp-plugin-gcn.so.1`, HSA).
//!
//! Layers, each depending only on those below it (docs/architecture.md draws them):
//! - [`edge::table`]: the exported `GOMP_OFFLOAD_*` entry points, one row each, whose
//!   shells each product crate expands ([`export_entry_points!`]; see [`edge`]): panic
//!   boundary, libgomp's error convention, one call into the product's [`Plugin`] /
//!   [`Device`];
//! - [`edge`]: the panic boundary ([`edge::guard`]) and the version handshake;
//! - [`plugin`], [`device`], [`openacc`]: the traits a backend implements;
//!   [`registry`]: the open devices; [`images`]: the images loaded on an opened device
//!   and their unload order; [`kernels`]: the live kernel handles and their one check; [`settings`]: the reader of a backend's table of environment variables
//!   (and the docs' rows from it); [`generate`]: files produced from tables in the code;
//!   [`rect`]: rectangular copies as libgomp describes them;
//! - [`libgomp`]: the host libgomp (version detection, `GOMP_PLUGIN_*` calls, logging);
//! - [`error`]: the one error type (no vendor types in it); [`blocks`]: the registry of
//!   device blocks handed out by `alloc`; [`symbols`]: the run-time symbol-table macro
//!   with which each backend declares its driver's entry points; [`sync`]: locking
//!   that takes a poisoned lock as it is.
//!
//! Tools that only one backend uses live in that backend (the nvptx crate's disk cache,
//! launch-shape trials, block caches, idle trimmer, profile and trace writers); one
//! moves here when a second backend needs it.
//!
//! Nothing here is exported from a product (`#[no_mangle]`) except through the shells.
//! Every public item is documented (`missing_docs`, an error under `clippy -D warnings`).
#![warn(missing_docs)]

// Test only: docs/architecture.md's skeleton table against the tree.
#[cfg(test)]
mod architecture_doc;
pub mod blocks;
pub mod device;
pub mod edge;
pub mod error;
pub mod generate;
pub mod images;
pub mod kernels;
pub mod libgomp;
pub mod openacc;
pub mod plugin;
pub mod rect;
pub mod registry;
pub mod settings;
pub mod symbols;
pub mod sync;

pub use device::{Device, DeviceCore};
pub use error::{Error, Result};
pub use openacc::{AccQueue, OpenAcc};
pub use plugin::Plugin;
