//! Kernel names users recognise. GCC names the kernel of the N-th offloaded region of
//! function `f` `f$_omp_fn$N` in PTX (`f._omp_fn.N` elsewhere), OpenMP `target` and
//! OpenACC compute constructs alike; a Fortran main program is `MAIN__`, a Fortran
//! contained procedure `name.K` (`name$K`). The profiler shows such a kernel as
//! `f: omp target #N` (through `GOMP_OFFLOAD_run`/`async_run`) or `f: acc compute #N`
//! (through `openacc_exec`), with `(file:line)` when the image carries source lines
//! (built with `-g`: `crate::image::source_lines`). Other names stay as they are, with
//! GCC's `$` shown as `.`.
//!
//! Plain functions and data; [`Labels`] are made at image load only while a tool is
//! attached, owned by their kernel.

use std::ffi::CString;

/// A kernel's names for the profiler, one per way it is launched. Owned by its kernel,
/// read by any thread launching it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labels {
    /// Through `GOMP_OFFLOAD_run` / `async_run`: `f: omp target #N (file:line)`.
    pub omp: CString,
    /// Through `openacc_exec`: `f: acc compute #N (file:line)`.
    pub acc: CString,
}

impl Labels {
    /// The labels of kernel `ptx_name`, whose source line is `source` (file, line).
    pub fn new(ptx_name: &str, source: Option<&(String, u32)>) -> Labels {
        let c = |construct| CString::new(label(ptx_name, construct, source)).unwrap_or_default();
        Labels {
            omp: c("omp target"),
            acc: c("acc compute"),
        }
    }
}

/// The function and region number of a kernel GCC named `f$_omp_fn$N` (or with dots),
/// `None` for any other name.
pub fn region(ptx_name: &str) -> Option<(String, &str)> {
    let (head, tail) = ptx_name.rsplit_once("_omp_fn")?;
    let f = head.strip_suffix(['$', '.'])?;
    let n = tail.strip_prefix(['$', '.'])?;
    if f.is_empty() || n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // A Fortran contained procedure's `name.K`; the Fortran main program.
    let f = match f.rsplit_once(['$', '.']) {
        Some((name, k)) if !name.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => f,
    };
    let f = if f == "MAIN__" { "main program" } else { f };
    Some((f.replace('$', "."), n))
}

/// The label of kernel `ptx_name` launched as `construct` (`omp target`, `acc compute`).
pub fn label(ptx_name: &str, construct: &str, source: Option<&(String, u32)>) -> String {
    let mut s = match region(ptx_name) {
        Some((f, n)) => format!("{f}: {construct} #{n}"),
        None => ptx_name.replace('$', "."),
    };
    if let Some((file, line)) = source {
        s += &format!(" ({file}:{line})");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcc_names_read_as_regions() {
        assert_eq!(
            label("main$_omp_fn$0", "omp target", None),
            "main: omp target #0"
        );
        assert_eq!(
            label("foo._omp_fn.1", "omp target", None),
            "foo: omp target #1"
        );
        assert_eq!(
            label("MAIN__$_omp_fn$0", "omp target", None),
            "main program: omp target #0"
        );
        assert_eq!(
            label("sweep_private$2$_omp_fn$0", "acc compute", None),
            "sweep_private: acc compute #0"
        );
        assert_eq!(
            label("_ZN1A3runEv$_omp_fn$12", "omp target", None),
            "_ZN1A3runEv: omp target #12"
        );
        let src = ("saxpy.c".to_string(), 12);
        assert_eq!(
            label("main$_omp_fn$3", "acc compute", Some(&src)),
            "main: acc compute #3 (saxpy.c:12)"
        );
    }

    #[test]
    fn other_names_stay() {
        for n in [
            "gomp_stub_double",
            "_omp_fn$0",
            "f$_omp_fn$",
            "f$_omp_fn$x",
            "f_omp_fn$0",
        ] {
            assert_eq!(region(n), None, "{n}");
        }
        assert_eq!(label("a$b", "omp target", None), "a.b");
        let l = Labels::new("main$_omp_fn$0", None);
        assert_eq!(l.omp.to_str().unwrap(), "main: omp target #0");
        assert_eq!(l.acc.to_str().unwrap(), "main: acc compute #0");
    }
}
