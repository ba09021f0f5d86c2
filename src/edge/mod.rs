//! The exported edge: the `GOMP_OFFLOAD_*` functions libgomp looks up. Each is a thin
//! shell: panic boundary and error convention (`guard`), argument conversion, one call
//! into the core. The exported set is fixed by `libgomp.map`.

pub mod exports;
pub mod guard;
pub mod openacc;
