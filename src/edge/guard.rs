//! The panic boundary and libgomp's error convention. Every exported entry point runs
//! its body through one of these; nothing unwinds into C, and an `Error` becomes a
//! `libgomp: ...` message plus the entry point's failure value (or a fatal error).

use crate::error::Result;
use crate::libgomp::report;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// The exported symbol of `entry`: `GOMP_OFFLOAD_<entry>`, or the plugin's own API
/// names (`gomp_nvptx_*`) as they are.
fn symbol(entry: &str) -> String {
    if entry.starts_with("gomp_nvptx_") {
        entry.to_string()
    } else {
        format!("GOMP_OFFLOAD_{entry}")
    }
}

/// Runs `f`; a panic is reported as an internal error of `entry` and gives `failed`.
pub fn value<T>(entry: &str, failed: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => {
            report::error(&format!(
                "internal error in {}: {}",
                symbol(entry),
                panic_text(&*p)
            ));
            failed
        }
    }
}

/// Runs `f`; `Ok(v)` gives `v`, an error or a panic is reported and gives `failed`.
pub fn result<T>(entry: &str, failed: T, f: impl FnOnce() -> Result<T>) -> T {
    match value(entry, None, || Some(f())) {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            report::error(&e.to_string());
            failed
        }
        None => failed,
    }
}

/// For `bool` entry points: true on success, false after an error message.
pub fn ok(entry: &str, f: impl FnOnce() -> Result<()>) -> bool {
    result(entry, false, || f().map(|()| true))
}

/// For entry points whose errors are fatal by contract (`run`): an error or panic ends
/// the process through `GOMP_PLUGIN_fatal`.
pub fn or_fatal(entry: &str, f: impl FnOnce() -> Result<()>) {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => report::fatal(&e.to_string()),
        Err(p) => report::fatal(&format!(
            "internal error in {}: {}",
            symbol(entry),
            panic_text(&*p)
        )),
    }
}
