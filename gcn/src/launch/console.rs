//! The host side of the output ring (docs/gcn-launch.md §2 "Host drain", §5 reverse
//! offload): device `printf`/`write` output, printed with C `printf` to stdout (as the
//! stock plugin does, so it interleaves with the program's own stdio), and
//! reverse-offload requests handed to `GOMP_PLUGIN_target_rev`.
//!
//! Thread-safety: one drainer per ring (the thread waiting for the launch); the device
//! writes concurrently, so every shared word is accessed atomically with the orders the
//! spec gives (acquire load of `consumed`/`written`, release store of `consumed`).

use super::protocol::*;
use gomp_plugin::libgomp::target::RevCall;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

extern "C" {
    fn printf(fmt: *const c_char, ...) -> c_int;
    fn fflush(f: *mut c_void) -> c_int;
    static stdout: *mut c_void;
}

/// The output ring of one launch, at `base` (the `struct output`).
pub struct Ring {
    base: *mut u8,
}

/// What one drain pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Slots consumed.
    pub slots: u32,
    /// Of which reverse-offload requests.
    pub rev: u32,
}

impl Ring {
    /// # Safety
    /// `base` points to a live `struct output` ([`OUTPUT_SIZE`] bytes, 8-aligned) for
    /// as long as the ring is used.
    pub unsafe fn new(base: *mut u8) -> Ring {
        Ring { base }
    }

    fn u32_at(&self, off: usize) -> &AtomicU32 {
        // SAFETY: in bounds and 4-aligned by the layout; the block lives (new's contract).
        unsafe { &*(self.base.add(off) as *const AtomicU32) }
    }

    fn i32_at(&self, off: usize) -> &AtomicI32 {
        // SAFETY: as in u32_at.
        unsafe { &*(self.base.add(off) as *const AtomicI32) }
    }

    /// Host initialisation before a launch: `next_output`, every `written` and
    /// `consumed` to 0, then `return_value` to 0xcafe0000 (last, with release).
    pub fn reset(&self) {
        self.u32_at(OUT_NEXT).store(0, Ordering::Relaxed);
        for i in 0..RING_SLOTS {
            self.i32_at(slot_offset(i) + SLOT_WRITTEN)
                .store(0, Ordering::Relaxed);
        }
        self.u32_at(OUT_CONSUMED).store(0, Ordering::Relaxed);
        self.u32_at(OUT_RETURN)
            .store(RETURN_INIT, Ordering::Release);
    }

    /// `return_value`.
    pub fn return_value(&self) -> u32 {
        self.u32_at(OUT_RETURN).load(Ordering::Acquire)
    }

    /// One drain pass (`console_output`): prints the written slots in order, hands
    /// reverse-offload requests to `rev` (which returns when the host function ran),
    /// and releases each slot. On the `last` pass (after completion) unwritten slots
    /// up to `next_output` are printed too and an overflow is reported.
    pub fn drain(&self, last: bool, rev: &mut dyn FnMut(RevCall)) -> Drained {
        let from = self.u32_at(OUT_CONSUMED).load(Ordering::Acquire);
        let to = self.u32_at(OUT_NEXT).load(Ordering::Acquire);
        let mut d = Drained::default();
        if from > to {
            if last {
                // SAFETY: a constant format without conversions.
                unsafe { printf(c"GCN print buffer overflowed.\n".as_ptr()) };
                self.flush();
            }
            return d;
        }
        for i in from..to {
            let s = slot_offset(i);
            if self.i32_at(s + SLOT_WRITTEN).load(Ordering::Acquire) == 0 && !last {
                break;
            }
            // SAFETY: the slot's fields lie inside the ring; `%.128s` never reads past
            // the 128-byte fields.
            unsafe {
                let msg = self.base.add(s + SLOT_MSG) as *const c_char;
                let val = self.base.add(s + SLOT_VALUE);
                match self.i32_at(s + SLOT_TYPE).load(Ordering::Relaxed) {
                    0 => {
                        printf(c"%.128s%ld\n".as_ptr(), msg, (val as *const i64).read());
                    }
                    1 => {
                        printf(c"%.128s%f\n".as_ptr(), msg, (val as *const f64).read());
                    }
                    2 => {
                        printf(c"%.128s%.128s\n".as_ptr(), msg, val as *const c_char);
                    }
                    3 => {
                        printf(c"%.128s%.128s".as_ptr(), msg, val as *const c_char);
                    }
                    4 => {
                        let w = |k: usize| (val.add(8 * k) as *const u64).read_volatile();
                        // A reverse-offload request: `value_u64[0..6]` of a type-4 slot,
                        // the device number `GOMP_ADDITIONAL_ICVS.device_num`.
                        let r = RevCall {
                            fn_addr: w(0),
                            mapnum: w(1),
                            addrs: w(2),
                            sizes: w(3),
                            kinds: w(4),
                            dev_num: w(5) as c_int,
                        };
                        // Output printed so far goes out before the host function runs.
                        self.flush();
                        rev(r);
                        d.rev += 1;
                    }
                    _ => {
                        printf(c"GCN print buffer error!\n".as_ptr());
                    }
                }
            }
            self.i32_at(s + SLOT_WRITTEN).store(0, Ordering::Release);
            self.u32_at(OUT_CONSUMED).store(i + 1, Ordering::Release);
            d.slots += 1;
        }
        if d.slots > 0 {
            self.flush();
        }
        d
    }

    fn flush(&self) {
        // SAFETY: the C library's stdout stream.
        unsafe { fflush(stdout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring in host memory, written the way the device's `write` does.
    struct Fake(Vec<u64>);
    impl Fake {
        fn new() -> Fake {
            Fake(vec![0; OUTPUT_SIZE / 8])
        }
        fn ring(&mut self) -> Ring {
            // SAFETY: the vector is OUTPUT_SIZE bytes, 8-aligned, outlives the ring.
            unsafe { Ring::new(self.0.as_mut_ptr().cast()) }
        }
        fn post(&mut self, ty: i32, vals: &[u64], written: bool) {
            let r = self.ring();
            let i = r.u32_at(OUT_NEXT).fetch_add(1, Ordering::SeqCst);
            let s = slot_offset(i);
            r.i32_at(s + SLOT_TYPE).store(ty, Ordering::Relaxed);
            for (k, v) in vals.iter().enumerate() {
                // SAFETY: inside the slot's union.
                unsafe { (r.base.add(s + SLOT_VALUE + 8 * k) as *mut u64).write(*v) };
            }
            r.i32_at(s + SLOT_WRITTEN)
                .store(written as i32, Ordering::Release);
        }
    }

    #[test]
    fn reset_and_reverse_offload_requests() {
        let mut f = Fake::new();
        let r = f.ring();
        r.u32_at(OUT_CONSUMED).store(9, Ordering::Relaxed);
        r.reset();
        assert_eq!(r.return_value(), RETURN_INIT);
        assert_eq!(r.u32_at(OUT_CONSUMED).load(Ordering::Relaxed), 0);
        f.post(4, &[0xf00, 2, 0xa0, 0xb0, 0xc0, 1], true);
        f.post(4, &[0xf01, 0, 0, 0, 0, 1], false);
        let mut got = Vec::new();
        let r = f.ring();
        let d = r.drain(false, &mut |q| got.push(q));
        assert_eq!(
            d,
            Drained { slots: 1, rev: 1 },
            "stops at the unwritten slot"
        );
        assert_eq!(
            got,
            [RevCall {
                fn_addr: 0xf00,
                mapnum: 2,
                addrs: 0xa0,
                sizes: 0xb0,
                kinds: 0xc0,
                dev_num: 1
            }]
        );
        assert_eq!(r.i32_at(slot_offset(0)).load(Ordering::Relaxed), 0);
        assert_eq!(r.u32_at(OUT_CONSUMED).load(Ordering::Relaxed), 1);
        let d = r.drain(true, &mut |q| got.push(q));
        assert_eq!(d.slots, 1, "the last pass takes unwritten slots too");
        assert_eq!(got[1].fn_addr, 0xf01);
        // consumed beyond next_output: nothing consumed (the last pass would print the
        // overflow message: gcn/tests/launch.rs).
        r.u32_at(OUT_CONSUMED).store(5, Ordering::Relaxed);
        assert_eq!(r.drain(false, &mut |_| panic!()), Drained::default());
    }
}
