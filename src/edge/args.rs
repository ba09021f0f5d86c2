//! Arguments whose presence depends on the libgomp release that calls us. An argument
//! an older libgomp does not pass holds whatever the caller left in its register, so
//! the shells must neither read nor write through it: libgomp 12 calls
//! `get_num_devices()` without the `requires` mask and `load_image` with four
//! arguments, libgomp 13 with five (spec §1.2-§1.5, §4). Pure functions of the
//! detected release; thread-safe.

use crate::libgomp::abi::version_lib;
use crate::libgomp::version::Libgomp;
use std::ffi::c_void;

/// The `requires` mask to act on: `raw` when `libgomp` passes one, 0 for libgomp 12
/// (which has no `requires` handling and passes no argument). `None` (no libgomp
/// loaded, e.g. a test driving the entry points directly) takes `raw` as given.
pub fn requires_mask(libgomp: Option<Libgomp>, raw: u32) -> u32 {
    match libgomp {
        Some(v) if !v.passes_requires_mask() => 0,
        _ => raw,
    }
}

/// Whether `openacc_exec`'s `devaddrs` is a host array of the `mapnum` mapped device
/// addresses (libgomp 12) rather than the device address of that block, which libgomp
/// 13 and later fill themselves. `None` (no libgomp loaded) takes the newer form.
pub fn acc_devaddrs_on_host(libgomp: Option<Libgomp>) -> bool {
    libgomp == Some(Libgomp::V12)
}

/// The kernel's argument array for libgomp 12's `openacc_exec`, from its host arrays of
/// `mapnum` entries: each mapped device address, or the host address where libgomp left
/// the device address 0 (data that is not on the device, such as a `no_create` of
/// absent data, is reached through its host address, as the stock plugin of that
/// release does). Empty when `mapnum` is 0.
///
/// # Safety
/// When `mapnum` is non-zero, `hostaddrs` and `devaddrs` are each readable for `mapnum`
/// pointers (libgomp's contract).
pub unsafe fn acc_host_block(
    mapnum: usize,
    hostaddrs: *const *mut c_void,
    devaddrs: *const *mut c_void,
) -> Vec<*mut c_void> {
    if mapnum == 0 || devaddrs.is_null() {
        return Vec::new();
    }
    // SAFETY: readable for `mapnum` entries (caller).
    let dev = unsafe { std::slice::from_raw_parts(devaddrs, mapnum) };
    let host = if hostaddrs.is_null() {
        None
    } else {
        // SAFETY: as above.
        Some(unsafe { std::slice::from_raw_parts(hostaddrs, mapnum) })
    };
    dev.iter()
        .enumerate()
        .map(|(i, &d)| match (d.is_null(), host) {
            (true, Some(h)) => h[i],
            _ => d,
        })
        .collect()
}

/// The two optional tables of `load_image` that `libgomp` really passed, for an image
/// of version word `image_version`: `rev_fn_table` (13+) and `host_ind_fn_table` (14+,
/// and only for images that can have indirect functions, library version 3 or newer).
/// The others come back NULL. `None` (no libgomp loaded) keeps `rev_fn_table` and
/// drops `host_ind_fn_table`.
pub fn load_image_tables(
    libgomp: Option<Libgomp>,
    image_version: u32,
    rev_fn_table: *mut *mut u64,
    host_ind_fn_table: *mut u64,
) -> (*mut *mut u64, *const u64) {
    let args = libgomp.map_or(5, Libgomp::load_image_args);
    let rev = if args >= 5 {
        rev_fn_table
    } else {
        std::ptr::null_mut()
    };
    let ind = if args >= 6 && version_lib(image_version) >= 3 {
        host_ind_fn_table.cast_const()
    } else {
        std::ptr::null()
    };
    (rev, ind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Libgomp::*;

    #[test]
    fn libgomp_12_passes_acc_devaddrs_on_the_host() {
        assert!(acc_devaddrs_on_host(Some(V12)));
        for v in [V13, V14, V15, V16] {
            assert!(!acc_devaddrs_on_host(Some(v)));
        }
        assert!(!acc_devaddrs_on_host(None));
    }

    #[test]
    fn libgomp_12_block_takes_the_host_address_where_the_device_address_is_null() {
        let mut a = 1u8;
        let mut b = 2u8;
        let host = [
            &mut a as *mut u8 as *mut c_void,
            &mut b as *mut u8 as *mut c_void,
        ];
        let dev = [std::ptr::null_mut(), 0x7000usize as *mut c_void];
        // SAFETY: both arrays hold 2 entries.
        let block = unsafe { acc_host_block(2, host.as_ptr(), dev.as_ptr()) };
        assert_eq!(block, vec![host[0], dev[1]]);
        // SAFETY: mapnum 0 reads nothing.
        assert!(unsafe { acc_host_block(0, std::ptr::null(), std::ptr::null()) }.is_empty());
    }

    #[test]
    fn libgomp_12_passes_no_requires_mask() {
        // What libgomp 12 leaves in the argument register is not a mask.
        assert_eq!(requires_mask(Some(V12), 0x20), 0);
        assert_eq!(requires_mask(Some(V12), u32::MAX), 0);
        for v in [V13, V14, V15, V16] {
            assert_eq!(requires_mask(Some(v), 0x20), 0x20);
        }
        assert_eq!(requires_mask(None, 0x80), 0x80);
    }

    #[test]
    fn load_image_tables_follow_the_release() {
        let garbage_rev = 0x1234 as *mut *mut u64;
        let garbage_ind = 0x5678 as *mut u64;
        let t = |v, img| load_image_tables(v, img, garbage_rev, garbage_ind);
        // libgomp 12: four arguments, neither table (GCC 12 images: version 0x10001).
        assert_eq!(
            t(Some(V12), 0x10001),
            (std::ptr::null_mut(), std::ptr::null())
        );
        // libgomp 13: five arguments, no indirect-function table.
        assert_eq!(t(Some(V13), 0x20001), (garbage_rev, std::ptr::null()));
        // libgomp 14+: six, the indirect table only for version-3 images.
        for v in [V14, V15, V16] {
            assert_eq!(t(Some(v), 0x30001), (garbage_rev, garbage_ind.cast_const()));
            assert_eq!(t(Some(v), 0x20001), (garbage_rev, std::ptr::null()));
            assert_eq!(t(Some(v), 0x10001), (garbage_rev, std::ptr::null()));
        }
        assert_eq!(t(None, 0x30001), (garbage_rev, std::ptr::null()));
    }
}
