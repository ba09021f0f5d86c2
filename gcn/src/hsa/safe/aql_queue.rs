//! AQL queues: [`Queue`], an HSA queue the plugin created, destroyed when dropped, with
//! the one operation the plugin performs on it: publishing a kernel dispatch packet
//! (slot reservation, packet body, header store, doorbell).

use crate::hsa::error::{check, loaded_status_text};
use crate::hsa::sys::*;
use crate::hsa::table::Runtime;
use gomp_plugin::error::{Error, Result};
use gomp_plugin::libgomp::report;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

/// Bytes of one AQL packet.
const PACKET_SIZE: usize = 64;

/// An HSA queue (`hsa_queue_create`, type MULTI), destroyed (`hsa_queue_destroy`) when
/// dropped. `Send + Sync`: any thread may dispatch on it; each claims its slot with an
/// atomic add on the write index and fills only that slot.
pub struct Queue {
    q: *mut hsa_queue_t,
    rt: &'static Runtime,
}

// SAFETY: HSA queues may be used from any thread (the write index is claimed
// atomically; each thread fills only the slot it claimed).
unsafe impl Send for Queue {}
// SAFETY: as above.
unsafe impl Sync for Queue {}

/// The runtime's callback for an asynchronous queue error: fatal, as in the stock
/// plugin.
unsafe extern "C" fn queue_error(status: hsa_status_t, _q: *mut hsa_queue_t, _data: *mut c_void) {
    let text = loaded_status_text(status);
    report::fatal(&format!(
        "GCN fatal error: Asynchronous queue error\nRuntime message: {text}\n"
    ));
}

impl Queue {
    /// `hsa_queue_create(agent, size, MULTI, callback, NULL, UINT32_MAX, UINT32_MAX)`:
    /// a queue of `size` packets whose errors are fatal.
    pub fn create(rt: &'static Runtime, agent: hsa_agent_t, size: u32) -> Result<Queue> {
        let mut q: *mut hsa_queue_t = std::ptr::null_mut();
        // SAFETY: a valid agent, a callback of the right type, an out-pointer.
        let st = unsafe {
            (rt.hsa_queue_create)(
                agent,
                size,
                hsa_queue_type_t_HSA_QUEUE_TYPE_MULTI,
                Some(queue_error),
                std::ptr::null_mut(),
                u32::MAX,
                u32::MAX,
                &mut q,
            )
        };
        check(st, ("hsa_queue_create", || format!(" ({size} packets)")))?;
        if q.is_null() {
            return Err(Error::invalid("hsa_queue_create gave no queue"));
        }
        Ok(Queue { q, rt })
    }

    /// Claims a slot, waiting while the queue is full; returns (index, packet address).
    fn claim(&self) -> (u64, *mut u8) {
        let rt = self.rt;
        // SAFETY: a live queue.
        let idx = unsafe { (rt.hsa_queue_add_write_index_release)(self.q, 1) };
        // SAFETY: as above; the queue's fields are immutable after creation.
        let (size, base) = unsafe { ((*self.q).size as u64, (*self.q).base_address as *mut u8) };
        // SAFETY: a live queue.
        while idx - unsafe { (rt.hsa_queue_load_read_index_acquire)(self.q) } >= size {
            std::thread::yield_now();
        }
        // SAFETY: the slot lies in the ring of `size` 64-byte packets.
        (idx, unsafe {
            base.add((idx % size) as usize * PACKET_SIZE)
        })
    }

    /// Publishes `packet`: claims a slot (waiting while the queue is full), writes the
    /// packet's body, then its header and setup words with one release store (so the
    /// packet processor never sees a partial packet), and rings the doorbell.
    ///
    /// # Safety
    /// The packet must be one the agent may run: its kernel object, kernarg block and
    /// completion signal live until the completion signal says it ran.
    pub unsafe fn dispatch(&self, packet: &hsa_kernel_dispatch_packet_t) {
        let (idx, slot) = self.claim();
        let src = (packet as *const hsa_kernel_dispatch_packet_t).cast::<u8>();
        // SAFETY: `slot` is the 64-byte slot this thread claimed; the packet is 64
        // bytes (checked in `dispatch.rs`'s tests); the first 4 bytes (header and
        // setup) are stored last, atomically, with release order.
        unsafe {
            std::ptr::copy_nonoverlapping(src.add(4), slot.add(4), PACKET_SIZE - 4);
            (*(slot as *const AtomicU32)).store(
                u32::from(packet.header) | u32::from(packet.setup) << 16,
                Ordering::Release,
            );
        }
        // SAFETY: a live queue; the doorbell takes the written index.
        unsafe { (self.rt.hsa_signal_store_release)((*self.q).doorbell_signal, idx as i64) };
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: our queue, destroyed once.
        let st = unsafe { (self.rt.hsa_queue_destroy)(self.q) };
        if let Err(e) = check(st, "hsa_queue_destroy") {
            log::debug!("{e}");
        }
    }
}
