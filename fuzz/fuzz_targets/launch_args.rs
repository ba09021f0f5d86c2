//! Target-argument decoding and launch geometry on arbitrary argument words and
//! device/kernel limits: never panics; the geometry always stays within the limits.
#![no_main]
use gomp_plugin_nvptx::config::tune::Tune;
use gomp_plugin::libgomp::abi::TARGET_TYPE_NVIDIA_PTX;
use gomp_plugin::libgomp::target_args::{decode, KernelAttributes, LaunchRequest};
use gomp_plugin_nvptx::launch::geometry::{geometry, teams, warps, Limits, MAX_WARPS, Requested};
use libfuzzer_sys::fuzz_target;

/// What nvptx reads of the framework's decoding of `words` (no attribute block is read:
/// the reader answers an empty one).
fn requested(words: &[usize]) -> Requested {
    let r = LaunchRequest::from_args(0, decode(words.iter().copied()), TARGET_TYPE_NVIDIA_PTX as usize, |_| {
        KernelAttributes::default()
    });
    Requested::from(&r)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 16 {
        return;
    }
    let lim = Limits {
        num_sms: i32::from(data[0]),
        regs_per_sm: i32::from(u16::from_le_bytes([data[1], data[2]])) * 4,
        max_threads_per_block: i32::from(u16::from_le_bytes([data[3], data[4]])),
        regs_per_thread: i32::from(data[5]),
        max_teams: i32::from(data[6]) << 8,
    };
    let tune = match data[7] % 3 {
        0 => Tune::default(),
        1 => Tune {
            warps: None,
            ..Tune::default()
        },
        _ => Tune::parse("warps=32,teams=4x").unwrap(),
    };
    // The rest: little-endian words, NULL-terminated as libgomp's array is.
    let mut words: Vec<usize> = data[8..]
        .chunks(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            usize::from_le_bytes(b)
        })
        .take_while(|&w| w != 0)
        .collect();
    words.push(0);
    let req = requested(&words);
    // The second half of the same words read as the device's team ICVs.
    let icv = requested(&words[words.len() / 2..]);
    let g = geometry(req, icv, &tune, lim);
    assert!(g.warps >= 1 && g.warps <= MAX_WARPS as u32);
    assert!(g.teams >= 1);
    // With an occupancy answer of any size (0 included: "none fit").
    let resident = |w: u32| Some(u32::from(data[6]) / w);
    let w = warps(req, icv, &tune, lim, resident);
    assert!((1..=MAX_WARPS as u32).contains(&w));
    assert!(teams(req, icv, &tune, lim, w, resident(w)) >= 1);
});
