//! Rectangular copies (`memcpy2d`, `memcpy3d`, libgomp 14+): `omp_target_memcpy_rect`
//! between host and device or device and device, as one CUDA copy instead of a copy
//! per row. The sides come from the framework's [`Rect`].

use crate::cuda::sys::*;
use crate::device::copy::ThreadBuffers;
use crate::device::launch_resources::LaunchResources;
use gomp_plugin::error::Result;
use gomp_plugin::rect::Side;
use std::ffi::c_void;

fn kind(s: &Side) -> CUmemorytype {
    if s.is_host() {
        CU_MEMORYTYPE_HOST
    } else {
        CU_MEMORYTYPE_DEVICE
    }
}

/// The CUDA description of a 2-D copy of `height` rows of `width` bytes.
pub fn desc2d(dst: Side, src: Side, width: usize, height: usize) -> CUDA_MEMCPY2D {
    // SAFETY: CUDA_MEMCPY2D is plain data; all-zero is a valid (empty) value.
    let mut c: CUDA_MEMCPY2D = unsafe { std::mem::zeroed() };
    c.srcMemoryType = kind(&src);
    c.srcHost = src.ptr as *const c_void;
    c.srcDevice = src.ptr as CUdeviceptr;
    c.srcPitch = src.pitch;
    c.dstMemoryType = kind(&dst);
    c.dstHost = dst.ptr as *mut c_void;
    c.dstDevice = dst.ptr as CUdeviceptr;
    c.dstPitch = dst.pitch;
    c.WidthInBytes = width;
    c.Height = height;
    c
}

/// The CUDA description of a 3-D copy of `depth` slices of `height` rows of `width` bytes.
pub fn desc3d(dst: Side, src: Side, width: usize, height: usize, depth: usize) -> CUDA_MEMCPY3D {
    // SAFETY: CUDA_MEMCPY3D is plain data; all-zero is a valid (empty) value.
    let mut c: CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
    c.srcMemoryType = kind(&src);
    c.srcHost = src.ptr as *const c_void;
    c.srcDevice = src.ptr as CUdeviceptr;
    c.srcPitch = src.pitch;
    c.srcHeight = src.rows;
    c.dstMemoryType = kind(&dst);
    c.dstHost = dst.ptr as *mut c_void;
    c.dstDevice = dst.ptr as CUdeviceptr;
    c.dstPitch = dst.pitch;
    c.dstHeight = dst.rows;
    c.WidthInBytes = width;
    c.Height = height;
    c.Depth = depth;
    c
}

/// Copies a 2-D block on the calling thread's stream of the device whose `launch`
/// resources these are; retries with the unaligned variant when the driver rejects
/// the pitches (as it does for pitches that are not multiples of its alignment).
///
/// # Safety
/// The host side(s) must be valid for the whole block.
pub unsafe fn copy2d(launch: &LaunchResources<ThreadBuffers>, c: &CUDA_MEMCPY2D) -> Result<()> {
    if c.WidthInBytes == 0 || c.Height == 0 {
        return Ok(());
    }
    // SAFETY: valid descriptor (caller); the stream is waited for.
    let r = launch.on_stream(|s| unsafe { s.copy_2d(c) });
    match r {
        Err(e) if e.has_code(CUDA_ERROR_INVALID_VALUE) => {
            // The legacy stream is not ordered after deferred copies on non-blocking
            // streams.
            launch.settle()?;
            // SAFETY: as above; the unaligned copy is synchronous on the legacy
            // stream, which is then waited for.
            unsafe { crate::cuda::safe::cu_mem::copy_2d_unaligned(c) }?;
            crate::cuda::safe::Stream::LEGACY.synchronize()?;
            Ok(())
        }
        r => r,
    }
}

/// Copies a 3-D block (on the calling thread's stream of `launch`'s device).
///
/// # Safety
/// The host side(s) must be valid for the whole block.
pub unsafe fn copy3d(launch: &LaunchResources<ThreadBuffers>, c: &CUDA_MEMCPY3D) -> Result<()> {
    if c.WidthInBytes == 0 || c.Height == 0 || c.Depth == 0 {
        return Ok(());
    }
    // SAFETY: valid descriptor (caller); the stream is waited for.
    launch.on_stream(|s| unsafe { s.copy_3d(c) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_name_the_right_memory() {
        let h = Side {
            ord: -1,
            ptr: 0x1000,
            pitch: 256,
            rows: 4,
        };
        let d = Side {
            ord: 0,
            ptr: 0x7000,
            pitch: 512,
            rows: 8,
        };
        let c = desc2d(d, h, 100, 3);
        assert_eq!(
            (c.srcMemoryType, c.dstMemoryType),
            (CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_DEVICE)
        );
        assert_eq!(
            (c.srcPitch, c.dstPitch, c.WidthInBytes, c.Height),
            (256, 512, 100, 3)
        );
        assert_eq!(c.dstDevice, 0x7000);
        let c = desc3d(h, d, 10, 2, 5);
        assert_eq!((c.srcHeight, c.dstHeight, c.Depth), (8, 4, 5));
        assert_eq!(c.dstHost as usize, 0x1000);
    }
}
