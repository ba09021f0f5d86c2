//! Host-side memory: page-locked host memory the plugin allocates ([`pinned_pool`] over
//! [`memory`]'s chunks) or locks for the program ([`lock`]), the process-wide registry of
//! such ranges ([`ranges`]), and the two ways of moving data the driver alone cannot
//! move well: the staging engine for large pageable copies ([`staging`]), bounce
//! buffers for mid-sized ones ([`bounce`]), each thread's ring for small ones
//! ([`ring`]) and copies by kernel for device-heap memory ([`kernel_copy`]).
//!
//! Threading: the range registry is process-wide and locked; the pinned pool, staging
//! engine and copy kernel belong to one device each and are locked inside. The staging
//! engine runs worker threads of its own, ended at device close.

pub mod bounce;
pub mod kernel_copy;
pub mod lock;
pub mod memory;
pub mod pinned_pool;
pub mod ranges;
pub mod ring;
pub mod staging;
