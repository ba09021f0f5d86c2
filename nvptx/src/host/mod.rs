//! Page-locked host memory: the pool the plugin allocates it from for the program
//! ([`pinned_pool`] over [`pinned_chunks`], on the device's NUMA node: [`numa`]; the
//! driver's set-up of it kept from device open: [`pin_keep`]), the program's memory it
//! locks ([`lock`]), and the process-wide registry of such ranges ([`ranges`]), which
//! the copy paths (`device::copy`) ask first whether host memory is page-locked. The
//! copy paths' own page-locked buffers are theirs (`device::copy`).
//!
//! Threading: the range registry is process-wide and locked; the pinned pool belongs to
//! one device and is locked inside.

pub mod lock;
pub mod numa;
pub mod pin_keep;
pub mod pinned_chunks;
pub mod pinned_pool;
pub mod ranges;
