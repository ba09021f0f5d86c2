//! The safe layer over the driver, in the spirit of cudarc's sys/result/safe split:
//! [`super::sys`] are the raw types, [`super::driver`] the raw entry points (`cu!`),
//! and this module the types and functions the backend calls instead.
//!
//! - RAII owners whose `Drop` gives the resource back: [`PrimaryContext`] (retain /
//!   release), [`OwnedStream`], [`OwnedEvent`], [`Module`], [`LinkState`], [`HostAlloc`]
//!   (page-locked host memory), [`HostRegistration`] (registered user memory) and
//!   [`MemPool`]. A failure in `Drop` is logged (`GOMP_DEBUG`), never a panic; owners
//!   whose release error the plugin reports have a consuming method returning it
//!   (`release`, `destroy`, `unload`, `free`, `unregister`).
//! - Borrowed handles ([`Stream`], [`Event`]): `Copy` newtypes over the driver handle,
//!   valid while their owner lives (the owner is whoever handed them out).
//! - Plain queries and operations as small functions ([`query`], [`cu_mem`], the driver's `cuMem*` calls).
//!
//! Every wrapper is a `#[repr(transparent)]` newtype or a plain struct of handles, every
//! method `#[inline]`: no allocation, lock or extra driver call beyond the one it wraps.
//!
//! Thread-safety: CUDA driver handles may be used from any host thread (the driver
//! serialises what needs it), so the owners and handles are `Send`, and `Sync` where
//! their methods only pass the handle to the driver. Which context is current is the
//! caller's business (see [`context`]).

pub mod context;
pub mod cu_mem;
pub mod event;
pub mod module;
pub mod query;
pub mod stream;

pub use context::PrimaryContext;
pub use cu_mem::{DeviceAlloc, HostAlloc, HostRegistration, MemPool, MemPoolRef};
pub use event::{Event, OwnedEvent};
pub use module::{LinkState, Module, ModuleRef};
pub use stream::{OwnedStream, Stream};
