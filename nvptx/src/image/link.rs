//! PTX JIT linking: all PTX objects of an image into one cubin, loaded as a CUDA module.

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

/// The JIT options that decide the link's output, as (option, value) pairs in the
/// order they are passed: `opt_level` is `GOMP_NVPTX_JIT`'s `-O` level; `tune` may cap
/// registers and set the cache mode. (The log buffers, which do not change the output,
/// are added by [`link_ptx`].) Pure.
pub fn value_options(opt_level: Option<u32>, tune: &Tune) -> Vec<(CUjit_option, usize)> {
    let mut v = Vec::new();
    if let Some(l) = opt_level {
        v.push((CU_JIT_OPTIMIZATION_LEVEL, l as usize));
    }
    if let Some(r) = tune.maxrreg {
        v.push((CU_JIT_MAX_REGISTERS, r as usize));
    }
    if let Some(m) = tune.dlcm {
        v.push((
            CU_JIT_CACHE_MODE,
            match m {
                CacheMode::Cg => CU_JIT_CACHE_OPTION_CG,
                CacheMode::Ca => CU_JIT_CACHE_OPTION_CA,
            } as usize,
        ));
    }
    v
}

/// A linked image: its module and, when asked for, a copy of the cubin it was loaded
/// from.
pub struct Linked {
    /// The loaded module.
    pub module: Module,
    /// The linker's output, if [`link_ptx`] was asked to keep it.
    pub cubin: Option<Vec<u8>>,
}

/// Links `ptx` (NUL-terminated objects) with the driver's JIT under `options`
/// ([`value_options`]) and loads the result as a module in the current context;
/// `keep` also returns a copy of the linked cubin.
pub fn link_ptx<T: AsRef<[u8]>>(
    ptx: &[T],
    options: &[(CUjit_option, usize)],
    keep: bool,
) -> Result<Linked> {
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
    for &(o, v) in options {
        opts.push(o);
        vals.push(std::ptr::without_provenance_mut(v));
    }
    let start = std::time::Instant::now();
    // SAFETY: option arrays of equal length; the log buffers outlive the link state
    // (dropped, destroying it, at the end of this function).
    let mut state = unsafe { LinkState::create(&mut opts, &mut vals) }?;
    let result = (|| -> Result<Linked> {
        for (i, code) in ptx.iter().enumerate() {
            // `code` is a live NUL-terminated buffer of `code.len()` bytes.
            if let Err(e) = state.add_ptx(code.as_ref(), c"ptx_code") {
                return Err(Error::invalid(format!(
                    "{e} (PTX object {i})\nLink error log {}",
                    log_text(&err)
                )));
            }
        }
        let cubin = state
            .complete()
            .map_err(|e| Error::invalid(format!("{e}\nLink error log {}", log_text(&err))))?;
        // SAFETY: the cubin is complete and lives until the state is destroyed, after
        // the module is loaded.
        let module = unsafe { Module::load_data(cubin.as_ptr().cast()) }?;
        Ok(Linked {
            module,
            cubin: keep.then(|| cubin.to_vec()),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_follow_the_settings() {
        assert!(value_options(None, &Tune::default()).is_empty());
        let t = Tune::parse("maxrreg=64,dlcm=cg").expect("tune");
        assert_eq!(
            value_options(Some(3), &t),
            [
                (CU_JIT_OPTIMIZATION_LEVEL, 3),
                (CU_JIT_MAX_REGISTERS, 64),
                (CU_JIT_CACHE_MODE, CU_JIT_CACHE_OPTION_CG as usize)
            ]
        );
    }
}
