//! Running kernels: the launch geometry of OpenMP kernels ([`geometry`]), synchronous
//! and asynchronous launches and the image constructor/destructor kernels ([`run`]), the
//! completion of `nowait` launches ([`async_queue`]) and reverse offload, the device
//! calling the host ([`reverse`]).
//!
//! Threading: launches come from any libgomp thread; each device has one completion
//! thread (started on the first `nowait` launch) and one reverse-offload service thread
//! (started when an image with reverse offload is loaded), both ended at device close.

pub mod async_queue;
pub mod geometry;
pub mod reverse;
pub mod run;
