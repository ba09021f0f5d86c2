//! The work behind `GOMP_OFFLOAD_version`, the same for both products: set up logging,
//! say which libgomp loaded the plugin, and answer the plugin version that libgomp
//! expects, or 0 (a version mismatch to libgomp) after saying why. Thread-safe.

use crate::libgomp::{host, logger, report, version::Detected};

/// The `GOMP_VERSION` to answer. `tag` follows the crate version in the debug line
/// (e.g. " (gcn, experimental)"); `gpus` names what is not offloaded to on refusal.
pub fn version(tag: &str, gpus: &str) -> u32 {
    logger::init();
    let detected = host::detected();
    log::debug!(
        "gomp-plugin-rs {}{tag} loaded by {detected} ({})",
        env!("CARGO_PKG_VERSION"),
        host::host().and_then(|h| h.path.as_deref()).unwrap_or("?")
    );
    match detected {
        Detected::Known(v) => v.plugin_version(),
        other => {
            report::error(&format!(
                "{} plugin (gomp-plugin-rs {}) does not support {other}; not offloading to {gpus}",
                crate::PLUGIN_NAME,
                env!("CARGO_PKG_VERSION")
            ));
            0
        }
    }
}
