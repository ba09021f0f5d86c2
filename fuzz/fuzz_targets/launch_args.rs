//! Target-argument decoding and launch geometry on arbitrary argument words and
//! device/kernel limits: never panics; the geometry always stays within the limits.
#![no_main]
use gomp_plugin_nvptx::device::tune::Tune;
use gomp_plugin_nvptx::launch::geometry::{decode_args, geometry, teams, warps, Limits, MAX_WARPS};
use libfuzzer_sys::fuzz_target;
use std::ffi::c_void;

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
    // The rest: little-endian words; the array is NULL-terminated as libgomp's is, and
    // a SUBSEQUENT_PARAM id at the end gets a value word so the contract holds.
    let mut words: Vec<*mut c_void> = data[8..]
        .chunks(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            usize::from_le_bytes(b) as *mut c_void
        })
        .take_while(|w| !w.is_null())
        .collect();
    words.push(1usize as *mut c_void);
    words.push(std::ptr::null_mut());
    // SAFETY: NULL-terminated, and every id word (even a value word read as an id) is
    // followed by at least one more word before the terminator or is the terminator.
    let req = unsafe { decode_args(words.as_ptr()) };
    // The second half of the same words read as the device's team ICVs.
    // SAFETY: a suffix of the array above, which keeps its guarantee.
    let icv = unsafe { decode_args(words.as_ptr().add(words.len() / 2)) };
    let g = geometry(req, icv, &tune, lim);
    assert!(g.warps >= 1 && g.warps <= MAX_WARPS as u32);
    assert!(g.teams >= 1);
    // With an occupancy answer of any size (0 included: "none fit").
    let resident = |w: u32| Some(u32::from(data[6]) / w);
    let w = warps(req, icv, &tune, lim, resident);
    assert!((1..=MAX_WARPS as u32).contains(&w));
    assert!(teams(req, icv, &tune, lim, w, resident(w)) >= 1);
});
