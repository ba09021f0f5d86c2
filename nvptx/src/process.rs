//! The process's settings: [`Config`] read once, at the plugin's first use, with every
//! copy path's own `GOMP_NVPTX_TUNE` knob (`crate::config` parses them but does not know
//! the paths; `crate::device::copy` declares them, each in its path's file). Above both,
//! so that neither imports the other; the plugin (`get_num_devices`) and the opened
//! device (`crate::open`) read the settings here.

use crate::config::{self, Config};
use crate::device::copy;
use gomp_plugin::generate::Output;
use once_cell::sync::OnceCell;

/// The settings of this process: the environment read once, at the plugin's first use
/// (`get_num_devices`), when the NVTX tool they name, if any, is attached too
/// (`crate::observe::nvtx::attach`). Thread-safe.
pub fn config() -> &'static Config {
    static CONFIG: OnceCell<Config> = OnceCell::new();
    CONFIG.get_or_init(|| {
        let c = Config::from_env(&copy::knobs());
        crate::observe::nvtx::attach(&c.observe);
        c
    })
}

/// The files produced from the settings tables (`config::generated`), with the copy
/// paths' own knobs in `GOMP_NVPTX_TUNE`'s table; `config::GENERATED_BY` rewrites them.
pub fn generated() -> Vec<Output> {
    config::generated(&copy::knobs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_files_agree_with_the_tables() {
        let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = crate_dir.parent().expect("the crate lies in the workspace");
        gomp_plugin::generate::assert_current(root, &generated(), config::GENERATED_BY);
    }
}
