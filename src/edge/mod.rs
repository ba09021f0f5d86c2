//! The exported edge. The `GOMP_OFFLOAD_*` shells are written once, in
//! `src/edge/exports/`, and compiled into each product crate (not into this one:
//! `#[no_mangle]` functions of a library are exported by every cdylib that links it,
//! and the two products export different sets). A product includes the groups it
//! offers, each as a module over its backend type (see `nvptx/src/lib.rs`):
//!
//! | file | entry points | nvptx | gcn |
//! |---|---|---|---|
//! | `exports/openmp.rs` | handshake, devices, images, memory, `run`, `async_run`, rectangular copies, managed memory | yes | yes |
//! | `exports/can_run.rs` | `can_run` | no (GCC's nvptx plugin has none) | yes |
//! | `exports/page_locked.rs` | `page_locked_host_alloc/free` | yes | no |
//! | `exports/interop.rs` | `interop`, `get_interop_*` | yes | no |
//! | `exports/openacc.rs` | `openacc_*` but the CUDA interop | yes | yes |
//! | `exports/openacc_cuda.rs` | `openacc_cuda_*` (CUDA interop) | yes | no |
//!
//! Each shell is one call into the backend's [`crate::Plugin`] / [`crate::Device`] /
//! [`crate::OpenAcc`] through [`guard`] (panic boundary, libgomp's error convention).
//! The shells refer to the backend as `super::Backend`: the including module defines
//! that type alias. include/generate.sh runs cbindgen over these files.

pub mod args;
pub mod guard;
pub mod handshake;
