//! Running kernels: the launch geometry of OpenMP kernels ([`geometry`]), the shape a
//! kernel chooses by trials ([`autotune`]) and remembers across runs
//! ([`choice_cache`]), synchronous and asynchronous launches ([`run`]), the completion of `nowait` launches
//! ([`async_queue`]), how a failed kernel is reported ([`failure`]) and reverse offload,
//! the device calling the host ([`reverse`]). Functions take the parts of the device
//! they use (the core `Core`, the queue, the reverse-offload state), which the open
//! device owns.
//!
//! Threading: launches come from any libgomp thread; each device has one completion
//! thread (started on the first `nowait` launch) and one reverse-offload service thread
//! (started when an image with reverse offload is loaded), both ended at device close.
//! Each holds the device core and its own shared state, never the open device.

pub mod async_queue;
pub mod autotune;
pub mod choice_cache;
pub mod failure;
pub mod geometry;
pub mod reverse;
pub mod run;
