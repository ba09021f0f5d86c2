//! OpenMP `interop` objects (libgomp 15+): choosing the foreign runtime from the
//! compiler's `prefer_type` encoding, creating/synchronising/destroying the
//! `targetsync` stream, and answering the `omp_get_interop_*` property queries.
//!
//! On NVIDIA GPUs the CUDA runtime (`cuda`), the driver API (`cuda_driver`) and HIP
//! (`hip`) all use the same device, context and stream objects, so every choice is
//! served by the driver context and a driver stream.

use crate::cuda::safe::{OwnedStream, Stream};
use crate::cuda::sys::*;
use crate::device::copy::ThreadBuffers;
use crate::device::launch_resources::LaunchResources;
use crate::device::settings::Settings;
use gomp_plugin::error::Result;
use gomp_plugin::libgomp::interop::*;
use std::ffi::{c_char, c_int, CStr};

/// `omp_ifr_cuda`.
pub const FR_CUDA: c_int = 1;
/// `omp_ifr_cuda_driver`.
pub const FR_CUDA_DRIVER: c_int = 2;
/// `omp_ifr_hip`.
pub const FR_HIP: c_int = 5;

/// Picks the first supported foreign runtime from the compiler's `prefer_type`
/// encoding, `cuda` when there is none or none is supported.
///
/// The encoding (as GCC 16 emits it): a sequence of preferences, each `0x80`, the
/// preference's runtime ids (one byte each), `0x80`, then NUL-terminated attribute
/// strings closed by an empty string; a NUL where the next `0x80` would be ends it.
pub fn choose_fr(prefer: &[u8]) -> c_int {
    choose_fr_with(|i| prefer.get(i).copied().unwrap_or(0))
}

/// [`choose_fr`] over a byte reader (`at(i)` is byte `i`); reads no further than the
/// encoding's terminator, so it can walk the compiler's string in place.
pub fn choose_fr_with(at: impl Fn(usize) -> u8) -> c_int {
    let mut i = 0;
    while at(i) == 0x80 {
        i += 1;
        loop {
            let b = at(i);
            i += 1;
            match b {
                0x80 => break,
                0 => return FR_CUDA,
                _ if matches!(b as c_int, FR_CUDA | FR_CUDA_DRIVER | FR_HIP) => return b as c_int,
                _ => {}
            }
        }
        // Attribute strings, closed by an empty one.
        loop {
            let start = i;
            while at(i) != 0 {
                i += 1;
            }
            i += 1;
            if i - start == 1 {
                break;
            }
        }
    }
    FR_CUDA
}

/// `omp_ipr_*` property ids.
const IPR_FR_ID: c_int = -1;
const IPR_FR_NAME: c_int = -2;
const IPR_VENDOR: c_int = -3;
const IPR_VENDOR_NAME: c_int = -4;
const IPR_DEVICE_NUM: c_int = -5;
const IPR_PLATFORM: c_int = -6;
const IPR_DEVICE: c_int = -7;
const IPR_DEVICE_CONTEXT: c_int = -8;
const IPR_TARGETSYNC: c_int = -9;

/// The NVIDIA vendor id of the OpenMP additional-definitions document.
const VENDOR_NVIDIA: isize = 11;

fn fr_name(fr: c_int) -> &'static CStr {
    match fr {
        FR_CUDA_DRIVER => c"cuda_driver",
        FR_HIP => c"hip",
        _ => c"cuda",
    }
}

/// The value of property `prop` of an object using runtime `fr` on CUDA device `cu_dev`
/// with context `ctx`.
pub fn property(obj: &InteropObj, prop: c_int, cu_dev: CUdevice, ctx: CUcontext) -> InteropValue {
    match prop {
        IPR_FR_ID => InteropValue::Int(obj.fr as isize),
        IPR_FR_NAME => InteropValue::Str(fr_name(obj.fr)),
        IPR_VENDOR => InteropValue::Int(VENDOR_NVIDIA),
        IPR_VENDOR_NAME => InteropValue::Str(c"nvidia"),
        IPR_DEVICE_NUM => InteropValue::Int(obj.device_num as isize),
        IPR_DEVICE => InteropValue::Int(cu_dev as isize),
        IPR_DEVICE_CONTEXT if obj.fr != FR_CUDA => InteropValue::Ptr(ctx.cast()),
        IPR_TARGETSYNC if !obj.stream.is_null() => InteropValue::Ptr(obj.stream),
        _ => InteropValue::None,
    }
}

/// The C type of property `prop` for runtime `fr`, as `omp_get_interop_type_desc` says.
pub fn type_desc(fr: c_int, prop: c_int) -> Option<&'static CStr> {
    let by_fr = |cuda: &'static CStr, driver: &'static CStr, hip: &'static CStr| match fr {
        FR_CUDA_DRIVER => driver,
        FR_HIP => hip,
        _ => cuda,
    };
    Some(match prop {
        IPR_FR_ID => c"omp_interop_t",
        IPR_FR_NAME | IPR_VENDOR_NAME => c"const char *",
        IPR_VENDOR | IPR_DEVICE_NUM => c"int",
        IPR_PLATFORM => c"N/A",
        IPR_DEVICE => by_fr(c"int", c"CUdevice", c"hipDevice_t"),
        IPR_DEVICE_CONTEXT => by_fr(c"N/A", c"CUcontext", c"hipCtx_t"),
        IPR_TARGETSYNC => by_fr(c"cudaStream_t", c"CUstream", c"hipStream_t"),
        _ => return None,
    })
}

/// The interop entry point: `flag` 0 = init (choose the runtime, create a stream if
/// `targetsync`), 1 = use (wait for the stream), 2 = destroy (wait, destroy).
///
/// A `targetsync` stream is handed to the program, which may queue work on it at any
/// time: it is made to wait for the deferred host-to-device copies made so far, and
/// while it exists no further copy is deferred (`Parts::may_defer`): counted in
/// the device's `settings` (its run-time switches), ordered by its `launch` resources.
///
/// # Safety
/// `prefer` must be NULL or the compiler's NUL-terminated-list encoding.
pub unsafe fn interop(
    settings: &Settings,
    launch: &LaunchResources<ThreadBuffers>,
    obj: &mut InteropObj,
    flag: u32,
    targetsync: bool,
    prefer: *const c_char,
) -> Result<()> {
    match flag {
        0 => {
            obj.fr = if prefer.is_null() {
                FR_CUDA
            } else {
                // SAFETY: the compiler's encoding is readable up to its terminator,
                // and the parser reads no further (caller).
                choose_fr_with(|i| unsafe { *prefer.add(i) } as u8)
            };
            obj.stream = std::ptr::null_mut();
            if targetsync {
                // Context current (caller). The interop object owns the stream until
                // destroy (flag 2).
                let s = OwnedStream::non_blocking()?;
                // Counted first: a copy deferred from now on sees the count and waits
                // (`Parts::deferred_done`); the ones before are ordered here.
                settings.count_interop_stream(true);
                if let Err(e) = launch.order(s.handle()) {
                    settings.count_interop_stream(false);
                    return Err(e);
                }
                obj.stream = s.into_raw().cast();
            }
            Ok(())
        }
        _ if obj.stream.is_null() => Ok(()),
        1 => {
            // SAFETY: the stream was created by init and is still alive.
            unsafe { Stream::from_raw(obj.stream.cast()) }.synchronize()?;
            Ok(())
        }
        _ => {
            let s: CUstream = obj.stream.cast();
            obj.stream = std::ptr::null_mut();
            // SAFETY: created by init (`into_raw`), destroyed once.
            let s = unsafe { OwnedStream::from_raw(s) };
            settings.count_interop_stream(false);
            if let Err(e) = s.handle().synchronize() {
                // Not destroyed after a failure, as before.
                s.leak();
                return Err(e);
            }
            s.destroy()?;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_void;

    #[test]
    fn prefer_type_encoding() {
        // Measured from gcc-16 -fopenmp: prefer_type({attr("ompx_foo")},
        // {attr("ompx_bar"), fr("cuda"), attr("ompx_foobar")}, {fr("cuda_driver")}, {fr("hip")})
        let a = b"\x80\x80ompx_foo\0\0\x80\x01\x80ompx_bar\0ompx_foobar\0\0\x80\x02\x80\0\x80\x05\x80\0\0";
        assert_eq!(choose_fr(a), FR_CUDA);
        // prefer_type("hip", "cuda_driver")
        assert_eq!(choose_fr(b"\x80\x05\x80\0\x80\x02\x80\0\0"), FR_HIP);
        // prefer_type("hsa", "cuda_driver"): hsa (7) is not served on NVIDIA.
        assert_eq!(choose_fr(b"\x80\x07\x80\0\x80\x02\x80\0\0"), FR_CUDA_DRIVER);
        assert_eq!(choose_fr(b""), FR_CUDA);
        assert_eq!(choose_fr(b"\x80\x07\x80\0\0"), FR_CUDA);
        // Truncated input never panics.
        assert_eq!(choose_fr(b"\x80\x80ompx"), FR_CUDA);
    }

    #[test]
    fn properties_follow_the_runtime() {
        let ctx = 0x1234 as CUcontext;
        let mut o = InteropObj {
            stream: std::ptr::null_mut(),
            device_data: std::ptr::null_mut(),
            fr: FR_CUDA,
            device_num: 3,
        };
        assert_eq!(property(&o, IPR_DEVICE_NUM, 0, ctx), InteropValue::Int(3));
        assert_eq!(property(&o, IPR_DEVICE_CONTEXT, 0, ctx), InteropValue::None);
        assert_eq!(property(&o, IPR_TARGETSYNC, 0, ctx), InteropValue::None);
        assert_eq!(
            as_kind(property(&o, IPR_FR_NAME, 0, ctx), b'i').1,
            IRC_TYPE_STR
        );
        assert_eq!(
            as_kind(property(&o, IPR_PLATFORM, 0, ctx), b'p').1,
            IRC_NO_VALUE
        );
        o.fr = FR_CUDA_DRIVER;
        o.stream = 0x99 as *mut c_void;
        assert_eq!(
            property(&o, IPR_DEVICE_CONTEXT, 0, ctx),
            InteropValue::Ptr(ctx.cast())
        );
        assert_eq!(
            as_kind(property(&o, IPR_TARGETSYNC, 0, ctx), b'p'),
            (InteropValue::Ptr(o.stream), IRC_SUCCESS)
        );
        assert_eq!(type_desc(FR_CUDA_DRIVER, IPR_TARGETSYNC), Some(c"CUstream"));
        assert_eq!(type_desc(FR_HIP, IPR_DEVICE), Some(c"hipDevice_t"));
        assert_eq!(type_desc(FR_CUDA, IPR_DEVICE_CONTEXT), Some(c"N/A"));
        assert_eq!(type_desc(FR_CUDA, 0), None);
    }
}
