//! `openacc_exec`: an OpenACC kernel's launch on a gcn device, waited for or queued on
//! an async queue ([`super::queue`]). Functions; thread-safe (see `launch/run.rs`).

use super::queue::{AccQueue, Job};
use crate::image::Kernel;
use crate::launch::{self, Kind};
use crate::open::OpenDevice;
use gomp_plugin::error::Result;
use gomp_plugin::kernels::Live;
use gomp_plugin::openacc::AccLaunch;
use std::sync::Arc;

/// The OpenACC grid from `dims` and the kernel's compile-time dimensions
/// ([`launch::acc_dims`]), then the launch with the OpenACC kernarg block; without
/// a queue it waits (console, exit handling), with one it is queued. `dev` is the
/// queue's device, else the calling thread's.
pub fn exec(
    dev: &OpenDevice,
    kernel: Live<'_, Kernel>,
    launch: &AccLaunch,
    queue: Option<&AccQueue>,
) -> Result<Option<[u32; 3]>> {
    let k = kernel.kernel;
    let d = launch.dims;
    let grid = launch::acc_dims(d, k.oacc_dims, dev.launcher().cu);
    log::debug!(
        "device {}: OpenACC kernel {}: dims {d:?}, compile-time {:?}: {} gang(s) x {} worker(s) x 64",
        dev.ord(),
        k.name,
        k.oacc_dims,
        grid.gdims[0],
        grid.gdims[2]
    );
    match queue {
        None => {
            let e =
                dev.launcher()
                    .launch(dev.ord(), None, k, launch.devaddrs, grid, Kind::OpenAcc)?;
            dev.launcher().finish(e);
        }
        Some(q) => q.push(Job::Launch {
            kernel: Arc::clone(k),
            vars: launch.devaddrs,
            // Claimed now: libgomp may reuse the session once this returns.
            table_block: dev.launcher().resources.claim_table(launch.devaddrs),
            dims: grid,
        })?,
    }
    Ok(None)
}
