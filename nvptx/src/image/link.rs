//! PTX JIT linking: all PTX objects of an image into one cubin, loaded as a CUDA module.

use crate::config::tune::{CacheMode, Tune};
use crate::cuda::safe::{LinkState, Module};
use crate::cuda::sys::*;
use gomp_plugin::error::{Error, Result};
use std::ffi::c_void;

const LOG_SIZE: usize = 16 * 1024;

fn log_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).trim_end().to_string()
}

/// The first driver (`cuDriverGetVersion`) that knows `CU_JIT_SPLIT_COMPILE`.
pub const SPLIT_COMPILE_SINCE: i32 = 12090;

/// How many threads the JIT's compiler may use for one link (`CU_JIT_SPLIT_COMPILE`;
/// the compiler splits the PTX by function and optimizes the parts on that many
/// threads): `knob` (`GOMP_NVPTX_TUNE=jitthreads=N`) for every image. 0 (the option is
/// not passed: one thread, the driver's default, as GCC's plugin links) without the
/// knob, for 1, or for a `driver` older than [`SPLIT_COMPILE_SINCE`].
///
/// Not on by default: large images (such as GCC's own `for-*.c` tests, 4-5 MB of PTX)
/// compile much faster on a few threads, but the driver's compiler crashes (a
/// segmentation fault inside `cuLinkComplete`) on the largest image of GCC 16's suite,
/// `libgomp.c++/target-std__valarray-1.C`, with any number of threads from 2 up, while
/// it links that image on one thread; a fault there cannot be recovered in the process
/// (bench/results/jit-split.md). Pure.
pub fn split_threads(knob: Option<u32>, driver: i32) -> u32 {
    match knob {
        Some(n) if n > 1 && driver >= SPLIT_COMPILE_SINCE => n,
        _ => 0,
    }
}

/// The JIT options that decide the link's output, as (option, value) pairs in the
/// order they are passed: `opt_level` is `GOMP_NVPTX_JIT`'s `-O` level; `tune` may cap
/// registers and set the cache mode; `split` is the compiler's threads
/// ([`split_threads`]; 0: not passed). (The log buffers, which do not change the
/// output, are added by [`link_ptx`].) Pure.
pub fn value_options(
    opt_level: Option<u32>,
    tune: &Tune,
    split: u32,
) -> Vec<(CUjit_option, usize)> {
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
    if split > 1 {
        v.push((CU_JIT_SPLIT_COMPILE, split as usize));
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
    let mut state = match unsafe { LinkState::create(&mut opts, &mut vals) } {
        Err(e) if opts.contains(&CU_JIT_SPLIT_COMPILE) => {
            // A driver that claims the option's release but refuses it: one thread.
            log::debug!("JIT link with CU_JIT_SPLIT_COMPILE refused ({e}); linking without");
            let keep = |o: &CUjit_option| *o != CU_JIT_SPLIT_COMPILE;
            let mut vals: Vec<*mut c_void> = opts
                .iter()
                .zip(&vals)
                .filter(|(o, _)| keep(o))
                .map(|(_, &v)| v)
                .collect();
            opts.retain(keep);
            // SAFETY: as above, with the one option left out of both arrays.
            unsafe { LinkState::create(&mut opts, &mut vals) }?
        }
        r => r?,
    };
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
        assert!(value_options(None, &Tune::default(), 0).is_empty());
        let t = Tune::parse("maxrreg=64,dlcm=cg").expect("tune");
        assert_eq!(
            value_options(Some(3), &t, 16),
            [
                (CU_JIT_OPTIMIZATION_LEVEL, 3),
                (CU_JIT_MAX_REGISTERS, 64),
                (CU_JIT_CACHE_MODE, CU_JIT_CACHE_OPTION_CG as usize),
                (CU_JIT_SPLIT_COMPILE, 16)
            ]
        );
    }

    #[test]
    fn compiler_threads() {
        // Without the knob: the driver's single thread, for any image.
        assert_eq!(split_threads(None, 13000), 0);
        // The knob, on drivers that know the option; 1 means the driver's single thread.
        assert_eq!(split_threads(Some(4), 13000), 4);
        assert_eq!(split_threads(Some(4), SPLIT_COMPILE_SINCE), 4);
        assert_eq!(split_threads(Some(1), 13000), 0);
        assert_eq!(split_threads(Some(64), 13000), 64);
        // An older driver: not passed.
        assert_eq!(split_threads(Some(8), 12080), 0);
        let t = Tune::parse("jitthreads=3").expect("tune");
        assert_eq!(split_threads(t.jitthreads, 13000), 3);
        assert_eq!(split_threads(t.jitthreads, 12000), 0);
        assert_eq!(split_threads(Tune::default().jitthreads, 13000), 0);
    }
}
