//! Reading and checking a gcn image as libgomp passes it to `load_image`: mkoffload's
//! descriptor ([`super::descriptor`]), the code object ([`super::code_object`]), its
//! kernel descriptors and its target ([`super::mach`]). Pure (reads the caller's
//! memory only); thread-safe.

use super::{code_object, descriptor, mach};
use gomp_plugin::error::{Error, Result};
use std::ffi::c_void;

/// Reads and checks a gcn image: descriptor, code object, kernel descriptors, and (when
/// `device_target` is given) that the image's target is the device's. (The version word
/// is checked by the exported `load_image` first, `gomp_plugin::device::check_image_version`.)
///
/// # Safety
/// `target_data` is NULL or a `gcn_image_desc` (see [`descriptor::read`]).
pub unsafe fn check_image(
    target_data: *const c_void,
    device_target: Option<&str>,
) -> Result<(descriptor::Descriptor, code_object::CodeObject)> {
    // SAFETY: caller's contract.
    let d = unsafe { descriptor::read(target_data)? };
    let co = code_object::CodeObject::parse(&d.image)?;
    for k in co.check_kernels(d.kernels.iter().map(|k| k.name.as_str()))? {
        log::debug!(
            "gcn image: kernel '{k}' has no kernel descriptor '{k}.kd': loaded, not launchable"
        );
    }
    if let Some(dev) = device_target {
        if !co
            .target
            .is_some_and(|t| t == dev || mach::is_generic(co.mach))
        {
            return Err(Error::invalid(format!(
                "gcn image is for {}, the device is {dev}",
                co.target_name()
            )));
        }
    }
    Ok((d, co))
}
