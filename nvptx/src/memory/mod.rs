//! Device memory: allocation and freeing behind `GOMP_OFFLOAD_alloc`/`free` and the
//! synchronous copies ([`alloc`]), the stream-ordered memory pool ([`pool`]), the caches
//! in front of it ([`small_blocks`], [`large_blocks`]) and the OpenMP soft stacks
//! ([`stacks`]).
//!
//! Threading: every cache is one device's, locked inside, and used by any thread with
//! the device's context current.

pub mod alloc;
pub mod large_blocks;
pub mod pool;
pub mod small_blocks;
pub mod stacks;
