//! The nvptx image descriptor that mkoffload compiles into the host program and libgomp
//! hands to `load_image` (`struct nvptx_data` minus its first word; spec §5.1), read
//! into owned, validated Rust values.

use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::abi::version_lib;
use std::borrow::Cow;
use std::ffi::{c_char, CStr, CString};

/// One PTX object: NUL-terminated text and its size including the NUL.
#[repr(C)]
pub struct RawPtxObj {
    /// PTX source text.
    pub code: *const c_char,
    /// Bytes, including the terminating NUL.
    pub size: usize,
}

/// One function entry: kernel name and OpenACC launch dimensions.
#[repr(C)]
pub struct RawKernel {
    /// Kernel name.
    pub name: *const c_char,
    /// Gang, worker, vector dimensions (OpenACC; 0 = dynamic).
    pub dim: [u16; 3],
}

/// The descriptor as laid out in memory (x86-64). `ind_fn_num` exists only in images
/// of libgomp version 3 (GCC 14+) and is not read for older ones.
#[repr(C)]
pub struct RawDescriptor {
    /// PTX objects.
    pub ptx_objs: *const RawPtxObj,
    /// Number of PTX objects.
    pub ptx_num: u32,
    /// Names of the `declare target` variables, in host-table order.
    pub var_names: *const *const c_char,
    /// Number of variables.
    pub var_num: u32,
    /// Kernels, in host-table order.
    pub fn_names: *const RawKernel,
    /// Number of kernels.
    pub fn_num: u32,
    /// Number of `declare target indirect` functions (GCC 14+ images only).
    pub ind_fn_num: u32,
}

/// A kernel named by the image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelEntry {
    /// Kernel (entry) name.
    pub name: CString,
    /// OpenACC gang/worker/vector dimensions from the compiler (0 = choose).
    pub dims: [u16; 3],
}

/// An image descriptor read from the program's read-only data: its PTX borrowed for
/// `'a` (the image's lifetime, which outlasts its load), names copied. `Send`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Descriptor<'a> {
    /// PTX objects, each NUL-terminated (borrowed; copied only to add a missing NUL).
    pub ptx: Vec<Cow<'a, [u8]>>,
    /// Variable names, in host-table order.
    pub vars: Vec<CString>,
    /// Kernels, in host-table order.
    pub funcs: Vec<KernelEntry>,
    /// Number of indirect functions (0 for pre-GCC-14 images).
    pub ind_fn_num: u32,
}

/// No sane image has more entries than this; larger counts mean a corrupt descriptor.
const MAX_ENTRIES: u32 = 1 << 24;

fn cstr(p: *const c_char, what: &str, i: usize) -> Result<CString> {
    if p.is_null() {
        return Err(Error::invalid(format!(
            "corrupt offload image: {what} {i} has no name"
        )));
    }
    // SAFETY: non-NULL names in the descriptor are NUL-terminated strings from mkoffload.
    Ok(unsafe { CStr::from_ptr(p) }.to_owned())
}

fn check_count(n: u32, p_null: bool, what: &str) -> Result<usize> {
    if n > MAX_ENTRIES || (n > 0 && p_null) {
        return Err(Error::invalid(format!(
            "corrupt offload image: {n} {what} at a bad address"
        )));
    }
    Ok(n as usize)
}

/// Reads the descriptor at `data` for an image of version word `version`.
///
/// # Safety
/// `data` must be NULL or point to a descriptor laid out as [`RawDescriptor`] (without
/// `ind_fn_num` for images older than libgomp version 3) whose non-NULL pointers refer
/// to arrays of the stated lengths, and its PTX text must stay unchanged for `'a`.
pub unsafe fn read<'a>(version: u32, data: *const RawDescriptor) -> Result<Descriptor<'a>> {
    if data.is_null() {
        return Err(Error::invalid("corrupt offload image: no descriptor"));
    }
    // SAFETY: `data` points to a descriptor (caller); fields are read one by one so the
    // optional last field is only read when it exists.
    let d = unsafe { &*data };
    let np = check_count(d.ptx_num, d.ptx_objs.is_null(), "PTX objects")?;
    if np == 0 {
        return Err(Error::invalid("corrupt offload image: no PTX code"));
    }
    let nv = check_count(d.var_num, d.var_names.is_null(), "variables")?;
    let nf = check_count(d.fn_num, d.fn_names.is_null(), "functions")?;
    let ind_fn_num = if version_lib(version) >= 3 {
        // SAFETY: version-3 descriptors have this field.
        unsafe { std::ptr::addr_of!((*data).ind_fn_num).read() }
    } else {
        0
    };
    let mut ptx = Vec::with_capacity(np);
    for i in 0..np {
        // SAFETY: i < ptx_num elements of a valid array (caller).
        let o = unsafe { &*d.ptx_objs.add(i) };
        if o.code.is_null() || o.size == 0 || o.size > (1 << 31) {
            return Err(Error::invalid(format!(
                "corrupt offload image: PTX object {i}"
            )));
        }
        // SAFETY: `code` holds `size` bytes, unchanged for 'a (caller).
        let bytes: &'a [u8] = unsafe { std::slice::from_raw_parts(o.code.cast::<u8>(), o.size) };
        ptx.push(if bytes.last() == Some(&0) {
            Cow::Borrowed(bytes)
        } else {
            let mut v = bytes.to_vec();
            v.push(0);
            Cow::Owned(v)
        });
    }
    let vars = (0..nv)
        // SAFETY: i < var_num elements (caller).
        .map(|i| cstr(unsafe { *d.var_names.add(i) }, "variable", i))
        .collect::<Result<_>>()?;
    let funcs = (0..nf)
        .map(|i| {
            // SAFETY: i < fn_num elements (caller).
            let f = unsafe { &*d.fn_names.add(i) };
            Ok(KernelEntry {
                name: cstr(f.name, "function", i)?,
                dims: f.dim,
            })
        })
        .collect::<Result<_>>()?;
    Ok(Descriptor {
        ptx,
        vars,
        funcs,
        ind_fn_num,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_contract() {
        assert_eq!(std::mem::offset_of!(RawDescriptor, ptx_num), 8);
        assert_eq!(std::mem::offset_of!(RawDescriptor, var_names), 16);
        assert_eq!(std::mem::offset_of!(RawDescriptor, fn_names), 32);
        assert_eq!(std::mem::offset_of!(RawDescriptor, fn_num), 40);
        assert_eq!(std::mem::offset_of!(RawDescriptor, ind_fn_num), 44);
        assert_eq!(std::mem::size_of::<RawKernel>(), 16);
    }

    fn raw(
        ptx: &[RawPtxObj],
        vars: &[*const c_char],
        fns: &[RawKernel],
        ind: u32,
    ) -> RawDescriptor {
        RawDescriptor {
            ptx_objs: ptx.as_ptr(),
            ptx_num: ptx.len() as u32,
            var_names: vars.as_ptr(),
            var_num: vars.len() as u32,
            fn_names: fns.as_ptr(),
            fn_num: fns.len() as u32,
            ind_fn_num: ind,
        }
    }

    #[test]
    fn reads_a_well_formed_image() {
        let code = c".version 7.3\n";
        let ptx = [RawPtxObj {
            code: code.as_ptr(),
            size: code.to_bytes_with_nul().len(),
        }];
        let vars = [c"x".as_ptr(), c"y".as_ptr()];
        let fns = [RawKernel {
            name: c"main$_omp_fn$0".as_ptr(),
            dim: [0, 0, 32],
        }];
        let r = raw(&ptx, &vars, &fns, 2);
        // SAFETY: `r` points into live arrays above.
        let d = unsafe { read(0x30001, &r) }.unwrap();
        assert_eq!(d.ptx, vec![code.to_bytes_with_nul().to_vec()]);
        assert!(matches!(d.ptx[0], Cow::Borrowed(_)), "not copied");
        // Without its NUL, a copy with one.
        let cut = [RawPtxObj {
            code: code.as_ptr(),
            size: code.to_bytes().len(),
        }];
        // SAFETY: `cut` points into `code`.
        let c = unsafe { read(0x30001, &raw(&cut, &[], &[], 0)) }.unwrap();
        assert_eq!(c.ptx, vec![code.to_bytes_with_nul().to_vec()]);
        assert!(matches!(c.ptx[0], Cow::Owned(_)));
        assert_eq!(d.vars, vec![c"x".to_owned(), c"y".to_owned()]);
        assert_eq!(d.funcs[0].name.as_c_str(), c"main$_omp_fn$0");
        assert_eq!(d.funcs[0].dims, [0, 0, 32]);
        assert_eq!(d.ind_fn_num, 2);
        // A GCC 13 image has no ind_fn_num.
        // SAFETY: as above.
        assert_eq!(unsafe { read(0x20001, &r) }.unwrap().ind_fn_num, 0);
    }

    #[test]
    fn rejects_corrupt_images() {
        let code = c"x";
        let good = [RawPtxObj {
            code: code.as_ptr(),
            size: 2,
        }];
        // SAFETY: (all reads below) every pointer is NULL or into a live array.
        unsafe {
            assert!(read(0x30001, std::ptr::null()).is_err());
            assert!(read(0x30001, &raw(&[], &[], &[], 0)).is_err());
            let nul = [RawPtxObj {
                code: std::ptr::null(),
                size: 2,
            }];
            assert!(read(0x30001, &raw(&nul, &[], &[], 0)).is_err());
            let empty = [RawPtxObj {
                code: code.as_ptr(),
                size: 0,
            }];
            assert!(read(0x30001, &raw(&empty, &[], &[], 0)).is_err());
            let mut r = raw(&good, &[], &[], 0);
            r.var_num = 3; // a count without an array
            r.var_names = std::ptr::null();
            assert!(read(0x30001, &r).is_err());
            let mut r = raw(&good, &[], &[], 0);
            r.fn_num = u32::MAX;
            assert!(read(0x30001, &r).is_err());
            let unnamed = [RawKernel {
                name: std::ptr::null(),
                dim: [0; 3],
            }];
            assert!(read(0x30001, &raw(&good, &[], &unnamed, 0)).is_err());
        }
    }
}
