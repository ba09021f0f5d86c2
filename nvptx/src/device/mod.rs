//! The device core: one opened CUDA device ([`Core`]), made of parts it owns, one per
//! responsibility: its context and properties ([`device_context`]), its settings and
//! run-time switches ([`settings`], over [`crate::config`]; the choice of its
//! synchronous waits, [`wait_choice`]), its memory ([`memory`],
//! over [`crate::device_pool`] and the pinned pool of [`crate::host`]; libgomp's pinned
//! allocator in [`pinned_alloc`]), its copies ([`copy`]: the copy engine, one file per
//! copy path with its route, its engine and its buffers; [`copy_order`]: the order of
//! deferred copies, which the launch resources hold) and its launch resources
//! ([`launch_resources`]: the pools of idle streams and events from
//! [`crate::cuda::pools`], each thread's stream) every other concept borrows. The parts
//! but the copy engine are held together in [`parts`], which the copy engine is given.
//! What runs on the device (loaded images, async launches, reverse offload) is above
//! this layer and borrows the core; it is not named here.
//!
//! `Core` itself is `whole.rs`: it composes the parts and keeps only what spans them
//! (opening and closing the device, the accessors, the entry spans); each part's
//! behaviour is the part's, and a part that needs another is given it as an argument.
//! No file of this folder names `Core` but `whole.rs` and `entry_points.rs` (libgomp's
//! `DeviceCore` entry points, which compose the parts' calls); no file below names
//! this body.
//!
//! Threading: a `Core` is shared (`Arc`) by the open device that owns it and by every
//! thread that works on it (libgomp's threads through the open device, OpenACC queues
//! and thread data, the completion, reverse-offload and staging threads); its mutable
//! state is behind the locks of the parts it owns. Any thread may use it after
//! `DeviceCore::activate` made the context current there.

pub mod copy;
pub mod copy_order;
pub mod device_context;
pub mod entry_points;
pub mod launch_resources;
pub mod memory;
pub mod parts;
pub mod pinned_alloc;
pub mod serving;
pub mod settings;
pub mod wait_choice;
pub mod whole;

pub use device_context::{attr_or_zero, Props};
pub use whole::Core;
