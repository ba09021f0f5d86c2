//! libgomp/plugin/plugin-gcn.c's image descriptor as mkoffload emits it (the layout
//! tests/fallback/gcn_calls.c declares), written out here as libgomp sees it rather than
//! taken from the plugin's own `descriptor` module, so the tests check that module too.
//! Shared by the gcn integration tests (`mod gcn_image;`).

use std::ffi::{c_char, c_int, c_uint};

/// `struct gcn_image`: the code object.
#[repr(C)]
pub struct GcnImage {
    /// Bytes of the code object.
    pub size: usize,
    /// The code object.
    pub image: *const u8,
}

/// `struct hsa_kernel_description`: one kernel.
#[repr(C)]
pub struct Kernel {
    /// The kernel's name.
    pub name: *const c_char,
    /// OpenACC dimensions fixed at compile time (0: not fixed).
    pub oacc_dims: [c_int; 3],
    /// Scalar registers.
    pub sgpr_count: c_int,
    /// Vector registers.
    pub vgpr_count: c_int,
}

/// `struct gcn_image_desc`: what libgomp passes to `load_image`.
#[repr(C)]
pub struct GcnImageDesc {
    /// The code object.
    pub gcn_image: *const GcnImage,
    /// Entries of `kernel_infos`.
    pub kernel_count: c_uint,
    /// The kernels.
    pub kernel_infos: *const Kernel,
    /// Indirect functions of the image.
    pub ind_func_count: c_uint,
    /// Variables of `.offload_var_table`.
    pub global_variable_count: c_uint,
}
