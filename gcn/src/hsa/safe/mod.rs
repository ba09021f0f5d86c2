//! The safe layer over the HSA runtime's table: one file per runtime object (agents,
//! code objects and executables, memory, AQL queues, regions, signals, the system). Each
//! call's status goes through [`crate::hsa::error::check`]. Thread-safety: see each
//! file (the runtime's calls are thread-safe, HSA spec).

pub mod agent;
pub mod aql_queue;
pub mod executable;
pub mod memory;
pub mod region;
pub mod signal;
pub mod system;
