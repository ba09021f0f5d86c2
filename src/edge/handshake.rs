//! The work behind `GOMP_OFFLOAD_version`, the same for every product: set up logging,
//! say which libgomp loaded the plugin, and answer the plugin version that libgomp
//! expects, or 0 (a version mismatch to libgomp) after saying why. Thread-safe.

use crate::libgomp::{host, logger, report, version::Detected};
use crate::plugin::Plugin;

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
        Detected::Known(v) => v.plugin_version(),
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
