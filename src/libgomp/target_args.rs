//! libgomp's target arguments (`GOMP_TARGET_ARG_*`, the `args` of `run`/`async_run`):
//! a NULL-terminated array of id words, each carrying its value in its upper bits or,
//! with [`SUBSEQUENT_PARAM`], in the word after it. One decoder for every backend; each
//! picks the arguments it uses (teams, thread limit, device-specific blocks). Pure.

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
}
