//! Each kernel's chosen launch shape, remembered across runs in the linked-image
//! cache's store (entries of kind [`KIND`] beside the `cubin` ones), so that the next
//! run of the program launches the winner from the kernel's first launch.
//!
//! - Key ([`key`]): the key of the kernel's linked image (which covers every PTX object,
//!   the JIT options, compute capability, driver and plugin version), the kernel's
//!   name, again compute capability, driver and plugin version, the device (name, SMs,
//!   registers per SM, memory), the kernel's registers and thread limit, and every
//!   setting that changes its geometry (`GOMP_NVPTX_LOWLAT_POOL`,
//!   `GOMP_NVPTX_SOFT_STACK_SIZE`, the `GOMP_NVPTX_TUNE` knobs). The candidate shapes
//!   follow from these; the tuner's on/fresh mode is not part of it.
//! - Payload ([`encode`], [`decode`]): the chosen candidate's setting and shape, and what
//!   the trials measured (for the profile), as text. An entry whose choice is not one
//!   of the candidates, or whose text is malformed, is not used.
//! - Where and when: wherever the linked-image cache is, and only when it is on.
//!
//! Pure code.

use crate::cache::{Key, KeyBuilder};
use crate::image::launch_facts::Candidate;

/// The entry kind of a chosen launch shape.
pub const KIND: &str = "shape";
/// The key's domain; the number changes when what goes into a key, the candidates or
/// the trials' rules change.
const DOMAIN: &str = "gomp-plugin-rs nvptx launch shape 1";
/// The payload's first line.
const MAGIC: &str = "gomp-plugin-rs launch shape 1";

/// What the key of one kernel's choice is made of, beside its image's key. Plain data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyFacts<'a> {
    /// The kernel's name.
    pub kernel: &'a str,
    /// Compute capability.
    pub cc: (i32, i32),
    /// `link_cache::driver_identity`.
    pub driver: String,
    /// The device's name.
    pub device: &'a str,
    /// Its SMs.
    pub num_sms: i32,
    /// Its registers per SM.
    pub regs_per_sm: i32,
    /// Its memory, bytes.
    pub total_mem: usize,
    /// The kernel's registers per thread.
    pub regs: i32,
    /// The kernel's maximum threads per block.
    pub max_threads_per_block: i32,
    /// Dynamic shared memory per launch.
    pub lowlat_pool: usize,
    /// Soft stack per warp.
    pub soft_stack: usize,
    /// The `GOMP_NVPTX_TUNE` knobs but the tuner's mode, as text.
    pub knobs: String,
}

/// The key of a kernel's choice.
pub fn key(image: &Key, f: &KeyFacts<'_>) -> Key {
    let mut k = KeyBuilder::new(DOMAIN);
    k.field("image", &image.0)
        .field("kernel", f.kernel.as_bytes())
        .int("cc major", f.cc.0 as i64)
        .int("cc minor", f.cc.1 as i64)
        .field("driver", f.driver.as_bytes())
        .field("plugin", env!("CARGO_PKG_VERSION").as_bytes())
        .field("device", f.device.as_bytes())
        .int("sms", f.num_sms as i64)
        .int("regs per sm", f.regs_per_sm as i64)
        .int("memory", f.total_mem as i64)
        .int("regs", f.regs as i64)
        .int("max threads", f.max_threads_per_block as i64)
        .int("lowlat pool", f.lowlat_pool as i64)
        .int("soft stack", f.soft_stack as i64)
        .field("knobs", f.knobs.as_bytes());
    k.finish()
}

/// A remembered choice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remembered {
    /// Index of the chosen candidate.
    pub chosen: usize,
    /// What the trials that chose it measured (one line of text).
    pub trials: String,
}

/// The payload of the choice of `chosen`, `trials` saying what they measured.
pub fn encode(chosen: &Candidate, trials: &str) -> Vec<u8> {
    let trials = trials.replace('\n', " ");
    format!(
        "{MAGIC}\nchosen {} {} {}\ntrials {trials}\n",
        chosen.label, chosen.teams, chosen.warps
    )
    .into_bytes()
}

/// The choice in `payload` among `candidates`, or why it cannot be used.
pub fn decode(payload: &[u8], candidates: &[Candidate]) -> Result<Remembered, String> {
    let text = std::str::from_utf8(payload).map_err(|_| "not text".to_string())?;
    let mut lines = text.strip_suffix('\n').ok_or("unterminated")?.split('\n');
    if lines.next() != Some(MAGIC) {
        return Err("not a launch-shape entry of this plugin".into());
    }
    let chosen = lines
        .next()
        .and_then(|l| l.strip_prefix("chosen "))
        .ok_or("no choice")?;
    let trials = lines
        .next()
        .and_then(|l| l.strip_prefix("trials "))
        .ok_or("no trials line")?;
    if lines.next().is_some() {
        return Err("trailing lines".into());
    }
    let f: Vec<&str> = chosen.split(' ').collect();
    let [label, teams, warps] = f[..] else {
        return Err(format!("malformed choice '{chosen}'"));
    };
    let (teams, warps) = match (teams.parse::<u32>(), warps.parse::<u32>()) {
        (Ok(t), Ok(w)) => (t, w),
        _ => return Err(format!("malformed choice '{chosen}'")),
    };
    let chosen = candidates
        .iter()
        .position(|c| c.label == label && c.teams == teams && c.warps == warps)
        .ok_or_else(|| format!("'{chosen}' is none of the kernel's shapes"))?;
    Ok(Remembered {
        chosen,
        trials: trials.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(label: &str, teams: u32, warps: u32) -> Candidate {
        Candidate {
            label: label.into(),
            teams,
            warps,
        }
    }

    fn cands() -> Vec<Candidate> {
        vec![
            cand("warps=8", 396, 8),
            cand("warps=occupancy", 528, 7),
            cand("warps=16", 132, 16),
        ]
    }

    fn facts() -> KeyFacts<'static> {
        KeyFacts {
            kernel: "main$_omp_fn$0",
            cc: (9, 0),
            driver: "13000 NVRM 580".into(),
            device: "NVIDIA H100 80GB HBM3",
            num_sms: 132,
            regs_per_sm: 65536,
            total_mem: 85520809984,
            regs: 72,
            max_threads_per_block: 896,
            lowlat_pool: 8192,
            soft_stack: 131072,
            knobs: "warps=8".into(),
        }
    }

    #[test]
    fn the_payload_round_trips_and_is_checked() {
        let c = cands();
        let p = encode(&c[1], "warps=8 1.0 ms\nwarps=occupancy 0.8 ms");
        assert_eq!(
            decode(&p, &c),
            Ok(Remembered {
                chosen: 1,
                trials: "warps=8 1.0 ms warps=occupancy 0.8 ms".into()
            })
        );
        // A choice that is not a candidate (another shape, another label) is refused.
        assert!(decode(&encode(&cand("warps=occupancy", 528, 8), ""), &c)
            .unwrap_err()
            .contains("none of the kernel's shapes"));
        assert!(decode(&encode(&cand("warps=4", 396, 8), ""), &c).is_err());
        for bad in [
            &b""[..],
            b"\xff\xfe",
            b"gomp-plugin-rs launch shape 1\nchosen warps=8 396 8\ntrials x",
            b"gomp-plugin-rs launch shape 2\nchosen warps=8 396 8\ntrials x\n",
            b"gomp-plugin-rs launch shape 1\nchosen warps=8 396\ntrials x\n",
            b"gomp-plugin-rs launch shape 1\nchosen warps=8 396 eight\ntrials x\n",
            b"gomp-plugin-rs launch shape 1\nchosen warps=8 396 8\n",
            b"gomp-plugin-rs launch shape 1\nchosen warps=8 396 8\ntrials x\nmore\n",
        ] {
            assert!(
                decode(bad, &c).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(
            decode(
                b"gomp-plugin-rs launch shape 1\nchosen warps=16 132 16\ntrials \n",
                &c
            )
            .map(|r| r.chosen),
            Ok(2)
        );
    }

    #[test]
    fn the_key_covers_every_input() {
        let image = Key([7; 32]);
        let base = key(&image, &facts());
        assert_eq!(base, key(&image, &facts()), "deterministic");
        let variants: Vec<Key> = vec![
            key(&Key([8; 32]), &facts()),
            key(
                &image,
                &KeyFacts {
                    kernel: "main$_omp_fn$1",
                    ..facts()
                },
            ),
            key(
                &image,
                &KeyFacts {
                    cc: (9, 1),
                    ..facts()
                },
            ),
            key(
                &image,
                &KeyFacts {
                    driver: "13000 NVRM 581".into(),
                    ..facts()
                },
            ),
            key(
                &image,
                &KeyFacts {
                    device: "NVIDIA H100 PCIe",
                    ..facts()
                },
            ),
            key(
                &image,
                &KeyFacts {
                    num_sms: 114,
                    ..facts()
                },
            ),
            key(
                &image,
                &KeyFacts {
                    regs_per_sm: 32768,
                    ..facts()
                },
            ),
            key(
                &image,
                &KeyFacts {
                    total_mem: 1 << 30,
                    ..facts()
                },
            ),
            key(
                &image,
                &KeyFacts {
                    regs: 73,
                    ..facts()
                },
            ),
            key(
                &image,
                &KeyFacts {
                    max_threads_per_block: 1024,
                    ..facts()
                },
            ),
            key(
                &image,
                &KeyFacts {
                    lowlat_pool: 0,
                    ..facts()
                },
            ),
            key(
                &image,
                &KeyFacts {
                    soft_stack: 4096,
                    ..facts()
                },
            ),
            key(
                &image,
                &KeyFacts {
                    knobs: "warps=8 carveout=50".into(),
                    ..facts()
                },
            ),
        ];
        for (i, v) in variants.iter().enumerate() {
            assert_ne!(&base, v, "variant {i}");
            for (j, w) in variants.iter().enumerate().skip(i + 1) {
                assert_ne!(v, w, "variants {i} and {j}");
            }
        }
    }
}
