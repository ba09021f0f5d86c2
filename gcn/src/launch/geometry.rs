//! The geometry of one launch on a gcn device ([`Geometry`], the launch shape, as
//! nvptx's `launch/geometry.rs`; docs/gcn-launch.md §2-§3): the packet's dimensions
//! (capped by the kernel's VGPRs), its LDS size, its ephemeral memory, from the pure
//! rules of [`super::protocol`] (the grid libgomp asked for, `Dims`, and the packet's,
//! `PacketDims`) and the device's properties; and the AQL dispatch packet of that
//! geometry. Plain data and pure functions: thread-safe.

use super::protocol::{self, *};
use crate::config::Config;
use crate::hsa::safe::signal::Signal;
use crate::hsa::sys::*;
use crate::image::Kernel;

/// What one launch looks like: the packet's dimensions, its LDS size, its ephemeral
/// memory. Plain data, made per launch on the launching thread.
pub struct Geometry {
    /// The packet's grid and work-group dimensions.
    pub(super) pd: PacketDims,
    /// The packet's `group_segment_size` (LDS bytes).
    pub(super) group: u32,
    /// The team arenas and stacks.
    pub(super) eph: Ephemeral,
}

impl Geometry {
    /// The dispatch packet of a launch of `k` with kernarg block `kernargs`, completing
    /// on `signal` (header and setup words included).
    pub(super) fn packet(
        &self,
        k: &Kernel,
        kernargs: *mut u8,
        signal: &Signal,
    ) -> hsa_kernel_dispatch_packet_t {
        let pd = &self.pd;
        hsa_kernel_dispatch_packet_t {
            header: HEADER,
            setup: pd.ndim,
            workgroup_size_x: pd.wg[0],
            workgroup_size_y: pd.wg[1],
            workgroup_size_z: pd.wg[2],
            reserved0: 0,
            grid_size_x: pd.grid[0],
            grid_size_y: pd.grid[1],
            grid_size_z: pd.grid[2],
            private_segment_size: k.meta.as_ref().map_or(0, |m| m.private_segment_fixed_size),
            group_segment_size: self.group,
            kernel_object: k.object,
            kernarg_address: kernargs.cast(),
            reserved2: 0,
            completion_signal: signal.raw(),
        }
    }

    /// The packet's dimensions, LDS size and ephemeral memory of a launch of `k` on a
    /// device of ISA `isa` with `cu` compute units, under settings `cfg`, for the LDS
    /// layout of GCC release `gcc`.
    pub(super) fn of(
        k: &Kernel,
        dims: Dims,
        kind: Kind,
        isa: &str,
        cu: u32,
        cfg: &Config,
        gcc: u32,
    ) -> Geometry {
        let dims = protocol::cap_by_vgprs(dims, k.vgprs, protocol::max_isa_vgprs(isa));
        let pd = protocol::packet_dims(&dims, kind, cfg);
        let (teams, threads) = (pd.grid[0], pd.grid[2]);
        let group = protocol::lds_size(
            k.meta.as_ref().map_or(0, |m| m.group_segment_fixed_size),
            teams,
            cu,
            cfg.lowlat_pool,
            gcc,
        );
        let eph = protocol::ephemeral(kind, teams, threads, cfg);
        Geometry { pd, group, eph }
    }
}
