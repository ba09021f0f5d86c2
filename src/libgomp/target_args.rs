//! libgomp's target arguments (`GOMP_TARGET_ARG_*`, the `args` of `run`/`async_run`):
//! a NULL-terminated array of id words, each carrying its value in its upper bits or,
//! with [`SUBSEQUENT_PARAM`], in the word after it. Decoded once, by the exported shells,
//! into a [`LaunchRequest`] that the backends read (teams, thread limit, the gcn
//! device's kernel-attribute block). Pure but for [`LaunchRequest::decode`], which reads
//! libgomp's arrays.

use std::ffi::c_void;

/// The device an argument is for (an `OFFLOAD_TARGET_TYPE_*`, or [`DEVICE_ALL`]).
pub const DEVICE_MASK: usize = 0x7f;
/// An argument for every device.
pub const DEVICE_ALL: usize = 0;
/// The value is in the next word.
pub const SUBSEQUENT_PARAM: usize = 1 << 7;
/// The argument's id.
pub const ID_MASK: usize = 0xff << 8;
/// `GOMP_TARGET_ARG_NUM_TEAMS`.
pub const NUM_TEAMS: usize = 1 << 8;
/// `GOMP_TARGET_ARG_THREAD_LIMIT`.
pub const THREAD_LIMIT: usize = 2 << 8;
/// `GOMP_TARGET_ARG_HSA_KERNEL_ATTRIBUTES` (device-specific: with the GCN device).
pub const HSA_KERNEL_ATTRIBUTES: usize = 1 << 8;
/// Where an in-word value starts.
pub const VALUE_SHIFT: u32 = 16;

/// One decoded argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arg {
    /// `id & DEVICE_MASK`.
    pub device: usize,
    /// `id & ID_MASK`.
    pub id: usize,
    /// The value, sign-extended from the id word or the next word as a signed word.
    pub value: isize,
    /// The next word as it is (an address, for device-specific blocks); 0 for an
    /// in-word value.
    pub raw: usize,
}

/// Decodes argument words up to the 0 terminator (or the end of `words`; a missing
/// value word reads as 0).
pub fn decode(words: impl IntoIterator<Item = usize>) -> impl Iterator<Item = Arg> {
    let mut w = words.into_iter();
    std::iter::from_fn(move || {
        let id = w.next().filter(|&id| id != 0)?;
        let (value, raw) = if id & SUBSEQUENT_PARAM != 0 {
            let v = w.next().unwrap_or(0);
            (v as isize, v)
        } else {
            ((id as isize) >> VALUE_SHIFT, 0)
        };
        Some(Arg {
            device: id & DEVICE_MASK,
            id: id & ID_MASK,
            value,
            raw,
        })
    })
}

/// Decodes libgomp's array at `args` (nothing for NULL), reading no word past its
/// terminator.
///
/// # Safety
/// `args` is NULL or libgomp's NULL-terminated target-argument array (an id with
/// [`SUBSEQUENT_PARAM`] is followed by its value word), alive while the iterator is used.
pub unsafe fn decode_ptr(args: *const *mut c_void) -> impl Iterator<Item = Arg> {
    let mut p = args.cast::<usize>();
    decode(std::iter::from_fn(move || {
        if p.is_null() {
            return None;
        }
        // SAFETY: `decode` asks for a word only while it has not seen the terminator,
        // so `p` is inside the array (caller).
        let w = unsafe { p.read() };
        // SAFETY: one past the word just read: at most one past the terminator.
        p = unsafe { p.add(1) };
        Some(w)
    }))
}

/// The legacy kernel-attribute block of `GOMP_TARGET_ARG_HSA_KERNEL_ATTRIBUTES`:
/// `{u32 ndim; u32 gdims[3]; u32 wdims[3]}` in host memory, written by the compiler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelAttributes {
    /// Dimensions used (1-3 in a valid block).
    pub ndim: u32,
    /// Grid sizes.
    pub gdims: [u32; 3],
    /// Work-group sizes.
    pub wdims: [u32; 3],
}

impl KernelAttributes {
    /// Reads the block at `p`; a NULL `p` reads as all zero (no dimensions).
    ///
    /// # Safety
    /// `p` is NULL or points to 7 readable `u32` (the compiler's block).
    pub unsafe fn read(p: usize) -> KernelAttributes {
        if p == 0 {
            return KernelAttributes::default();
        }
        // SAFETY: caller's guarantee.
        let w = unsafe { std::slice::from_raw_parts(p as *const u32, 7) };
        KernelAttributes {
            ndim: w[0],
            gdims: [w[1], w[2], w[3]],
            wdims: [w[4], w[5], w[6]],
        }
    }
}

/// One OpenMP launch as libgomp asked for it (`run`, `async_run`): the mapped-variable
/// block and what the target arguments say. Built once, by the exported shell; a plain
/// value, `Send`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchRequest {
    /// Device address of the mapped-variable block (`tgt_vars`, 0 when none).
    pub vars: u64,
    /// The `num_teams` clause for every device, clamped to `i32` (0 or less: not given).
    pub teams: i32,
    /// The `thread_limit` clause for every device, clamped to `i32` (0 or less: not
    /// given).
    pub thread_limit: i32,
    /// Whether the arguments hold any entry for every device ([`DEVICE_ALL`]).
    pub for_all_devices: bool,
    /// The first kernel-attribute block for the product's own device type, if any.
    pub kernel_attributes: Option<KernelAttributes>,
}

impl LaunchRequest {
    /// The request from decoded arguments `args` for a product of device type
    /// `target_type` (an `OFFLOAD_TARGET_TYPE_*`); `attributes` reads a kernel-attribute
    /// block at an address. Later entries of one id replace earlier ones.
    pub fn from_args(
        vars: u64,
        args: impl IntoIterator<Item = Arg>,
        target_type: usize,
        attributes: impl Fn(usize) -> KernelAttributes,
    ) -> LaunchRequest {
        let mut r = LaunchRequest {
            vars,
            ..LaunchRequest::default()
        };
        for a in args {
            let val = a.value.clamp(i32::MIN as isize, i32::MAX as isize) as i32;
            match (a.device, a.id) {
                (DEVICE_ALL, NUM_TEAMS) => r.teams = val,
                (DEVICE_ALL, THREAD_LIMIT) => r.thread_limit = val,
                (d, HSA_KERNEL_ATTRIBUTES)
                    if d == target_type && d != DEVICE_ALL && r.kernel_attributes.is_none() =>
                {
                    r.kernel_attributes = Some(attributes(a.raw));
                }
                _ => {}
            }
            r.for_all_devices |= a.device == DEVICE_ALL;
        }
        r
    }

    /// Decodes libgomp's `tgt_vars` and target-argument array `args` for a product of
    /// device type `target_type`, reading a kernel-attribute block for that type.
    ///
    /// # Safety
    /// `args` as [`decode_ptr`] requires; a kernel-attribute entry for `target_type`
    /// holds NULL or the address of the compiler's block (see [`KernelAttributes::read`]).
    pub unsafe fn decode(
        vars: *mut c_void,
        args: *const *mut c_void,
        target_type: usize,
    ) -> LaunchRequest {
        // SAFETY: caller's guarantees, for the array and for the blocks it names.
        unsafe {
            Self::from_args(vars as u64, decode_ptr(args), target_type, |p| {
                KernelAttributes::read(p)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_values_and_the_terminator() {
        let a = [
            3 << 16 | NUM_TEAMS,
            SUBSEQUENT_PARAM | THREAD_LIMIT,
            0,
            (-1isize << 16) as usize | 5 | NUM_TEAMS,
            0,
            99,
        ];
        let got: Vec<Arg> = decode(a).collect();
        assert_eq!(
            got,
            [
                Arg {
                    device: 0,
                    id: NUM_TEAMS,
                    value: 3,
                    raw: 0
                },
                Arg {
                    device: 0,
                    id: THREAD_LIMIT,
                    value: 0,
                    raw: 0
                },
                Arg {
                    device: 5,
                    id: NUM_TEAMS,
                    value: -1,
                    raw: 0
                },
            ],
            "a value word of 0 is a value, not the terminator"
        );
        let p: Vec<*mut c_void> = a.iter().map(|&w| w as *mut c_void).collect();
        // SAFETY: a NULL-terminated array (the second 0 ends it).
        assert_eq!(unsafe { decode_ptr(p.as_ptr()) }.count(), 3);
        // SAFETY: NULL is accepted.
        assert_eq!(unsafe { decode_ptr(std::ptr::null()) }.count(), 0);
        assert_eq!(
            decode([SUBSEQUENT_PARAM | NUM_TEAMS]).next().unwrap().value,
            0
        );
    }
    #[test]
    fn launch_requests() {
        let none = |_| panic!("no attribute block expected");
        let r = LaunchRequest::from_args(
            0x1000,
            decode([
                3 << 16 | NUM_TEAMS,
                SUBSEQUENT_PARAM | THREAD_LIMIT,
                1 << 40,
                NUM_TEAMS | 5 | 9 << 16,
                0,
            ]),
            8,
            none,
        );
        assert_eq!(
            r,
            LaunchRequest {
                vars: 0x1000,
                teams: 3,
                thread_limit: i32::MAX,
                for_all_devices: true,
                kernel_attributes: None,
            },
            "clamped; another device's entry ignored"
        );
        let r = LaunchRequest::from_args(0, decode([5 << 16 | 0x105, 0]), 8, none);
        assert_eq!(r, LaunchRequest::default(), "only another device's entries");
        // The gcn device's attribute block: the first one is read, at its address.
        let block = KernelAttributes {
            ndim: 2,
            gdims: [4, 2, 0],
            wdims: [2, 1, 0],
        };
        let read = |p: usize| {
            assert_eq!(p, 0x1234);
            block
        };
        let a = [
            SUBSEQUENT_PARAM | HSA_KERNEL_ATTRIBUTES | 8,
            0x1234,
            SUBSEQUENT_PARAM | HSA_KERNEL_ATTRIBUTES | 8,
            0x5678,
            0,
        ];
        let r = LaunchRequest::from_args(0, decode(a), 8, read);
        assert_eq!(r.kernel_attributes, Some(block));
        assert!(!r.for_all_devices);
        assert_eq!(
            LaunchRequest::from_args(0, decode(a), 5, none).kernel_attributes,
            None,
            "another product's device type"
        );
        let words = [7u32, 1, 2, 3, 4, 5, 6];
        // SAFETY: 7 readable words; NULL is accepted.
        unsafe {
            assert_eq!(
                KernelAttributes::read(words.as_ptr() as usize),
                KernelAttributes {
                    ndim: 7,
                    gdims: [1, 2, 3],
                    wdims: [4, 5, 6]
                }
            );
            assert_eq!(KernelAttributes::read(0), KernelAttributes::default());
        }
    }
}
