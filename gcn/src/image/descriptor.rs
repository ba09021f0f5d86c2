//! The image descriptor mkoffload (gcc/config/gcn/mkoffload.cc) emits for each gcn
//! image, as libgomp hands it to `load_image` (the requires-mask word in front of it
//! already skipped by libgomp): `struct gcn_image_desc` of libgomp/plugin/plugin-gcn.c.
//! [`read`] copies what it points to into owned data, with sanity checks.

use gomp_plugin::error::{Error, Result};
use std::ffi::{c_char, c_void, CStr};

/// `struct gcn_image { size_t size; void *image; }`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RawImage {
    /// Size of the code object in bytes.
    pub size: usize,
    /// The code object (an AMDGPU ELF file) in the host program's data.
    pub image: *const c_void,
}

/// `struct hsa_kernel_description` (one per kernel mkoffload found).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RawKernel {
    /// Kernel name (the code object symbol is this plus `.kd`).
    pub name: *const c_char,
    /// OpenACC launch dimensions chosen at compile time (0: not set).
    pub oacc_dims: [i32; 3],
    /// Scalar registers the kernel uses.
    pub sgpr_count: i32,
    /// Vector registers the kernel uses.
    pub vgpr_count: i32,
}

/// `struct gcn_image_desc`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RawDescriptor {
    /// The code object.
    pub gcn_image: *const RawImage,
    /// Number of entries of `kernel_infos`.
    pub kernel_count: u32,
    /// The kernels.
    pub kernel_infos: *const RawKernel,
    /// Number of indirect functions (`.offload_ind_func_table` entries).
    pub ind_func_count: u32,
    /// Number of global variables (`.offload_var_table` entries).
    pub global_variable_count: u32,
}

/// One kernel of the descriptor, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelEntry {
    /// Kernel name, e.g. `main._omp_fn.0`.
    pub name: String,
    /// OpenACC dimensions as compiled.
    pub oacc_dims: [i32; 3],
    /// Scalar registers.
    pub sgpr_count: i32,
    /// Vector registers.
    pub vgpr_count: i32,
}

/// A descriptor read into owned data. `Send + Sync`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Descriptor {
    /// A copy of the code object bytes.
    pub image: Vec<u8>,
    /// The kernels, in the descriptor's order.
    pub kernels: Vec<KernelEntry>,
    /// Indirect function count.
    pub ind_func_count: u32,
    /// Global variable count.
    pub global_variable_count: u32,
}

/// Largest code object accepted (1 GiB); anything larger is taken for a bad descriptor.
pub const MAX_IMAGE: usize = 1 << 30;
/// Most kernels accepted in one image.
pub const MAX_KERNELS: u32 = 1 << 20;

/// Reads the descriptor at `p`.
///
/// # Safety
/// `p` is NULL or points to a `gcn_image_desc` whose pointers are valid for the sizes
/// and counts it states (libgomp passes mkoffload's static data).
pub unsafe fn read(p: *const c_void) -> Result<Descriptor> {
    if p.is_null() {
        return Err(Error::invalid("gcn image descriptor is NULL"));
    }
    // SAFETY: caller's contract; the struct is plain data.
    let d = unsafe { *(p as *const RawDescriptor) };
    if d.gcn_image.is_null() {
        return Err(Error::invalid("gcn image descriptor has no image"));
    }
    // SAFETY: caller's contract.
    let img = unsafe { *d.gcn_image };
    if img.image.is_null() || img.size == 0 || img.size > MAX_IMAGE {
        return Err(Error::invalid(format!(
            "gcn image descriptor: bad code object (size {}, at {:p})",
            img.size, img.image
        )));
    }
    if d.kernel_count > MAX_KERNELS || (d.kernel_count > 0 && d.kernel_infos.is_null()) {
        return Err(Error::invalid(format!(
            "gcn image descriptor: bad kernel table ({} kernels)",
            d.kernel_count
        )));
    }
    // SAFETY: `img.size` bytes at `img.image` (caller's contract).
    let image = unsafe { std::slice::from_raw_parts(img.image as *const u8, img.size) }.to_vec();
    let mut kernels = Vec::with_capacity(d.kernel_count as usize);
    for i in 0..d.kernel_count as usize {
        // SAFETY: `kernel_count` entries (caller's contract).
        let k = unsafe { *d.kernel_infos.add(i) };
        if k.name.is_null() {
            return Err(Error::invalid(format!(
                "gcn image descriptor: kernel {i} has no name"
            )));
        }
        // SAFETY: mkoffload's names are NUL-terminated strings.
        let name = unsafe { CStr::from_ptr(k.name) }
            .to_string_lossy()
            .into_owned();
        kernels.push(KernelEntry {
            name,
            oacc_dims: k.oacc_dims,
            sgpr_count: k.sgpr_count,
            vgpr_count: k.vgpr_count,
        });
    }
    Ok(Descriptor {
        image,
        kernels,
        ind_func_count: d.ind_func_count,
        global_variable_count: d.global_variable_count,
    })
}
