//! Pools of idle CUDA handles of one kind ([`streams`], [`events`]): taken for one use,
//! given back afterwards, created on demand and destroyed (dropped) at device close; and
//! each host thread's own stream ([`thread_streams`]).
//! Below the device and the host-memory code, which both take streams from them.

pub mod events;
pub mod idle;
pub mod streams;
pub mod thread_streams;

pub use idle::{Handle, IdlePool};
