//! PTX JIT linking: all PTX objects of an image into one CUDA module.

use crate::cu;
use crate::cuda::sys::*;
use gomp_plugin::error::{Error, Result};
use std::ffi::c_void;

const LOG_SIZE: usize = 16 * 1024;

fn log_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).trim_end().to_string()
}

/// Links `ptx` (NUL-terminated objects) with the driver's JIT and loads the result as
/// a module in the current context. `opt_level` is `GOMP_NVPTX_JIT`'s `-O` level.
pub fn link_ptx(ptx: &[Vec<u8>], opt_level: Option<u32>) -> Result<CUmodule> {
    let mut info = vec![0u8; LOG_SIZE];
    let mut err = vec![0u8; LOG_SIZE];
    let mut opts = vec![
        CU_JIT_INFO_LOG_BUFFER,
        CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        CU_JIT_ERROR_LOG_BUFFER,
        CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        CU_JIT_LOG_VERBOSE,
    ];
    let mut vals: Vec<*mut c_void> = vec![
        info.as_mut_ptr().cast(),
        LOG_SIZE as *mut c_void,
        err.as_mut_ptr().cast(),
        LOG_SIZE as *mut c_void,
        1 as *mut c_void,
    ];
    if let Some(l) = opt_level {
        opts.push(CU_JIT_OPTIMIZATION_LEVEL);
        vals.push(l as usize as *mut c_void);
    }
    let start = std::time::Instant::now();
    let mut state: CUlinkState = std::ptr::null_mut();
    // SAFETY: option arrays of equal length; the log buffers outlive the link state.
    unsafe {
        cu!(cuLinkCreate(
            opts.len() as u32,
            opts.as_mut_ptr(),
            vals.as_mut_ptr(),
            &mut state
        ))
    }?;
    let result = (|| -> Result<CUmodule> {
        for (i, code) in ptx.iter().enumerate() {
            // SAFETY: `code` is a live NUL-terminated buffer of `code.len()` bytes.
            let r = unsafe {
                cu!(cuLinkAddData(
                    state,
                    CU_JIT_INPUT_PTX,
                    code.as_ptr() as *mut c_void,
                    code.len(),
                    c"ptx_code".as_ptr(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut()
                ))
            };
            if let Err(e) = r {
                return Err(Error::invalid(format!(
                    "{e} (PTX object {i})\nLink error log {}",
                    log_text(&err)
                )));
            }
        }
        let mut cubin: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: out-pointers to locals; the cubin lives until cuLinkDestroy.
        if let Err(e) = unsafe { cu!(cuLinkComplete(state, &mut cubin, &mut size)) } {
            return Err(Error::invalid(format!(
                "{e}\nLink error log {}",
                log_text(&err)
            )));
        }
        let mut module: CUmodule = std::ptr::null_mut();
        // SAFETY: `cubin` is the linker's output, valid until cuLinkDestroy below.
        unsafe { cu!(cuModuleLoadData(&mut module, cubin)) }?;
        Ok(module)
    })();
    // SAFETY: `state` came from cuLinkCreate and is destroyed once.
    let _ = unsafe { cu!(cuLinkDestroy(state)) };
    log::debug!(
        "linked {} PTX object(s) in {:.1} ms{}",
        ptx.len(),
        start.elapsed().as_secs_f64() * 1e3,
        match log_text(&info) {
            t if t.is_empty() => String::new(),
            t => format!("; JIT log:\n{t}"),
        }
    );
    result
}
