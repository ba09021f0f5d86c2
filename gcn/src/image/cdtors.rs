//! The image's constructor and destructor kernels, `_init_array` and `_fini_array` (as
//! nvptx's `image/cdtors.rs` runs its `__do_global_ctors`/`__do_global_dtors`): which
//! of mkoffload's kernels they are ([`CDTOR_KERNELS`], [`find`]; their records are the
//! image's `cdtors`, made at load), and running one, if the image has it
//! ([`run_cdtors`]: at `load_image` and before an image is unloaded). The launch itself
//! is the caller's (the open device's launcher, with the protocol's grid for them,
//! `launch::CDTOR_DIMS`): `launch/` is above `image/`. Pure; thread-safe.

use super::descriptor::KernelEntry;
use gomp_plugin::error::Result;

/// Kernels mkoffload adds that are not offload functions of the host table: the
/// constructors' and the destructors' kernel, in that order.
pub const CDTOR_KERNELS: [&str; 2] = ["_init_array", "_fini_array"];

/// The constructors' and the destructors' kernel among the descriptor's `kernels`
/// ([`CDTOR_KERNELS`]' order), `None` where the image has none.
pub fn find(kernels: &[KernelEntry]) -> [Option<&KernelEntry>; 2] {
    CDTOR_KERNELS.map(|name| kernels.iter().find(|k| k.name == name))
}

/// Runs the constructor or destructor kernel `cdtor` through `launch` (which waits
/// for it), if the image has it.
pub fn run_cdtors<K>(cdtor: Option<&K>, launch: impl FnOnce(&K) -> Result<()>) -> Result<()> {
    match cdtor {
        Some(k) => launch(k),
        None => Ok(()),
    }
}
