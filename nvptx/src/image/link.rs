//! PTX JIT linking: all PTX objects of an image into one CUDA module.

use crate::cuda::safe::{LinkState, Module};
use crate::cuda::sys::*;
use crate::device::tune::{CacheMode, Tune};
use gomp_plugin::error::{Error, Result};
use std::ffi::c_void;

const LOG_SIZE: usize = 16 * 1024;

fn log_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).trim_end().to_string()
}

/// Links `ptx` (NUL-terminated objects) with the driver's JIT and loads the result as
/// a module in the current context. `opt_level` is `GOMP_NVPTX_JIT`'s `-O` level;
/// `tune` may cap registers and set the cache mode.
pub fn link_ptx(ptx: &[Vec<u8>], opt_level: Option<u32>, tune: &Tune) -> Result<Module> {
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
        std::ptr::without_provenance_mut(1), // CU_JIT_LOG_VERBOSE = 1 (a value, not an address)
    ];
    if let Some(l) = opt_level {
        opts.push(CU_JIT_OPTIMIZATION_LEVEL);
        vals.push(l as usize as *mut c_void);
    }
    if let Some(r) = tune.maxrreg {
        opts.push(CU_JIT_MAX_REGISTERS);
        vals.push(r as usize as *mut c_void);
    }
    if let Some(m) = tune.dlcm {
        opts.push(CU_JIT_CACHE_MODE);
        vals.push(match m {
            CacheMode::Cg => CU_JIT_CACHE_OPTION_CG,
            CacheMode::Ca => CU_JIT_CACHE_OPTION_CA,
        } as usize as *mut c_void);
    }
    let start = std::time::Instant::now();
    // SAFETY: option arrays of equal length; the log buffers outlive the link state
    // (dropped, destroying it, at the end of this function).
    let mut state = unsafe { LinkState::create(&mut opts, &mut vals) }?;
    let result = (|| -> Result<Module> {
        for (i, code) in ptx.iter().enumerate() {
            // `code` is a live NUL-terminated buffer of `code.len()` bytes.
            if let Err(e) = state.add_ptx(code, c"ptx_code") {
                return Err(Error::invalid(format!(
                    "{e} (PTX object {i})\nLink error log {}",
                    log_text(&err)
                )));
            }
        }
        // The cubin lives until the state is destroyed, after the module is loaded.
        match state.complete_and_load() {
            Err(e) => Err(Error::invalid(format!(
                "{e}\nLink error log {}",
                log_text(&err)
            ))),
            Ok(module) => Ok(module?),
        }
    })();
    drop(state);
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
