//! OpenMP soft stacks: one block of `warps × size` bytes per launch, taken from a
//! per-device cache so that concurrent kernels each get their own block (GCC's plugin
//! shares one block under a device-wide lock).

use crate::cuda::safe::memory as cu_mem;
use crate::cuda::sys::CUdeviceptr;
use gomp_plugin::error::Result;
use std::sync::Mutex;

/// A device allocation holding soft stacks.
#[derive(Debug, PartialEq, Eq)]
pub struct StackBlock {
    /// Device address of the block.
    pub ptr: CUdeviceptr,
    /// Bytes in the block.
    pub size: usize,
}

/// Idle stack blocks of one device. Thread-safe; owns the blocks.
#[derive(Default)]
pub struct StackCache {
    idle: Mutex<Vec<StackBlock>>,
}

/// Cached idle blocks above this total are freed rather than kept.
const CACHE_LIMIT: usize = 1 << 30;

impl StackCache {
    /// A block of at least `size` bytes: the smallest idle one that fits, else a new one.
    pub fn acquire(&self, size: usize) -> Result<StackBlock> {
        {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            let best = idle
                .iter()
                .enumerate()
                .filter(|(_, b)| b.size >= size)
                .min_by_key(|(_, b)| b.size)
                .map(|(i, _)| i);
            if let Some(i) = best {
                return Ok(idle.swap_remove(i));
            }
        }
        // The device's context is current (caller).
        match cu_mem::alloc(size) {
            Ok(ptr) => Ok(StackBlock { ptr, size }),
            Err(e) if e.code == crate::cuda::sys::CUDA_ERROR_OUT_OF_MEMORY => {
                // Idle stacks are only a cache: give them back and try once more.
                self.trim();
                let ptr = cu_mem::alloc(size)?;
                Ok(StackBlock { ptr, size })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Returns a block whose kernel has finished.
    pub fn release(&self, b: StackBlock) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.push(b);
        let mut total: usize = idle.iter().map(|b| b.size).sum();
        while total > CACHE_LIMIT && idle.len() > 1 {
            // Drop the smallest blocks first; the big one serves the most launches.
            let i = (0..idle.len()).min_by_key(|&i| idle[i].size).unwrap_or(0);
            let b = idle.swap_remove(i);
            total -= b.size;
            // SAFETY: the block is idle and owned by the cache.
            let _ = unsafe { cu_mem::free(b.ptr) };
        }
    }

    /// Frees every idle block (on device OOM and at finalisation).
    pub fn trim(&self) {
        for b in self
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            // SAFETY: the block is idle and owned by the cache.
            let _ = unsafe { cu_mem::free(b.ptr) };
        }
    }
}
