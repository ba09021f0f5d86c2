//! Pipelined copies between pageable host memory and the device. The driver copies
//! pageable memory through its own staging at 7–11 GB/s on the H100 here, of PCIe's 55;
//! for large copies the plugin stages itself instead: two page-locked buffers per
//! device, the host-side `memcpy` of one chunk (split over a few threads) overlapping
//! the DMA of the previous one. Used for synchronous OpenMP copies of at least
//! [`MIN_STAGED`] bytes when the device's staging buffers are free; otherwise (another
//! thread is staging, OpenACC's legacy-stream ordering is in force, or the buffers
//! cannot be allocated) the copy goes to the driver as before.

use super::events::Event;
use super::idle_pool::Handle;
use super::streams::Stream;
use crate::cu;
use crate::cuda::sys::*;
use crate::error::Result;
use std::ffi::c_void;
use std::sync::Mutex;

/// Smallest copy that is staged.
pub const MIN_STAGED: usize = 4 << 20;
/// Bytes per chunk (and per staging buffer).
const CHUNK: usize = 16 << 20;
/// Host threads sharing each chunk's `memcpy`.
const COPY_THREADS: usize = 4;

/// Two page-locked buffers, their events and a stream. Owned by one device.
pub struct Buffers {
    bufs: [*mut u8; 2],
    events: [Event; 2],
    stream: Stream,
}

/// The device's staging buffers, created on first use; one staged copy at a time.
#[derive(Default)]
pub struct Staging {
    slot: Mutex<Option<Buffers>>,
}

// SAFETY: the page-locked buffers are plain memory owned by the slot; every use is
// under its mutex.
unsafe impl Send for Buffers {}

fn par_copy(dst: *mut u8, src: *const u8, n: usize) {
    let part = n.div_ceil(COPY_THREADS).next_multiple_of(4096);
    let (dst, src) = (dst as usize, src as usize);
    std::thread::scope(|s| {
        for off in (0..n).step_by(part.max(1)).skip(1) {
            let len = part.min(n - off);
            // SAFETY: disjoint ranges inside the caller's buffers (see `Staging`).
            s.spawn(move || unsafe {
                std::ptr::copy_nonoverlapping((src + off) as *const u8, (dst + off) as *mut u8, len)
            });
        }
        // SAFETY: as above; the first part on this thread.
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, part.min(n)) };
    });
}

impl Buffers {
    fn create() -> Result<Buffers> {
        let mut bufs = [std::ptr::null_mut::<u8>(); 2];
        for b in &mut bufs {
            let mut p: *mut c_void = std::ptr::null_mut();
            // SAFETY: out-pointer to a local; the device's context is current.
            if let Err(e) = unsafe { cu!(cuMemHostAlloc(&mut p, CHUNK, 0)) } {
                for q in bufs.iter().filter(|q| !q.is_null()) {
                    // SAFETY: allocated just above.
                    let _ = unsafe { cu!(cuMemFreeHost(q.cast())) };
                }
                return Err(e.into());
            }
            *b = p.cast();
        }
        Ok(Buffers {
            bufs,
            events: [Event::create()?, Event::create()?],
            stream: Stream::create()?,
        })
    }

    fn destroy(self) {
        // SAFETY: idle (every staged copy waits for its stream before returning).
        unsafe {
            for b in self.bufs {
                let _ = cu!(cuMemFreeHost(b.cast()));
            }
        }
        self.events.into_iter().for_each(Handle::destroy);
        self.stream.destroy();
    }

    /// # Safety
    /// `src` readable for `n` bytes; `dst` a device range of `n` bytes.
    unsafe fn host2dev(&self, dst: CUdeviceptr, src: *const u8, n: usize) -> Result<()> {
        for (i, off) in (0..n).step_by(CHUNK).enumerate() {
            let k = i % 2;
            let len = CHUNK.min(n - off);
            // SAFETY: buffer k's previous DMA (chunk i-2) is waited for before reuse;
            // the source range is inside the caller's buffer.
            unsafe {
                if i >= 2 {
                    cu!(cuEventSynchronize(self.events[k].0))?;
                }
                par_copy(self.bufs[k], src.add(off), len);
                cu!(cuMemcpyHtoDAsync(
                    dst + off as u64,
                    self.bufs[k].cast(),
                    len,
                    self.stream.0
                ))?;
                cu!(cuEventRecord(self.events[k].0, self.stream.0))?;
            }
        }
        // SAFETY: the stream is ours.
        unsafe { cu!(cuStreamSynchronize(self.stream.0)) }?;
        Ok(())
    }

    /// # Safety
    /// `dst` writable for `n` bytes; `src` a device range of `n` bytes.
    unsafe fn dev2host(&self, dst: *mut u8, src: CUdeviceptr, n: usize) -> Result<()> {
        let chunks: Vec<usize> = (0..n).step_by(CHUNK).collect();
        let enqueue = |i: usize| -> Result<()> {
            let (k, off) = (i % 2, chunks[i]);
            let len = CHUNK.min(n - off);
            // SAFETY: buffer k is free (its previous chunk was copied out); device range
            // inside the caller's.
            unsafe {
                cu!(cuMemcpyDtoHAsync(
                    self.bufs[k].cast(),
                    src + off as u64,
                    len,
                    self.stream.0
                ))?;
                cu!(cuEventRecord(self.events[k].0, self.stream.0))?;
            }
            Ok(())
        };
        for i in 0..chunks.len().min(2) {
            enqueue(i)?;
        }
        for (i, &off) in chunks.iter().enumerate() {
            let k = i % 2;
            let len = CHUNK.min(n - off);
            // SAFETY: the DMA into buffer k has completed; the destination range is
            // inside the caller's buffer.
            unsafe {
                cu!(cuEventSynchronize(self.events[k].0))?;
                par_copy(dst.add(off), self.bufs[k], len);
            }
            if i + 2 < chunks.len() {
                enqueue(i + 2)?;
            }
        }
        Ok(())
    }
}

impl Staging {
    /// Runs `f` with the staging buffers, creating them on first use; `None` when they
    /// are busy or cannot be created (the caller copies without staging).
    fn with<T>(&self, f: impl FnOnce(&Buffers) -> Result<T>) -> Option<Result<T>> {
        let mut slot = self.slot.try_lock().ok()?;
        if slot.is_none() {
            match Buffers::create() {
                Ok(b) => *slot = Some(b),
                Err(e) => {
                    log::debug!("no staging buffers ({e}); large pageable copies go to the driver");
                    return None;
                }
            }
        }
        slot.as_ref().map(f)
    }

    /// Copies `n` bytes from pageable host `src` to device `dst` through the staging
    /// buffers, or returns `None` if they cannot be used now.
    ///
    /// # Safety
    /// `src` readable for `n` bytes; the device range valid.
    pub unsafe fn host2dev(
        &self,
        dst: CUdeviceptr,
        src: *const c_void,
        n: usize,
    ) -> Option<Result<()>> {
        // SAFETY: forwarded caller guarantees.
        self.with(|b| unsafe { b.host2dev(dst, src.cast(), n) })
    }

    /// Copies `n` bytes from device `src` to pageable host `dst`; `None` as above.
    ///
    /// # Safety
    /// `dst` writable for `n` bytes; the device range valid.
    pub unsafe fn dev2host(
        &self,
        dst: *mut c_void,
        src: CUdeviceptr,
        n: usize,
    ) -> Option<Result<()>> {
        // SAFETY: forwarded caller guarantees.
        self.with(|b| unsafe { b.dev2host(dst.cast(), src, n) })
    }

    /// Frees the buffers (device close).
    pub fn destroy(&self) {
        if let Some(b) = self.slot.lock().unwrap_or_else(|e| e.into_inner()).take() {
            b.destroy();
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parallel_copy_is_a_copy() {
        for n in [0usize, 1, 4095, 4096, 4097, 1 << 20, (1 << 20) + 12345] {
            let src: Vec<u8> = (0..n).map(|i| (i * 131 % 251) as u8).collect();
            let mut dst = vec![0u8; n];
            super::par_copy(dst.as_mut_ptr(), src.as_ptr(), n);
            assert_eq!(src, dst, "n = {n}");
        }
    }
}
