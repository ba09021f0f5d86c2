//! Host-side memory: page-locked host memory the plugin allocates ([`pinned_pool`] over
//! [`pinned_chunks`], on the device's NUMA node: [`numa`]; the driver's set-up of it kept
//! from device open: [`pin_keep`]) or locks for the program ([`lock`]), the process-wide registry of
//! such ranges ([`ranges`]), and the two ways of moving data the driver alone cannot
//! move well: the staging engine for large pageable copies ([`staging`]), bounce
//! buffers for mid-sized ones ([`bounce`]), each thread's ring for small ones
//! ([`ring`]) and copies by kernel for device-heap memory ([`kernel_copy`]); and each
//! thread's read-ahead of a region's results ([`read_ahead`]).
//!
//! Threading: the range registry is process-wide and locked; the pinned pool, staging
//! engine and copy kernel belong to one device each and are locked inside. The staging
//! engine runs worker threads of its own, ended at device close.

pub mod bounce;
pub mod kernel_copy;
pub mod lock;
pub mod pinned_chunks;
pub mod numa;
pub mod pin_keep;
pub mod pinned_pool;
pub mod ranges;
pub mod read_ahead;
pub mod ring;
pub mod staging;

/// What a host thread keeps per device in its lane (`cuda::pools::thread_streams`): its
/// ring for small copies and its read-ahead of regions' results. Used only by the
/// thread owning the lane (see each part); dropped with the lane at device close.
#[derive(Default)]
pub struct ThreadHost {
    /// The ring for small copies.
    pub ring: ring::Ring,
    /// The read-ahead of regions' results.
    pub read_ahead: read_ahead::ReadAhead,
}
