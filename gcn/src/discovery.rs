//! Finding the devices: the HSA runtime loaded, its GPU agents listed once per
//! process, and what `get_num_devices` reports for them under libgomp's `requires`
//! mask. A GPU agent is a device; devices are numbered in the runtime's agent order.
//!
//! Thread-safety: the agent list is computed once (a `OnceCell`) and then only read.

use crate::config::{Config, EXPERIMENTAL_ENV};
use crate::hsa::safe::agent;
use crate::hsa::sys::*;
use crate::hsa::table;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::abi::*;
use gomp_plugin::settings::ProcessSettings;
use once_cell::sync::OnceCell;

/// One GPU agent. Plain data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// The runtime's opaque handle.
    pub handle: u64,
    /// `HSA_AGENT_INFO_NAME`, e.g. "gfx90a".
    pub name: String,
}

static AGENTS: OnceCell<std::result::Result<Vec<Agent>, String>> = OnceCell::new();

/// The GPU agents of the runtime (an agent whose type cannot be read is skipped, one
/// whose name cannot be read is called "?").
fn discover() -> std::result::Result<Vec<Agent>, String> {
    let rt = table::load()?;
    let all = agent::all(rt).map_err(|e| e.to_string())?;
    Ok(all
        .into_iter()
        .filter(|&a| {
            agent::device_type(rt, a).is_ok_and(|t| t == hsa_device_type_t_HSA_DEVICE_TYPE_GPU)
        })
        .map(|a| Agent {
            handle: a.handle,
            name: agent::name(rt, a).unwrap_or_else(|_| "?".into()),
        })
        .collect())
}

/// The GPU agents, found once per process; an error says why there are none usable.
pub fn agents() -> std::result::Result<&'static [Agent], &'static str> {
    AGENTS
        .get_or_init(discover)
        .as_ref()
        .map(Vec::as_slice)
        .map_err(String::as_str)
}

/// What [`num_devices`] reports for the agents found under `requires_mask`; the text
/// is the `GOMP_DEBUG` line. Reverse offload is supported; unified addresses, unified
/// shared memory and self maps are not (0 devices). Pure.
pub fn devices_for(found: &[Agent], requires_mask: u32) -> (i32, String) {
    let names: Vec<&str> = found.iter().map(|a| a.name.as_str()).collect();
    if found.is_empty() {
        return (0, "HSA runtime loaded, but no GPU agent: 0 devices".into());
    }
    let unsupported = requires_mask
        & (REQUIRES_UNIFIED_ADDRESS | REQUIRES_UNIFIED_SHARED_MEMORY | REQUIRES_SELF_MAPS);
    if unsupported != 0 {
        return (0, format!("GPU agents {names:?}, but the program requires {unsupported:#x}, which this plugin does not support: 0 devices"));
    }
    (
        found.len() as i32,
        format!(
            "{} GPU agent(s) {names:?}: {} device(s)",
            found.len(),
            found.len()
        ),
    )
}

/// `get_num_devices`: the GPU agents; 0 when the runtime is missing or broken
/// (`hsa_init` failing, e.g. without `/dev/kfd`) or has no GPU agent, with one
/// `GOMP_DEBUG` line saying why. Never exits (GCC's plugin exits with status 1 when
/// `hsa_init` fails). `on_count` is called with the number of devices when there are
/// some (the registry's size).
pub fn num_devices(mask: u32, on_count: impl FnOnce(usize)) -> i32 {
    if Config::process().obsolete_experimental {
        log::debug!("{EXPERIMENTAL_ENV} is obsolete and ignored: every GPU agent is a device");
    }
    match agents() {
        Err(e) => {
            log::debug!("no HSA devices: {e}");
            0
        }
        Ok(found) => {
            let (n, why) = devices_for(found, mask);
            log::debug!("{why}");
            if n > 0 {
                on_count(n as usize);
            }
            n
        }
    }
}

/// The agent of device number `ord`.
pub fn agent(ord: i32) -> Result<&'static Agent> {
    let found = agents().map_err(|e| Error::invalid(format!("no gcn device {ord}: {e}")))?;
    usize::try_from(ord)
        .ok()
        .and_then(|i| found.get(i))
        .ok_or_else(|| Error::invalid(format!("no gcn device {ord} (there are {})", found.len())))
}

/// The compute units of device `ord` (`HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT`); `None`
/// when there is no such device or the runtime does not tell.
pub fn compute_units(ord: i32) -> Option<u32> {
    let a = agent(ord).ok()?;
    let rt = table::load().ok()?;
    agent::compute_units(rt, hsa_agent_t { handle: a.handle }).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_count_policy() {
        let a = [Agent {
            handle: 1,
            name: "gfx90a".into(),
        }];
        assert_eq!(devices_for(&[], 0).0, 0);
        let (n, why) = devices_for(&a, 0);
        assert_eq!(n, 1, "a GPU agent is a device");
        assert!(why.contains("1 device(s)"), "{why}");
        use gomp_plugin::libgomp::abi::*;
        assert_eq!(devices_for(&a, REQUIRES_REVERSE_OFFLOAD).0, 1);
        for m in [
            REQUIRES_UNIFIED_SHARED_MEMORY,
            REQUIRES_UNIFIED_ADDRESS,
            REQUIRES_SELF_MAPS,
        ] {
            assert_eq!(devices_for(&a, m | REQUIRES_REVERSE_OFFLOAD).0, 0, "{m:#x}");
        }
    }
}
