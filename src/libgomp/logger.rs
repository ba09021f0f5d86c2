//! The `log` backend: records go to `GOMP_PLUGIN_debug`, prefixed with the plugin's
//! name, when `GOMP_DEBUG` is a positive number (libgomp's own switch).

use log::{LevelFilter, Log, Metadata, Record};
use once_cell::sync::OnceCell;

struct GompLogger;

/// The plugin name of the first [`init`] ("nvptx", "gcn").
static NAME: OnceCell<&'static str> = OnceCell::new();

impl Log for GompLogger {
    fn enabled(&self, _: &Metadata) -> bool {
        true
    }
    fn log(&self, r: &Record) {
        if self.enabled(r.metadata()) {
            super::report::debug(&format!(
                "{} (gomp-plugin-rs): {}\n",
                NAME.get().copied().unwrap_or("?"),
                r.args()
            ));
        }
    }
    fn flush(&self) {}
}

/// The level `GOMP_DEBUG=<value>` asks for: off unless a positive integer; 1 gives
/// debug records, 2 and more also trace records.
pub fn level_for(gomp_debug: Option<&str>) -> LevelFilter {
    match gomp_debug.and_then(|v| v.trim().parse::<i64>().ok()) {
        Some(n) if n >= 2 => LevelFilter::Trace,
        Some(n) if n >= 1 => LevelFilter::Debug,
        _ => LevelFilter::Off,
    }
}

/// Installs the logger once, its lines prefixed with `name`; later calls do nothing.
/// Thread-safe.
pub fn init(name: &'static str) {
    let _ = NAME.set(name);
    static LOGGER: GompLogger = GompLogger;
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level_for(std::env::var("GOMP_DEBUG").ok().as_deref()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gomp_debug_values() {
        assert_eq!(level_for(None), LevelFilter::Off);
        assert_eq!(level_for(Some("0")), LevelFilter::Off);
        assert_eq!(level_for(Some("1")), LevelFilter::Debug);
        assert_eq!(level_for(Some(" 3 ")), LevelFilter::Trace);
        assert_eq!(level_for(Some("yes")), LevelFilter::Off);
        assert_eq!(level_for(Some("-1")), LevelFilter::Off);
    }
}
