//! Running kernels on a gcn device by GCC's gcn launch protocol (docs/gcn-launch.md):
//! the pure parts of the protocol ([`protocol`]: kernarg block and output ring layout,
//! grid choice, packet dimensions, LDS, ephemeral memory, the kernel's return value;
//! re-exported here), the AQL packet header ([`dispatch`]), the output ring drain
//! ([`console`]) and the launches themselves ([`run`]: queues, dispatch, completion,
//! reverse offload, `async_run`). Thread-safety: see each module.

pub mod console;
pub mod dispatch;
pub mod protocol;
pub mod run;

pub use protocol::*;
