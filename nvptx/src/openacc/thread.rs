//! Per-host-thread OpenACC data (`openacc_create_thread_data`): libgomp keeps the
//! pointer in its thread state and hands it back through `GOMP_PLUGIN_acc_thread`.

use crate::device::Device;
use gomp_plugin::libgomp::host;
use std::sync::Arc;

/// What a host thread using OpenACC on a device needs: the device (kept open while the
/// thread data exists). Owned by libgomp's thread state between create and destroy;
/// read only by the thread it belongs to.
pub struct ThreadData {
    /// The device the thread is bound to.
    pub dev: Arc<Device>,
}

/// The calling thread's data, or `None` if libgomp has none for it.
pub fn current() -> Option<&'static ThreadData> {
    let f = host::host()?.acc_thread?;
    // SAFETY: GOMP_PLUGIN_acc_thread returns what openacc_create_thread_data returned
    // for this thread (a leaked `Box<ThreadData>`, alive until destroy), or NULL.
    let p = unsafe { f() }.cast::<ThreadData>();
    // SAFETY: see above; only this thread uses it, and libgomp destroys it only after
    // the thread is done with OpenACC.
    unsafe { p.as_ref() }
}
