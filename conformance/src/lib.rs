//! Test-only crate of gomp-plugin-rs (a dev-dependency of the products, never shipped):
//!
//! - [`support`]: the helpers every integration test of `nvptx/tests/` and `gcn/tests/`
//!   uses (child processes, the stand-in libraries built with `cc`, the exported entry
//!   points declared as libgomp sees them);
//! - [`suite`]: the conformance suite, the scenarios every backend must pass against
//!   its stand-in driver (load, alloc, copies, run, async run, OpenACC queues, bad
//!   images, reverse offload where the stand-in can post requests), written once over
//!   a [`suite::Backend`] descriptor and instantiated by each product's
//!   `tests/conformance.rs` with [`conformance_suite!`].
//!
//! The library declares the `GOMP_OFFLOAD_*` entry points without defining them: it
//! links only into a test binary that also links one product's rlib (which defines
//! them), one product per binary since both export the same names.

pub mod suite;
pub mod support;
