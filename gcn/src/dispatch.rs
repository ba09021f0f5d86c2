//! Kernel dispatch on a gcn device: the parts of the generic HSA mechanism that do not
//! depend on what the kernel expects (HSA 1.x: an AQL kernel-dispatch packet with its
//! header and setup words, grid and work-group sizes, the kernarg buffer's size and
//! alignment from the code object metadata) — pure functions, unit-tested here.
//!
//! **What is not implemented, and why.** `run`/`async_run` would need the gcn *launch
//! protocol*: what GCC's device runtime (the amdgcn libgomp.a linked into every image)
//! expects in a kernel's argument segment besides the target-variable block — its
//! heap, team arena and stack memory, the output/printf buffer, their layout and
//! sizes. Our specification (`shared/design/plugin-abi.md`) does not describe it, and
//! it cannot be measured without AMD hardware (GCC's images declare an 8-byte kernarg
//! segment, but that says nothing of what the device code reads through it). So
//! [`launch_protocol_missing`] is what `run` and `async_run` return; no queue is
//! created at `init_device`. `can_run` answers false, so libgomp runs every target
//! region on the host and never calls `run` for an image loaded here.
//!
//! Pure; thread-safe.

use super::metadata::KernelMeta;
use crate::hsa::sys::*;
use gomp_plugin::error::{Error, Result};

/// The error of `run`/`async_run`: names the entry point and says exactly what is
/// missing.
pub fn launch_protocol_missing(entry: &str) -> Error {
    Error::NotImplemented(format!(
        "GOMP_OFFLOAD_{entry}: kernel dispatch is not implemented in gomp-plugin-rs's gcn plugin: \
         the gcn kernel launch protocol (what GCC's amdgcn device runtime expects in the kernel \
         arguments: heap, team arena, stacks, output buffer) is not in this project's \
         specification and cannot be measured without AMD hardware"
    ))
}

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

/// The header of a kernel dispatch that waits for earlier packets and makes memory
/// visible system-wide before and after (what a synchronous offload needs).
pub fn dispatch_header() -> u16 {
    header(
        hsa_packet_type_t_HSA_PACKET_TYPE_KERNEL_DISPATCH,
        true,
        hsa_fence_scope_t_HSA_FENCE_SCOPE_SYSTEM,
        hsa_fence_scope_t_HSA_FENCE_SCOPE_SYSTEM,
    )
}

/// The first 32 bits of a packet (header, then setup), as one release store publishes
/// them after the rest of the packet is written.
pub fn header_and_setup(header: u16, setup: u16) -> u32 {
    header as u32 | (setup as u32) << 16
}

/// A launch's geometry: work-items in the grid and per work-group, per dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Grid size in work-items (x, y, z).
    pub grid: [u32; 3],
    /// Work-group size in work-items (x, y, z).
    pub workgroup: [u16; 3],
}

impl Geometry {
    /// `teams` work-groups of `lanes` × `threads` work-items (x: lanes of a wavefront,
    /// y: threads), checked against the kernel's `max_flat_workgroup_size` (0: no
    /// limit known).
    pub fn teams(teams: u32, lanes: u16, threads: u16, max_flat: u32) -> Result<Geometry> {
        let flat = lanes as u32 * threads as u32;
        if teams == 0 || flat == 0 {
            return Err(Error::invalid(format!(
                "gcn launch: empty geometry ({teams} teams of {lanes}x{threads})"
            )));
        }
        if max_flat != 0 && flat > max_flat {
            return Err(Error::invalid(format!(
                "gcn launch: work-group of {flat} work-items exceeds the kernel's maximum {max_flat}"
            )));
        }
        let gx = teams.checked_mul(lanes as u32).ok_or_else(|| {
            Error::invalid(format!("gcn launch: {teams} teams overflow the grid"))
        })?;
        Ok(Geometry {
            grid: [gx, threads as u32, 1],
            workgroup: [lanes, threads, 1],
        })
    }

    /// Dimensions used (1-3): the last with a grid size above 1.
    pub fn dims(&self) -> u16 {
        match self.grid {
            [_, _, z] if z > 1 => 3,
            [_, y, _] if y > 1 => 2,
            _ => 1,
        }
    }

    /// The setup word (`HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS`).
    pub fn setup(&self) -> u16 {
        self.dims()
            << hsa_kernel_dispatch_packet_setup_t_HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS
    }
}

/// Minimum alignment of a kernarg buffer (HSA 1.x: 16 bytes).
pub const KERNARG_MIN_ALIGN: u32 = 16;

/// Size and alignment of the kernarg buffer of a kernel, from its metadata.
pub fn kernarg_layout(meta: &KernelMeta) -> Result<(usize, usize)> {
    let align = meta.kernarg_segment_align.max(KERNARG_MIN_ALIGN);
    if !align.is_power_of_two() {
        return Err(Error::invalid(format!(
            "kernel '{}': kernarg alignment {} is not a power of two",
            meta.name, meta.kernarg_segment_align
        )));
    }
    let size = (meta.kernarg_segment_size as usize).next_multiple_of(align as usize);
    Ok((size, align as usize))
}

/// A kernel-dispatch packet's body, its header left INVALID: the caller writes it into
/// the queue slot, then publishes [`header_and_setup`] with a release store.
pub fn packet(
    meta: &KernelMeta,
    kernel_object: u64,
    g: &Geometry,
    dynamic_group: u32,
    kernarg: *mut std::ffi::c_void,
    completion: hsa_signal_t,
) -> Result<hsa_kernel_dispatch_packet_t> {
    let group = meta
        .group_segment_fixed_size
        .checked_add(dynamic_group)
        .ok_or_else(|| Error::invalid("gcn launch: group segment size overflows"))?;
    Ok(hsa_kernel_dispatch_packet_t {
        header: hsa_packet_type_t_HSA_PACKET_TYPE_INVALID as u16,
        setup: g.setup(),
        workgroup_size_x: g.workgroup[0],
        workgroup_size_y: g.workgroup[1],
        workgroup_size_z: g.workgroup[2],
        reserved0: 0,
        grid_size_x: g.grid[0],
        grid_size_y: g.grid[1],
        grid_size_z: g.grid[2],
        private_segment_size: meta.private_segment_fixed_size,
        group_segment_size: group,
        kernel_object,
        kernarg_address: kernarg,
        reserved2: 0,
        completion_signal: completion,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code_object::CodeObject;
    use crate::image_tests::fixture_file;

    #[test]
    fn header_words() {
        // Type 2 | barrier << 8 | system (2) << 9 | system (2) << 11.
        assert_eq!(dispatch_header(), 0x1502);
        assert_eq!(
            header(
                hsa_packet_type_t_HSA_PACKET_TYPE_KERNEL_DISPATCH,
                false,
                hsa_fence_scope_t_HSA_FENCE_SCOPE_AGENT,
                hsa_fence_scope_t_HSA_FENCE_SCOPE_NONE
            ),
            0x0202
        );
        assert_eq!(header_and_setup(0x1502, 2), 0x0002_1502);
        assert_eq!(std::mem::size_of::<hsa_kernel_dispatch_packet_t>(), 64);
    }

    #[test]
    fn geometry_and_packet_from_real_metadata() {
        let co = CodeObject::parse(&fixture_file("vadd-gfx90a.hsaco.xz")).unwrap();
        let m = co.metadata("main._omp_fn.0").unwrap();
        assert_eq!(kernarg_layout(m).unwrap(), (16, 16));
        let g = Geometry::teams(120, 64, 16, m.max_flat_workgroup_size).unwrap();
        assert_eq!(g.grid, [7680, 16, 1]);
        assert_eq!(g.workgroup, [64, 16, 1]);
        assert_eq!((g.dims(), g.setup()), (2, 2));
        assert!(Geometry::teams(1, 64, 17, m.max_flat_workgroup_size).is_err());
        assert!(Geometry::teams(0, 64, 4, 0).is_err());
        assert!(Geometry::teams(u32::MAX, 64, 1, 0).is_err());
        assert_eq!(Geometry::teams(4, 64, 1, 0).unwrap().dims(), 1);
        let p = packet(
            m,
            0xabc0,
            &g,
            0x100,
            0x1000 as *mut _,
            hsa_signal_t { handle: 7 },
        )
        .unwrap();
        assert_eq!(p.header, 1, "left INVALID until published");
        assert_eq!((p.grid_size_x, p.workgroup_size_y), (7680, 16));
        assert_eq!(p.group_segment_size, 0x700);
        assert_eq!((p.kernel_object, p.completion_signal.handle), (0xabc0, 7));
        let mut odd = m.clone();
        odd.kernarg_segment_align = 24;
        assert!(kernarg_layout(&odd).is_err());
        odd.kernarg_segment_align = 0;
        odd.kernarg_segment_size = 0;
        assert_eq!(kernarg_layout(&odd).unwrap(), (0, 16));
        assert!(launch_protocol_missing("run")
            .to_string()
            .contains("launch protocol"));
    }
}
