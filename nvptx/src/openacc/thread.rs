//! Per-host-thread OpenACC data (`openacc_create_thread_data`): libgomp keeps the
//! pointer in its thread state and hands it back through `GOMP_PLUGIN_acc_thread`
//! (`gomp_plugin::OpenAcc::current_thread_data`).

use crate::device::Core;
use std::sync::Arc;

/// What a host thread using OpenACC on a device needs: the device (kept open while the
/// thread data exists). Owned by libgomp's thread state between create and destroy;
/// read only by the thread it belongs to.
pub struct ThreadData {
    /// The device the thread is bound to.
    pub dev: Arc<Core>,
}
