//! The work behind `GOMP_OFFLOAD_version`, the same for every product: set up logging,
//! say which libgomp loaded the plugin, and answer the plugin version that libgomp
//! expects, or 0 (a version mismatch to libgomp) after saying why. Thread-safe.

use crate::libgomp::version::{Detected, Libgomp};
use crate::libgomp::{host, logger, report};
use crate::plugin::Plugin;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by [`version`] when the libgomp that loaded us launches through sessions
/// (libgomp 17): the launch entry points whose C signature changed there (`run`,
/// `openacc_exec`, `openacc_async_exec`) are trampolines that read this one byte and
/// jump to the libgomp 12-16 or the libgomp 17 body (src/edge/exports/openmp.rs). An
/// `AtomicBool`, one byte, read by plain loads from assembly; written once, before
/// libgomp looks any launch entry point up.
pub static SESSIONS: AtomicBool = AtomicBool::new(false);

/// Whether launches take a session (libgomp 17; see [`SESSIONS`]).
pub fn uses_sessions() -> bool {
    SESSIONS.load(Ordering::Relaxed)
}

/// Whether product `P` serves the libgomp that loaded it; a known release older than
/// the product's oldest (the gcn plugin under libgomp 12) gets the handshake it expects
/// but no devices, so libgomp falls back to the host without an error message.
pub fn serves<P: Plugin>() -> bool {
    host::libgomp().is_some_and(|v| v >= P::OLDEST_LIBGOMP)
}

/// Whether `GOMP_OFFLOAD_async_run` is offered to the libgomp that loaded us: not to
/// libgomp 12 (see [`Libgomp::takes_async_run`]). libgomp calls `GOMP_OFFLOAD_version`,
/// which detects the release, before it looks the entry point up; before any detection
/// (a program linked with a product's library, resolved by the loader at start-up) it
/// is offered. Lock-free and allocation-free: called from the IFUNC resolver of
/// `GOMP_OFFLOAD_async_run` (its `ifunc` row in src/edge/table.rs).
pub fn offers_async_run() -> bool {
    host::libgomp_if_detected().is_none_or(Libgomp::takes_async_run)
}

/// The `GOMP_VERSION` to answer for product `P`.
pub fn version<P: Plugin>() -> u32 {
    logger::init(P::NAME);
    let detected = host::detected();
    log::debug!(
        "gomp-plugin-rs {}{} loaded by {detected} ({})",
        env!("CARGO_PKG_VERSION"),
        P::TAG,
        host::host().and_then(|h| h.path.as_deref()).unwrap_or("?")
    );
    match detected {
        Detected::Known(v) => {
            if v < P::OLDEST_LIBGOMP {
                log::debug!(
                    "the {} plugin supports libgomp {} and newer, not {}: 0 devices",
                    P::NAME,
                    P::OLDEST_LIBGOMP.gcc(),
                    v.gcc()
                );
            } else if v.uses_sessions() {
                SESSIONS.store(true, Ordering::Release);
                log::debug!(
                    "libgomp {}: launches take a session (session_size {} bytes)",
                    v.gcc(),
                    crate::libgomp::session::SIZE
                );
            } else if !v.takes_async_run() {
                log::debug!(
                    "libgomp {}: async_run not offered (its asynchronous target path \
                     aborts in an undeferred task outside parallel); 'target nowait' \
                     regions run to completion through run",
                    v.gcc()
                );
            }
            v.plugin_version()
        }
        other => {
            report::error(&format!(
                "{} plugin (gomp-plugin-rs {}) does not support {other}; not offloading to {}",
                P::NAME,
                env!("CARGO_PKG_VERSION"),
                P::GPUS
            ));
            0
        }
    }
}
