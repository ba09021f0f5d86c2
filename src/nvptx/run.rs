//! Launching OpenMP kernels (`GOMP_OFFLOAD_run`) and the image constructor/destructor
//! kernels, synchronously on a pooled stream with a soft-stack block of their own.

use super::device::Device;
use super::image::{find_function, with_suffix, TargetFn};
use super::launch::{decode_args, geometry, Limits};
use crate::cu;
use crate::cuda::sys::*;
use crate::error::Result;
use std::ffi::{c_void, CStr};

/// Runs `f` with the mapped-variable block `vars` and libgomp's target arguments
/// `args`, and waits for it.
///
/// # Safety
/// `args` must satisfy [`decode_args`]; `vars` must be a device address (or NULL).
pub unsafe fn run(
    dev: &Device,
    f: &TargetFn,
    vars: *mut c_void,
    args: *const *mut c_void,
) -> Result<()> {
    // SAFETY: forwarded caller guarantee.
    let req = unsafe { decode_args(args) };
    let g = geometry(
        req,
        Limits {
            num_sms: dev.props.num_sms,
            regs_per_sm: dev.props.regs_per_sm,
            max_threads_per_block: f.max_threads_per_block,
            regs_per_thread: f.regs,
        },
    );
    let stack_size = dev.config.soft_stack;
    let stacks = dev
        .stacks
        .acquire(stack_size * (g.teams as usize) * (g.warps as usize))?;
    log::debug!(
        "kernel {}: launch {} team(s) x {} warp(s) (requested teams {}, thread_limit {}), {} dynamic smem",
        f.name,
        g.teams,
        g.warps,
        req.teams,
        req.thread_limit,
        dev.config.lowlat_pool
    );
    let mut p_vars = vars as u64;
    let mut p_stacks = stacks.ptr;
    let mut p_size = stack_size as u64;
    let mut params: [*mut c_void; 3] = [
        (&mut p_vars as *mut u64).cast(),
        (&mut p_stacks as *mut CUdeviceptr).cast(),
        (&mut p_size as *mut u64).cast(),
    ];
    let r = dev.on_stream(|s| {
        // SAFETY: the kernel's PTX entry takes (u64 vars, u64 stacks, u64 size); the
        // parameter pointers refer to locals that outlive the launch call.
        unsafe {
            cu!(cuLaunchKernel(
                f.func,
                g.teams,
                1,
                1,
                32,
                g.warps,
                1,
                dev.config.lowlat_pool as u32,
                s.0,
                params.as_mut_ptr(),
                std::ptr::null_mut()
            ))
        }
        .map_err(Into::into)
    });
    if r.is_ok() {
        dev.stacks.release(stacks);
    }
    r
}

/// Runs the image's global constructor or destructor kernel `base` (or its `__mgomp`
/// variant, which takes a one-warp soft stack), if the image has one.
pub fn run_cdtors(dev: &Device, module: CUmodule, base: &CStr) -> Result<()> {
    let (func, mgomp) = match find_function(module, base)? {
        Some(f) => (f, false),
        None => match find_function(module, &with_suffix(base, "__mgomp"))? {
            Some(f) => (f, true),
            None => return Ok(()),
        },
    };
    let size = dev.config.soft_stack;
    let stack = if mgomp {
        Some(dev.stacks.acquire(size)?)
    } else {
        None
    };
    // Stacks grow down: the kernel takes the top of its block.
    let mut top: u64 = stack.as_ref().map_or(0, |b| b.ptr + size as u64);
    let mut params: [*mut c_void; 1] = [(&mut top as *mut u64).cast()];
    let kparams = if mgomp {
        params.as_mut_ptr()
    } else {
        std::ptr::null_mut()
    };
    log::debug!(
        "running {}{}",
        base.to_string_lossy(),
        if mgomp { "__mgomp" } else { "" }
    );
    let r = dev.on_stream(|s| {
        // SAFETY: 1×1×1 launch; the parameter (if any) points to a live local.
        unsafe {
            cu!(cuLaunchKernel(
                func,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                s.0,
                kparams,
                std::ptr::null_mut()
            ))
        }
        .map_err(Into::into)
    });
    if let (Ok(()), Some(b)) = (&r, stack) {
        dev.stacks.release(b);
    }
    r
}
