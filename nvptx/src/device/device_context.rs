//! The device core's context part: which CUDA device it is, its properties read once,
//! and the context every thread makes current (borrowed or the primary one, whose
//! reference it holds until `close`).
//!
//! Owned by [`super::Core`]; shared with it by every thread (the handles are plain
//! values, the primary-context reference is locked).

use crate::cuda::safe::context::{self as cu_context, PrimaryContext};
use crate::cuda::safe::query;
use crate::cuda::sys::*;
use gomp_plugin::error::Result;
use gomp_plugin::sync::Lock;
use std::sync::Mutex;

/// Device facts read once at initialisation.
#[derive(Clone, Debug, Default)]
pub struct Props {
    /// Marketing name.
    pub name: String,
    /// Streaming multiprocessors.
    pub num_sms: i32,
    /// 32-bit registers per SM.
    pub regs_per_sm: i32,
    /// Core clock in kHz (0 if the driver no longer reports it).
    pub clock_khz: i32,
    /// Compute capability.
    pub cc: (i32, i32),
    /// Largest dynamic shared memory a block may opt in to.
    pub max_smem_optin: i32,
    /// Device memory in bytes (bounds the soft stacks a launch may take).
    pub total_mem: usize,
}

/// Which device the core is and its context. Owned by the core; `Sync` (plain handles,
/// the primary-context reference behind a mutex).
pub struct DeviceContext {
    /// libgomp's index of this device within the plugin.
    ord: i32,
    /// The CUDA device.
    cu_dev: CUdevice,
    /// The context every thread makes current (borrowed or primary), alive until
    /// `close`; kept as a plain handle so that `activate` takes no lock.
    ctx: CUcontext,
    /// The primary-context reference this device holds (`None`: it borrows the
    /// program's current context), released last at `close`.
    primary: Mutex<Option<PrimaryContext>>,
    /// Properties.
    props: Props,
}

fn attr(dev: CUdevice, a: CUdevice_attribute) -> Result<i32> {
    query::attribute(dev, a)
}

/// Reads one device attribute, or 0 if the driver does not know it.
pub fn attr_or_zero(dev: CUdevice, a: CUdevice_attribute) -> i32 {
    attr(dev, a).unwrap_or(0)
}

impl Props {
    /// Reads the properties of CUDA device `cu_dev`.
    fn read(cu_dev: CUdevice) -> Result<Props> {
        let name = query::name(cu_dev)?;
        Ok(Props {
            name: name
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8 as char)
                .collect(),
            num_sms: attr(cu_dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            regs_per_sm: attr(cu_dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
            clock_khz: attr_or_zero(cu_dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
            cc: (
                attr(cu_dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(cu_dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            max_smem_optin: attr_or_zero(
                cu_dev,
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            ),
            total_mem: query::total_mem(cu_dev)?,
        })
    }
}

/// The context a device opened on CUDA device `cu_dev` uses: the calling thread's
/// current context when the program made one for this device (borrowed: `None`), else
/// the device's primary context, retained (also when left current by an earlier
/// open/close, when it may have been reset). A stale current context fails
/// cuCtxGetDevice, which is only asked when a context is current.
fn context_for(cu_dev: CUdevice) -> Result<(CUcontext, Option<PrimaryContext>)> {
    let primary = PrimaryContext::retain(cu_dev)?;
    let cur = cu_context::current()?;
    let borrow = !cur.is_null()
        && cur != primary.handle()
        && cu_context::current_device().is_ok_and(|d| d == cu_dev);
    if borrow {
        // Balanced with the retain above; the primary context is not used.
        primary.release()?;
        return Ok((cur, None));
    }
    Ok((primary.handle(), Some(primary)))
}

/// Makes `ctx` current on the calling thread, if it is not already.
pub(super) fn make_current(ctx: CUcontext) -> Result<()> {
    if cu_context::current()? != ctx {
        // SAFETY: a live context (the caller's device keeps it alive until `close`).
        unsafe { cu_context::set_current(ctx) }?;
    }
    Ok(())
}

impl DeviceContext {
    /// Opens device `ord`'s context: borrows the calling thread's current context when
    /// it belongs to this device, else retains the device's primary context (shared
    /// with the CUDA runtime and other libraries); leaves that context current.
    pub(super) fn open(ord: i32) -> Result<DeviceContext> {
        let cu_dev = query::device(ord)?;
        let (ctx, primary) = context_for(cu_dev)?;
        let props = Props::read(cu_dev)?;
        make_current(ctx)?;
        Ok(DeviceContext {
            ord,
            cu_dev,
            ctx,
            primary: Mutex::new(primary),
            props,
        })
    }

    /// libgomp's index of this device within the plugin.
    #[inline]
    pub fn ord(&self) -> i32 {
        self.ord
    }

    /// The CUDA device.
    #[inline]
    pub fn cu_dev(&self) -> CUdevice {
        self.cu_dev
    }

    /// The CUDA device as the place this device keeps it: what
    /// `acc_get_current_cuda_device` hands the program (a `CUdevice *`, read as long as
    /// the device is open), as GCC's plugin hands the address of its own copy.
    #[inline]
    pub fn cu_dev_ref(&self) -> &CUdevice {
        &self.cu_dev
    }

    /// The device's CUDA context (borrowed or primary; alive until `close`).
    #[inline]
    pub fn ctx(&self) -> CUcontext {
        self.ctx
    }

    /// The device's properties, read at open.
    #[inline]
    pub fn props(&self) -> &Props {
        &self.props
    }

    /// Whether the device holds a primary-context reference (else it borrows).
    pub(super) fn owns_primary(&self) -> bool {
        self.primary.locked().is_some()
    }

    /// Releases the primary-context reference, if the device holds one, after making
    /// sure no released context stays current on the calling thread. The last step of
    /// closing the device.
    pub(super) fn release(&self) -> Result<()> {
        let primary = self.primary.locked().take();
        if let Some(primary) = primary {
            // Unsetting our context on this thread so a later open does not find a
            // released one current.
            if cu_context::current().is_ok_and(|cur| cur == self.ctx) {
                // SAFETY: NULL (no context).
                let _ = unsafe { cu_context::set_current(std::ptr::null_mut()) };
            }
            // Balanced with the retain in `open`.
            primary.release()?;
        }
        Ok(())
    }
}
