//! Where page-locked host memory lies on a host of several NUMA nodes. A copy between
//! the device and page-locked memory is a DMA of the GPU reading or writing host
//! memory: memory on the GPU's own node goes at the link's speed, memory on another
//! node crosses the sockets' interconnect as well. `cuMemHostAlloc` takes the pages
//! where the calling thread's memory policy puts them (by default the node of the
//! processor the thread runs on at that moment, which the scheduler may have moved
//! anywhere), so the plugin asks for the device's node around its page-locked
//! allocations ([`prefer`]): preferred, not bound, so a full node still gives memory.
//!
//! The device's node: the driver's `CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID` where it has one,
//! else the PCI device's `numa_node` in sysfs. None on a host of one node.
//!
//! Linux system calls (`get_mempolicy`, `set_mempolicy`) through libc's `syscall`; the
//! policy is the calling thread's own, set and restored on that thread. Any thread.

use crate::cuda::safe::query;
use crate::cuda::sys::CUdevice;
use std::ffi::c_long;

/// CUDA's device attributes read here (`CUdevice_attribute` values).
const ATTR_PCI_BUS_ID: i32 = 33;
const ATTR_PCI_DEVICE_ID: i32 = 34;
const ATTR_PCI_DOMAIN_ID: i32 = 50;
const ATTR_HOST_NUMA_ID: i32 = 134;

extern "C" {
    fn syscall(num: c_long, ...) -> c_long;
}

#[cfg(target_arch = "x86_64")]
const SYS_SET_MEMPOLICY: c_long = 238;
#[cfg(target_arch = "x86_64")]
const SYS_GET_MEMPOLICY: c_long = 239;
#[cfg(target_arch = "aarch64")]
const SYS_SET_MEMPOLICY: c_long = 237;
#[cfg(target_arch = "aarch64")]
const SYS_GET_MEMPOLICY: c_long = 236;

const MPOL_PREFERRED: c_long = 1;
const NO_FLAGS: c_long = 0;
const MPOL_F_NODE: c_long = 1;
const MPOL_F_ADDR: c_long = 2;

/// Bits of the node masks passed to the kernel.
const MASK_BITS: usize = 1024;
type Mask = [u64; MASK_BITS / 64];

/// The calling thread's memory policy: mode (with its flags) and node mask; `None` if
/// the kernel does not say.
fn policy() -> Option<(c_long, Mask)> {
    let mut mode: i32 = 0;
    let mut mask: Mask = [0; MASK_BITS / 64];
    // SAFETY: get_mempolicy(int *mode, unsigned long *nodemask, unsigned long maxnode,
    // void *addr, unsigned long flags) writes `mode` and at most MASK_BITS bits of
    // `mask`, both valid.
    let r = unsafe {
        syscall(
            SYS_GET_MEMPOLICY,
            &mut mode as *mut i32,
            mask.as_mut_ptr(),
            MASK_BITS as c_long,
            std::ptr::null_mut::<u8>(),
            NO_FLAGS,
        )
    };
    (r == 0).then_some((c_long::from(mode), mask))
}

/// Sets the calling thread's memory policy; whether the kernel took it.
fn set_policy(mode: c_long, mask: &Mask) -> bool {
    // SAFETY: set_mempolicy(int mode, const unsigned long *nodemask, unsigned long
    // maxnode) reads maxnode - 1 = MASK_BITS bits of `mask`, valid.
    unsafe {
        syscall(
            SYS_SET_MEMPOLICY,
            mode,
            mask.as_ptr(),
            (MASK_BITS + 1) as c_long,
        ) == 0
    }
}

/// Runs `f` with the calling thread's memory policy preferring node `node`, then puts
/// the thread's policy back. Without a node (or when the kernel refuses) just runs `f`.
pub fn prefer<T>(node: Option<i32>, f: impl FnOnce() -> T) -> T {
    let Some(node) = node
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n < MASK_BITS)
    else {
        return f();
    };
    let Some((mode, mask)) = policy() else {
        return f();
    };
    let mut want: Mask = [0; MASK_BITS / 64];
    want[node / 64] |= 1 << (node % 64);
    let set = set_policy(MPOL_PREFERRED, &want);
    let r = f();
    if set && !set_policy(mode, &mask) {
        log::debug!("could not restore the thread's memory policy (mode {mode})");
    }
    r
}

/// The node of the page at `p` (which must be mapped), if the kernel tells.
pub fn node_of(p: usize) -> Option<i32> {
    let mut node: i32 = -1;
    // SAFETY: get_mempolicy with MPOL_F_NODE | MPOL_F_ADDR writes the node of the page
    // at `p` into `node`; no mask is passed.
    let r = unsafe {
        syscall(
            SYS_GET_MEMPOLICY,
            &mut node as *mut i32,
            std::ptr::null_mut::<u64>(),
            NO_FLAGS,
            p as *mut u8,
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    (r == 0 && node >= 0).then_some(node)
}

/// How many NUMA nodes the host has online (1 when sysfs does not say).
pub fn nodes_online() -> usize {
    std::fs::read_to_string("/sys/devices/system/node/online")
        .map_or(1, |s| count_list(s.trim()).max(1))
}

/// The number of entries of a sysfs list such as `0-1,3`.
fn count_list(s: &str) -> usize {
    s.split(',')
        .filter(|r| !r.is_empty())
        .map(|r| match r.split_once('-') {
            Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => usize::from(r.parse::<usize>().is_ok()),
        })
        .sum()
}

/// The sysfs path of the `numa_node` of PCI device `domain:bus:device.0`.
fn sysfs_node_path(domain: i32, bus: i32, device: i32) -> String {
    format!("/sys/bus/pci/devices/{domain:04x}:{bus:02x}:{device:02x}.0/numa_node")
}

/// A node number as sysfs or the driver gives it (`-1`: none).
fn parse_node(s: &str) -> Option<i32> {
    s.trim().parse::<i32>().ok().filter(|&n| n >= 0)
}

/// The node of the PCI device `domain:bus:device`, from sysfs.
pub fn pci_node(domain: i32, bus: i32, device: i32) -> Option<i32> {
    std::fs::read_to_string(sysfs_node_path(domain, bus, device))
        .ok()
        .as_deref()
        .and_then(parse_node)
}

/// The NUMA node of CUDA device `dev` (its context need not be current): `None` on a
/// host of one node or when neither the driver nor sysfs tells.
pub fn device_node(dev: CUdevice) -> Option<i32> {
    if nodes_online() < 2 {
        return None;
    }
    let attr = |a| query::attribute(dev, a).ok();
    let node = attr(ATTR_HOST_NUMA_ID).filter(|&n| n >= 0).or_else(|| {
        pci_node(
            attr(ATTR_PCI_DOMAIN_ID)?,
            attr(ATTR_PCI_BUS_ID)?,
            attr(ATTR_PCI_DEVICE_ID)?,
        )
    });
    log::debug!(
        "device {dev}: page-locked memory on NUMA node {}",
        node.map_or("(unknown)".into(), |n| n.to_string())
    );
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_lists_and_nodes_parse() {
        assert_eq!(count_list("0"), 1);
        assert_eq!(count_list("0-1"), 2);
        assert_eq!(count_list("0-3,6,8-9"), 7);
        assert_eq!(count_list(""), 0);
        assert_eq!(count_list("x"), 0);
        assert_eq!(parse_node("1\n"), Some(1));
        assert_eq!(parse_node("-1\n"), None);
        assert_eq!(parse_node(""), None);
        assert_eq!(
            sysfs_node_path(0, 0x1b, 0),
            "/sys/bus/pci/devices/0000:1b:00.0/numa_node"
        );
        assert!(nodes_online() >= 1);
    }

    #[test]
    fn prefer_restores_the_threads_policy() {
        let Some(before) = policy() else {
            eprintln!("get_mempolicy refused here: prefer only runs its closure");
            assert_eq!(prefer(Some(0), || 7), 7);
            return;
        };
        let inside = prefer(Some(0), policy);
        assert_eq!(policy(), Some(before), "restored");
        if let Some((mode, mask)) = inside {
            assert_eq!(mode, MPOL_PREFERRED);
            assert_eq!(mask[0] & 1, 1, "node 0 preferred");
        }
        // Memory touched on this thread lies on a node the kernel can tell.
        let v = vec![1u8; 1 << 16];
        if let Some(n) = node_of(v.as_ptr() as usize) {
            assert!((n as usize) < MASK_BITS);
        }
        assert_eq!(prefer(None, || 3), 3);
        assert_eq!(prefer(Some(-1), || 4), 4);
        assert_eq!(policy(), Some(before));
    }
}
