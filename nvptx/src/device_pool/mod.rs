//! Device memory: the stream-ordered memory pool ([`pool`]), the caches in front of it
//! ([`small_blocks`], [`large_blocks`]) and the OpenMP soft stacks ([`stacks`]). The
//! device combines them behind `GOMP_OFFLOAD_alloc`/`free` (`crate::device::memory`).
//!
//! Threading: every cache is one device's, locked inside, and used by any thread with
//! the device's context current.

pub mod free_lists;
pub mod idle_trim;
pub mod large_blocks;
pub mod pool;
pub mod size_cache;
pub mod small_blocks;
pub mod stacks;
