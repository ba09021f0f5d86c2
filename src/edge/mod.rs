//! The exported edge: the `GOMP_OFFLOAD_*` functions libgomp looks up, and (nvptx build)
//! the plugin's own `gomp_nvptx_*` C API (`extensions`). Each is a thin shell: panic
//! boundary and error convention (`guard`, shared by both products), argument
//! conversion, one call into the core. The exported set is fixed by `libgomp.map`
//! (nvptx) or `libgomp-gcn.map` (gcn build).

#[cfg(not(feature = "gcn"))]
pub mod exports;
#[cfg(not(feature = "gcn"))]
pub mod extensions;
/// The gcn plugin's exports (gcn build; not in the nvptx C header).
///
/// cbindgen:ignore
#[cfg(feature = "gcn")]
pub mod gcn_exports;
pub mod guard;
pub mod handshake;
#[cfg(not(feature = "gcn"))]
pub mod openacc;
