//! The exported edge: the `GOMP_OFFLOAD_*` functions libgomp looks up, and the plugin's
//! own `gomp_nvptx_*` C API (`extensions`). Each is a thin shell: panic boundary and
//! error convention (`guard`), argument conversion, one call into the core. The exported
//! set is fixed by `libgomp.map`.

pub mod exports;
pub mod extensions;
pub mod guard;
pub mod openacc;
