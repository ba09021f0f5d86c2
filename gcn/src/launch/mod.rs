//! Running kernels on a gcn device by GCC's gcn launch protocol (docs/gcn-launch.md):
//! the pure parts of the protocol ([`protocol`]: kernarg block and output ring layout,
//! grid choice, packet dimensions, LDS, ephemeral memory, the kernel's return value;
//! re-exported here), the AQL packet header ([`dispatch`]), the output ring drain
//! ([`console`]) and the launches themselves, one file per concept as nvptx's
//! `launch/`: [`run`] (the device's `Launcher`: queues, dispatch, completion,
//! `async_run`), [`geometry`] (a launch's packet dimensions, LDS, ephemeral memory and
//! its AQL packet), [`launch_resources`] (kernarg blocks, table reservations, ephemeral
//! memory, module heaps), [`failure`] (refusing a kernel, acting on its end),
//! [`reverse`] (reverse offload) and [`async_queue`] (`async_run`'s thread).
//! Thread-safety: see each module.

pub mod async_queue;
pub mod console;
pub mod dispatch;
pub mod failure;
pub mod geometry;
pub mod launch_resources;
pub mod protocol;
pub mod reverse;
pub mod run;

pub use protocol::*;
