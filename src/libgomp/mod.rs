//! The libgomp side: which libgomp loaded us, the `GOMP_PLUGIN_*` functions it exports
//! (we call them, never define them), the contract's constants, and logging through
//! `GOMP_PLUGIN_debug`. Reusable by any vendor plugin; depends on nothing in the crate.

pub mod abi;
pub mod acc_prof;
pub mod host;
pub mod interop;
pub mod logger;
pub mod report;
pub mod session;
pub mod target;
pub mod target_args;
pub mod verdef;
pub mod version;
