//! The work behind `GOMP_OFFLOAD_version`, the same for every product: set up logging,
//! say which libgomp loaded the plugin, and answer the plugin version that libgomp
//! expects, or 0 (a version mismatch to libgomp) after saying why. Thread-safe.

use crate::libgomp::version::Detected;
use crate::libgomp::{host, logger, report};
use crate::plugin::Plugin;

/// Whether product `P` serves the libgomp that loaded it; a known release older than
/// the product's oldest (the gcn plugin under libgomp 12) gets the handshake it expects
/// but no devices, so libgomp falls back to the host without an error message.
pub fn serves<P: Plugin>() -> bool {
    host::libgomp().is_some_and(|v| v >= P::OLDEST_LIBGOMP)
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
