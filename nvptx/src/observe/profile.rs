//! The profile's aggregation and its table: kernels (launches, device time, launch
//! shapes, the shape their trials chose), copies by direction and kind of host memory, allocations, JIT links,
//! reverse-offload requests, OpenACC queues. Thread-safe ([`Profile`] locks briefly
//! per record); a product creates one only when profiling is on.

use gomp_plugin::sync::Lock;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

/// A count, a total and a maximum of durations in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// Samples.
    pub count: u64,
    /// Sum, ns.
    pub total_ns: u64,
    /// Largest, ns.
    pub max_ns: u64,
}

impl Stat {
    /// Adds one sample.
    pub fn add(&mut self, ns: u64) {
        self.count += 1;
        self.total_ns += ns;
        self.max_ns = self.max_ns.max(ns);
    }

    /// Mean, ns (0 without samples).
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total_ns as f64 / self.count as f64
        }
    }
}

/// One kernel's record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// Launches.
    pub launches: u64,
    /// Device time of the launches whose time could be read.
    pub device: Stat,
    /// Launch shapes (as the product writes them) and how often each was used.
    pub shapes: BTreeMap<String, u64>,
    /// The launch shape chosen by trials and what they measured, as the product says
    /// it (`None`: the kernel was not tuned, or its trials had not ended).
    pub tuning: Option<String>,
}

/// Direction of a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CopyDir {
    /// Host to device.
    H2D,
    /// Device to host.
    D2H,
    /// Device to device.
    D2D,
}

/// How the host side of a copy was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CopyMem {
    /// Pageable host memory, copied directly by the driver.
    Pageable,
    /// Page-locked (pinned, registered or managed) host memory: direct DMA.
    Pinned,
    /// Pageable host memory through the plugin's page-locked staging buffers.
    Staged,
    /// A host-to-device copy that returned before its DMA had ended (the host time is
    /// the call's, not the transfer's).
    Deferred,
    /// A copy of an OpenACC async queue that returned once queued on the queue's stream
    /// (the host time is the call's; the queue's wait ends the transfer).
    Queued,
    /// Both sides on the device.
    Device,
    /// A copy path's own row, named by the path (`device::copy`'s `CopyPath::row`): a
    /// new path counts its copies apart without a row here.
    Path(&'static str),
}

impl CopyDir {
    /// `h2d`, `d2h`, `d2d`.
    pub fn label(self) -> &'static str {
        match self {
            CopyDir::H2D => "h2d",
            CopyDir::D2H => "d2h",
            CopyDir::D2D => "d2d",
        }
    }
}

impl CopyMem {
    /// `pageable`, `pinned`, `staged`, `deferred`, `queued`, `device`, or a path's name.
    pub fn label(self) -> &'static str {
        match self {
            CopyMem::Pageable => "pageable",
            CopyMem::Pinned => "pinned",
            CopyMem::Staged => "staged",
            CopyMem::Deferred => "deferred",
            CopyMem::Queued => "queued",
            CopyMem::Device => "device",
            CopyMem::Path(name) => name,
        }
    }
}

/// Copies of one direction and kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Copies.
    pub count: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// Time, ns.
    pub ns: u64,
}

impl AllocStats {
    /// Allocations served without a driver or pool call.
    pub fn cache_hits(&self) -> u64 {
        self.count.saturating_sub(self.driver)
    }
}

impl CopyStats {
    /// Throughput in GB/s (10^9 bytes per second); `None` without time.
    pub fn gbps(&self) -> Option<f64> {
        (self.ns > 0).then(|| self.bytes as f64 / self.ns as f64)
    }
}

/// Device allocations handed to the program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocStats {
    /// Allocations.
    pub count: u64,
    /// Driver or pool allocations made for them (a cached chunk serves several).
    pub driver: u64,
    /// Frees.
    pub frees: u64,
    /// Bytes the program holds now.
    pub live: u64,
    /// Most bytes the program held at once.
    pub peak: u64,
}

/// One image loaded: its JIT link (or the load of a cached link's output).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitStats {
    /// Which image (as the product names it).
    pub image: String,
    /// Objects linked.
    pub objects: usize,
    /// Kernels in the image.
    pub kernels: usize,
    /// Link (or cached-output load) and module load time, ns.
    pub ns: u64,
    /// The whole image load (`load_image`), ns.
    pub load_ns: u64,
    /// How the module was made (e.g. "linked", "linked-image cache hit").
    pub how: String,
}

/// Everything recorded so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Data {
    /// Per kernel name.
    pub kernels: BTreeMap<String, KernelStats>,
    /// Per direction and kind.
    pub copies: BTreeMap<(CopyDir, CopyMem), CopyStats>,
    /// Allocations.
    pub alloc: AllocStats,
    /// JIT links, in order.
    pub jit: Vec<JitStats>,
    /// Host-side service time of each reverse-offload request, ns.
    pub reverse_ns: Vec<u64>,
    /// OpenACC queues created.
    pub acc_queues: u64,
    /// Facts of the devices found while running (the ways of waiting measured), in
    /// order.
    pub notes: Vec<String>,
}

/// The profile of a process: [`Data`] behind a lock.
#[derive(Debug, Default)]
pub struct Profile {
    data: Mutex<Data>,
}

impl Profile {
    fn with<T>(&self, f: impl FnOnce(&mut Data) -> T) -> T {
        f(&mut self.data.locked())
    }

    /// A copy of what was recorded.
    pub fn snapshot(&self) -> Data {
        self.with(|d| d.clone())
    }

    /// One launch of kernel `name` with shape `shape`; `device_ns` its device time if
    /// it could be read.
    pub fn kernel(&self, name: &str, shape: &str, device_ns: Option<u64>) {
        self.with(|d| {
            let k = match d.kernels.get_mut(name) {
                Some(k) => k,
                None => d.kernels.entry(name.to_string()).or_default(),
            };
            k.launches += 1;
            if let Some(ns) = device_ns {
                k.device.add(ns);
            }
            *k.shapes.entry(shape.to_string()).or_default() += 1;
        })
    }

    /// The launch shape chosen for kernel `name` and what its trials measured.
    pub fn kernel_tuning(&self, name: &str, text: &str) {
        self.with(|d| {
            d.kernels.entry(name.to_string()).or_default().tuning = Some(text.to_string());
        })
    }

    /// A fact of a device for the summary.
    pub fn note(&self, text: String) {
        self.with(|d| d.notes.push(text))
    }

    /// A device time read after the launch was counted (a launch whose completion
    /// is observed later).
    pub fn kernel_time(&self, name: &str, device_ns: u64) {
        self.with(|d| {
            if let Some(k) = d.kernels.get_mut(name) {
                k.device.add(device_ns);
            }
        })
    }

    /// One copy.
    pub fn copy(&self, dir: CopyDir, mem: CopyMem, bytes: u64, ns: u64) {
        self.with(|d| {
            let c = d.copies.entry((dir, mem)).or_default();
            c.count += 1;
            c.bytes += bytes;
            c.ns += ns;
        })
    }

    /// One allocation of `bytes` handed to the program.
    pub fn alloc(&self, bytes: u64) {
        self.with(|d| {
            let a = &mut d.alloc;
            a.count += 1;
            a.live += bytes;
            a.peak = a.peak.max(a.live);
        })
    }

    /// One allocation from the driver or its pool, made to serve the program's.
    pub fn driver_alloc(&self) {
        self.with(|d| d.alloc.driver += 1)
    }

    /// One free of a block of `bytes`.
    pub fn free(&self, bytes: u64) {
        self.with(|d| {
            d.alloc.frees += 1;
            d.alloc.live = d.alloc.live.saturating_sub(bytes);
        })
    }

    /// One JIT link.
    pub fn jit(&self, j: JitStats) {
        self.with(|d| d.jit.push(j))
    }

    /// One reverse-offload request served in `ns` on the host.
    pub fn reverse(&self, ns: u64) {
        self.with(|d| d.reverse_ns.push(ns))
    }

    /// One OpenACC queue created.
    pub fn acc_queue(&self) {
        self.with(|d| d.acc_queues += 1)
    }

    /// The table, each line prefixed by `prefix` (e.g. `"libgomp: nvptx profile: "`).
    pub fn render(&self, prefix: &str) -> String {
        render(&self.snapshot(), prefix)
    }
}

/// The median of `v` (sorted in place); `None` when empty.
pub fn median(v: &mut [u64]) -> Option<u64> {
    v.sort_unstable();
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2),
    }
}

fn bytes_text(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.2} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn us(ns: f64) -> f64 {
    ns / 1e3
}

/// The kernels' rows, most device time first, each with its tuner line.
fn kernel_lines(d: &Data, lines: &mut Vec<String>) {
    if d.kernels.is_empty() {
        lines.push("kernels: none launched".into());
        return;
    }
    lines.push(format!(
        "{:<32} {:>9} {:>12} {:>11} {:>11}  {}",
        "kernel (device time)", "launches", "total ms", "mean us", "max us", "geometry (launches)"
    ));
    let mut ks: Vec<_> = d.kernels.iter().collect();
    ks.sort_by(|a, b| {
        b.1.device
            .total_ns
            .cmp(&a.1.device.total_ns)
            .then(a.0.cmp(b.0))
    });
    for (name, k) in ks {
        let mut shapes: Vec<_> = k.shapes.iter().collect();
        shapes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let mut shape_text: Vec<String> = shapes
            .iter()
            .take(3)
            .map(|(s, n)| format!("{s} ({n})"))
            .collect();
        if shapes.len() > 3 {
            shape_text.push(format!("+{} more", shapes.len() - 3));
        }
        let timed = if k.device.count == k.launches {
            String::new()
        } else {
            format!("  [{} of {} timed]", k.device.count, k.launches)
        };
        lines.push(format!(
            "{:<32} {:>9} {:>12.3} {:>11.1} {:>11.1}  {}{}",
            name,
            k.launches,
            ms(k.device.total_ns),
            us(k.device.mean_ns()),
            us(k.device.max_ns as f64),
            shape_text.join(", "),
            timed
        ));
        if let Some(t) = &k.tuning {
            lines.push(format!("  autotune: {t}"));
        }
    }
}

/// The copies' rows by direction and memory kind.
fn copy_lines(d: &Data, lines: &mut Vec<String>) {
    if d.copies.is_empty() {
        lines.push("copies: none".into());
        return;
    }
    lines.push(format!(
        "{:<32} {:>9} {:>12} {:>11} {:>11}",
        "copy (host time of the call)", "count", "bytes", "total ms", "GB/s"
    ));
    for ((dir, mem), c) in &d.copies {
        lines.push(format!(
            "{:<32} {:>9} {:>12} {:>11.3} {:>11}",
            format!("{} {}", dir.label(), mem.label()),
            c.count,
            c.bytes,
            ms(c.ns),
            c.gbps().map_or("-".to_string(), |g| format!("{g:.2}"))
        ));
    }
}

/// The one-line summaries: allocations, JIT links, reverse offload, OpenACC queues.
fn summary_lines(d: &Data, lines: &mut Vec<String>) {
    let a = &d.alloc;
    lines.push(format!(
        "allocations: {} ({} without a driver call, {} driver or pool allocation(s)), {} free(s), \
         peak {} held by the program",
        a.count,
        a.cache_hits(),
        a.driver,
        a.frees,
        bytes_text(a.peak)
    ));
    for j in &d.jit {
        lines.push(format!(
            "JIT link: image {}: {} object(s), {} kernel(s), {:.1} ms ({}); load_image {:.1} ms",
            j.image,
            j.objects,
            j.kernels,
            ms(j.ns),
            j.how,
            ms(j.load_ns)
        ));
    }
    let mut rev = d.reverse_ns.clone();
    if let Some(m) = median(&mut rev) {
        lines.push(format!(
            "reverse offload: {} request(s), median {:.2} us on the host (request seen to answered)",
            rev.len(),
            us(m as f64)
        ));
    }
    if d.acc_queues > 0 {
        lines.push(format!("OpenACC queues: {}", d.acc_queues));
    }
    lines.extend(d.notes.iter().cloned());
}

/// Renders `d` as the table printed at exit, every line prefixed by `prefix`.
pub fn render(d: &Data, prefix: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    kernel_lines(d, &mut lines);
    copy_lines(d, &mut lines);
    summary_lines(d, &mut lines);
    let mut out = String::new();
    for l in lines {
        let _ = writeln!(out, "{prefix}{}", l.trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats() {
        let mut s = Stat::default();
        assert_eq!(s.mean_ns(), 0.0);
        for ns in [100, 300, 200] {
            s.add(ns);
        }
        assert_eq!((s.count, s.total_ns, s.max_ns), (3, 600, 300));
        assert_eq!(s.mean_ns(), 200.0);
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [5, 1, 3]), Some(3));
        assert_eq!(median(&mut [4, 1, 3, 2]), Some(2));
    }

    #[test]
    fn aggregation() {
        let p = Profile::default();
        p.kernel("main._omp_fn.0", "132x256", Some(1_000));
        p.kernel("main._omp_fn.0", "132x256", Some(3_000));
        p.kernel("main._omp_fn.0", "1x32", None);
        p.kernel_time("main._omp_fn.0", 2_000);
        p.kernel("main._omp_fn.1", "8x64", Some(10_000));
        p.kernel_tuning("main._omp_fn.1", "warps=2 8x64 chosen by trials");
        p.copy(CopyDir::H2D, CopyMem::Staged, 1 << 30, 20_000_000);
        p.copy(CopyDir::H2D, CopyMem::Staged, 1 << 30, 30_000_000);
        p.copy(CopyDir::D2H, CopyMem::Pinned, 4096, 0);
        p.copy(CopyDir::D2H, CopyMem::Path("probe"), 8, 1000);
        p.alloc(100);
        p.driver_alloc();
        p.alloc(50);
        p.free(100);
        p.alloc(200);
        p.jit(JitStats {
            image: "0x1".into(),
            objects: 2,
            kernels: 3,
            ns: 45_000_000,
            load_ns: 47_000_000,
            how: "linked".into(),
        });
        for ns in [5_000, 7_000, 6_000] {
            p.reverse(ns);
        }
        p.acc_queue();
        let d = p.snapshot();
        let k = &d.kernels["main._omp_fn.0"];
        assert_eq!(k.launches, 3);
        assert_eq!(
            k.device,
            Stat {
                count: 3,
                total_ns: 6_000,
                max_ns: 3_000
            }
        );
        assert_eq!(k.device.mean_ns(), 2_000.0);
        assert_eq!(k.shapes["132x256"], 2);
        assert_eq!(k.shapes["1x32"], 1);
        let c = d.copies[&(CopyDir::H2D, CopyMem::Staged)];
        assert_eq!((c.count, c.bytes, c.ns), (2, 2 << 30, 50_000_000));
        // 2 GiB in 50 ms: 42.95 GB/s.
        assert!((c.gbps().unwrap() - 42.949_672_96).abs() < 1e-6);
        assert_eq!(d.copies[&(CopyDir::D2H, CopyMem::Pinned)].gbps(), None);
        assert_eq!(d.copies[&(CopyDir::D2H, CopyMem::Path("probe"))].bytes, 8);
        assert_eq!(
            d.alloc,
            AllocStats {
                count: 3,
                driver: 1,
                frees: 1,
                live: 250,
                peak: 250
            }
        );
        assert_eq!(d.alloc.cache_hits(), 2);
        assert_eq!(d.acc_queues, 1);

        let t = p.render("P: ");
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines.iter().all(|l| l.starts_with("P: ")), "{t}");
        // Most device time first: fn.1 (10 us) above fn.0 (6 us).
        let i1 = t.find("main._omp_fn.1").unwrap();
        let i0 = t.find("main._omp_fn.0").unwrap();
        assert!(i1 < i0, "{t}");
        let row0 = lines.iter().find(|l| l.contains("main._omp_fn.0")).unwrap();
        let cols: Vec<&str> = row0.split_whitespace().collect();
        assert_eq!(&cols[2..6], ["3", "0.006", "2.0", "3.0"], "{row0}");
        assert!(row0.contains("132x256 (2), 1x32 (1)"), "{row0}");
        // The tuned kernel's choice follows its row; the other has none.
        let i = lines
            .iter()
            .position(|l| l.contains("main._omp_fn.1"))
            .unwrap();
        assert_eq!(lines[i + 1], "P:   autotune: warps=2 8x64 chosen by trials");
        assert_eq!(
            d.kernels["main._omp_fn.1"].tuning.as_deref(),
            Some("warps=2 8x64 chosen by trials")
        );
        assert_eq!(t.matches("autotune").count(), 1, "{t}");
        let staged = lines.iter().find(|l| l.contains("h2d staged")).unwrap();
        assert!(staged.ends_with("42.95"), "{staged}");
        assert!(t.contains("allocations: 3 (2 without a driver call, 1 driver or pool allocation(s)), 1 free(s), peak 250 B"), "{t}");
        assert!(
            t.contains("JIT link: image 0x1: 2 object(s), 3 kernel(s), 45.0 ms (linked); load_image 47.0 ms"),
            "{t}"
        );
        assert!(
            t.contains("reverse offload: 3 request(s), median 6.00 us"),
            "{t}"
        );
        assert!(t.contains("OpenACC queues: 1"), "{t}");
    }

    #[test]
    fn empty() {
        let t = Profile::default().render("");
        assert!(
            t.contains("kernels: none launched") && t.contains("copies: none"),
            "{t}"
        );
        assert!(
            !t.contains("reverse offload") && !t.contains("OpenACC"),
            "{t}"
        );
    }
}
