//! Plain driver queries: initialisation, devices, versions, memory information and
//! pointer attributes. Each is one driver call; all are thread-safe.

use crate::cu;
use crate::cuda::sys::*;
use crate::cuda::table;
use gomp_plugin::error::Result;
use std::ffi::c_char;

/// `cuInit(0)` (idempotent).
#[inline]
pub fn init() -> Result<()> {
    // SAFETY: plain initialisation call.
    unsafe { cu!(cuInit(0)) }
}

/// Number of CUDA devices.
#[inline]
pub fn device_count() -> Result<i32> {
    let mut n = 0;
    // SAFETY: out-pointer to a local.
    unsafe { cu!(cuDeviceGetCount(&mut n)) }?;
    Ok(n)
}

/// The CUDA device of ordinal `ord`.
#[inline]
pub fn device(ord: i32) -> Result<CUdevice> {
    let mut dev: CUdevice = 0;
    // SAFETY: out-pointer to a local.
    unsafe { cu!(cuDeviceGet(&mut dev, ord)) }?;
    Ok(dev)
}

/// One attribute of `dev`.
#[inline]
pub fn attribute(dev: CUdevice, a: CUdevice_attribute) -> Result<i32> {
    let mut v = 0;
    // SAFETY: out-pointer to a local.
    unsafe { cu!(cuDeviceGetAttribute(&mut v, a, dev)) }?;
    Ok(v)
}

/// The device's name as the driver writes it: NUL-terminated within 256 bytes.
#[inline]
pub fn name(dev: CUdevice) -> Result<[c_char; 256]> {
    let mut name = [0 as c_char; 256];
    // SAFETY: the buffer holds 256 bytes.
    unsafe { cu!(cuDeviceGetName(name.as_mut_ptr(), 256, dev)) }?;
    Ok(name)
}

/// Total memory of `dev`, bytes.
#[inline]
pub fn total_mem(dev: CUdevice) -> Result<usize> {
    let mut total = 0usize;
    // SAFETY: out-pointer to a local.
    unsafe { cu!(cuDeviceTotalMem(&mut total, dev)) }?;
    Ok(total)
}

/// `(free, total)` memory of the current context's device, bytes.
#[inline]
pub fn mem_info() -> Result<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: out-pointers to locals; a context is current (caller).
    unsafe { cu!(cuMemGetInfo(&mut free, &mut total)) }?;
    Ok((free, total))
}

/// The driver's version (`cuDriverGetVersion`).
#[inline]
pub fn driver_version() -> Result<i32> {
    let mut v = 0;
    // SAFETY: out-pointer to a local.
    unsafe { cu!(cuDriverGetVersion(&mut v)) }?;
    Ok(v)
}

/// The UUID of `dev` (`cuDeviceGetUuid_v2`, else `cuDeviceGetUuid`), `None` if the
/// driver cannot tell.
#[inline]
pub fn uuid(dev: CUdevice) -> Option<[u8; 16]> {
    let d = table::loaded()?;
    let mut u = CUuuid { bytes: [0; 16] };
    // SAFETY: out-pointer to a local; stand-ins return NOT_SUPPORTED without writing.
    let ok = unsafe {
        (d.cuDeviceGetUuid_v2)(&mut u, dev) == 0 || (d.cuDeviceGetUuid)(&mut u, dev) == 0
    };
    ok.then(|| u.bytes.map(|b| b as u8))
}

/// The memory type the driver records for address `p` (`CU_POINTER_ATTRIBUTE_MEMORY_TYPE`);
/// an error for memory the driver does not know (pageable host memory).
#[inline]
pub fn memory_type(p: CUdeviceptr) -> Result<CUmemorytype> {
    let mut kind: CUmemorytype = 0;
    // SAFETY: out-pointer to a local of the attribute's type (an int); an unknown
    // address is an error return, not a fault.
    unsafe {
        cu!(cuPointerGetAttribute(
            (&mut kind as *mut CUmemorytype).cast(),
            CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            p
        ))
    }?;
    Ok(kind)
}
