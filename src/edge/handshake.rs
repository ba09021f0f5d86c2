//! The work behind `GOMP_OFFLOAD_version`, the same for every product: set up logging,
//! say which libgomp loaded the plugin, and answer the plugin version that libgomp
//! expects, or 0 (a version mismatch to libgomp) after saying why. Thread-safe.

use crate::libgomp::version::Detected;
use crate::libgomp::{host, logger, report};
use crate::plugin::Plugin;

/// Why product `P` refuses `detected`, or `None` when it serves it.
pub fn refusal<P: Plugin>(detected: &Detected) -> Option<String> {
    let what = match detected {
        Detected::Known(v) if *v >= P::OLDEST_LIBGOMP => return None,
        Detected::Known(v) => format!(
            "libgomp {} (this plugin needs libgomp {} or newer)",
            v.gcc(),
            P::OLDEST_LIBGOMP.gcc()
        ),
        other => other.to_string(),
    };
    Some(format!(
        "{} plugin (gomp-plugin-rs {}) does not support {what}; not offloading to {}",
        P::NAME,
        env!("CARGO_PKG_VERSION"),
        P::GPUS
    ))
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
    match (refusal::<P>(&detected), &detected) {
        (None, Detected::Known(v)) => v.plugin_version(),
        (why, _) => {
            report::error(&why.unwrap_or_else(|| format!("{} plugin: no libgomp", P::NAME)));
            0
        }
    }
}
