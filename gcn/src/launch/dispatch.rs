//! The generic HSA 1.x parts of an AQL kernel dispatch: the packet header's bit fields
//! and the 32-bit header+setup word published with one release store. What GCC's gcn
//! device code expects from the packet (its dimensions, segment sizes, kernarg block)
//! is in `protocol.rs`; the dispatch itself in `run.rs`. Pure; thread-safe.

use crate::hsa::sys::*;

/// The 16-bit AQL packet header: `kind`, the barrier bit and the acquire/release fence
/// scopes (HSA 1.x `hsa_packet_header_t` bit positions).
pub fn header(
    kind: hsa_packet_type_t,
    barrier: bool,
    acquire: hsa_fence_scope_t,
    release: hsa_fence_scope_t,
) -> u16 {
    ((kind << hsa_packet_header_t_HSA_PACKET_HEADER_TYPE)
        | ((barrier as u32) << hsa_packet_header_t_HSA_PACKET_HEADER_BARRIER)
        | (acquire << hsa_packet_header_t_HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE)
        | (release << hsa_packet_header_t_HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE)) as u16
}

/// The first 32 bits of a packet (header, then setup = the number of dimensions), as
/// one release store publishes them after the rest of the packet is written.
pub fn header_and_setup(header: u16, setup: u16) -> u32 {
    header as u32 | (setup as u32) << 16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_words() {
        // The gcn protocol's header (docs/gcn-launch.md §3 step 9): kernel dispatch,
        // system-scope fences, no barrier bit.
        let h = header(
            hsa_packet_type_t_HSA_PACKET_TYPE_KERNEL_DISPATCH,
            false,
            hsa_fence_scope_t_HSA_FENCE_SCOPE_SYSTEM,
            hsa_fence_scope_t_HSA_FENCE_SCOPE_SYSTEM,
        );
        assert_eq!(h, crate::launch::protocol::HEADER);
        assert_eq!(h, 0x1402);
        assert_eq!(
            header(
                hsa_packet_type_t_HSA_PACKET_TYPE_KERNEL_DISPATCH,
                true,
                hsa_fence_scope_t_HSA_FENCE_SCOPE_AGENT,
                hsa_fence_scope_t_HSA_FENCE_SCOPE_NONE
            ),
            0x0302
        );
        assert_eq!(header_and_setup(0x1402, 3), 0x0003_1402);
        assert_eq!(std::mem::size_of::<hsa_kernel_dispatch_packet_t>(), 64);
    }
}
