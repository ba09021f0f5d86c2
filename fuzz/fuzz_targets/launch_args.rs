//! Target-argument decoding and launch geometry on arbitrary argument words and
//! device/kernel limits: never panics; the geometry always stays within the limits.
#![no_main]
use gomp_plugin_nvptx::launch::geometry::{decode_args, geometry, Limits, MAX_WARPS};
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
    let g = geometry(req, lim);
    assert!(g.warps >= 1 && g.warps <= MAX_WARPS as u32);
    assert!(g.teams >= 1);
});
