//! The exported edge. Every `GOMP_OFFLOAD_*` entry point is one row of the table in
//! [`table`] (symbol, products, libgomp releases that look it up, required or
//! optional, C prototype per release, semantics, and the shell); each product expands
//! its shells with [`crate::export_entry_points!`] in its crate root (not in this
//! crate: `#[no_mangle]` functions of a library are exported by every cdylib that
//! links it, and the products export different sets).
//!
//! Each shell is one call into the backend's [`crate::Plugin`] / [`crate::Device`] /
//! [`crate::OpenAcc`] through [`guard`] (panic boundary, libgomp's error convention);
//! conversions longer than a line are the generic functions of [`shell`]; arguments
//! whose presence depends on the libgomp release are read through [`args`].

pub mod args;
pub mod generated;
pub mod guard;
pub mod handshake;
pub mod shell;
pub mod table;
