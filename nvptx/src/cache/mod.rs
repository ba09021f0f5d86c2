//! A keyed store of derived data on disk, shared by all processes of one user: what a
//! backend derives at great cost from inputs it can name completely (the nvptx
//! backend: the JIT link's output), kept so that the next process skips the work.
//!
//! - [`key`]: a [`Key`] is a SHA-256 digest (`sha2`) of named, length-prefixed
//!   fields: every input the derived data depends on, in order;
//! - [`entry`]: the file format (header with kind, key and length; an XXH64 checksum,
//!   `xxhash-rust`);
//! - [`store`]: the directory (private to the user), reads checked on the descriptor,
//!   atomic writes (temporary file + rename), the size bound ([`evict`]);
//! - [`opened`]: the process's store, opened once from its setting (which directory,
//!   from the driver's and the user's cache variables, is a setting:
//!   `crate::config::cache_location`).
//!
//! Entries are typed by a short *kind* (`cubin`, ...), so one directory and one key
//! discipline serve every kind of derived data a backend keeps. The cache never decides
//! correctness: a backend treats any [`Lookup`] other than a hit, and any error, as
//! "derive it again".

pub mod entry;
pub mod evict;
pub mod key;
pub mod opened;
pub mod store;

pub use key::{Key, KeyBuilder};
pub use store::{Lookup, Payload, Store};
