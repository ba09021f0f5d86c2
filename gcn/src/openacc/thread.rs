//! Per-host-thread OpenACC data (`openacc_create_thread_data`): libgomp keeps the
//! pointer in its thread state and hands it back through `GOMP_PLUGIN_acc_thread`
//! (`gomp_plugin::OpenAcc::current_thread_data`).

use gomp_plugin::error::Result;
use std::ffi::c_int;

/// Per-thread data: the device the thread's OpenACC work goes to. Owned by libgomp's
/// thread state between create and destroy; read only by the thread it belongs to.
pub struct ThreadData {
    /// libgomp's device number.
    pub ord: i32,
}

/// `openacc_create_thread_data`: the thread's device, checked to exist.
pub fn thread_data(ord: c_int) -> Result<ThreadData> {
    crate::discovery::agent(ord)?;
    Ok(ThreadData { ord })
}
