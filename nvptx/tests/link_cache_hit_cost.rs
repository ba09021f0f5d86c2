//! Where the host time of a linked-image cache hit goes: the steps `load_image` takes
//! on a hit, minus the driver's calls (`cuModuleLoadData`, the symbol look-ups), each
//! timed over a program-sized image. A measurement, not a timing assertion: it checks
//! only that the steps give the same answers every time (the key, the payload), and
//! prints the medians.
//!
//! The PTX is the image of a real program when `GOMP_PLUGIN_RS_BENCH_PTX` names a file
//! of NUL-terminated PTX objects (`bench/gcc_ptx.py BINARY FILE` writes one), else
//! synthetic PTX-like text of offload_bench's size (41 objects, about 690 KB); the entry
//! holds a 1 MB stand-in cubin. `GOMP_PLUGIN_RS_BENCH_ITERS` sets the repetitions
//! (default 5). To see the table:
//!
//! ```text
//! cargo test --release -p gomp-plugin-nvptx --test link_cache_hit_cost -- --nocapture
//! ```

use gomp_plugin_conformance::support;

use gomp_plugin_nvptx::cache::{entry, Lookup, Store};
use gomp_plugin_nvptx::config::tune::Tune;
use gomp_plugin_nvptx::image::descriptor::{self, RawDescriptor, RawKernel, RawPtxObj};
use gomp_plugin_nvptx::image::link::value_options;
use gomp_plugin_nvptx::image::link_cache::{self, Target};
use gomp_plugin_nvptx::image::ptx_names::PtxNames;
use sha2::{Digest, Sha256};
use std::ffi::{c_int, CString};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::time::Instant;

extern "C" {
    fn mallopt(param: c_int, value: c_int) -> c_int;
}
/// glibc's `M_MMAP_THRESHOLD`.
const M_MMAP_THRESHOLD: c_int = -3;

/// libgomp 3's version word for nvptx images.
const VERSION: u32 = 0x30001;
/// The stand-in cubin's size.
const CUBIN: usize = 1_014_592;

/// The PTX objects: from the file, or synthetic.
fn ptx_objects() -> (Vec<Vec<u8>>, String) {
    if let Some(f) = std::env::var_os("GOMP_PLUGIN_RS_BENCH_PTX").filter(|f| !f.is_empty()) {
        let all = std::fs::read(&f).unwrap_or_else(|e| panic!("{f:?}: {e}"));
        let objs: Vec<Vec<u8>> = all
            .split_inclusive(|&b| b == 0)
            .map(<[u8]>::to_vec)
            .collect();
        assert!(objs.iter().all(|o| o.ends_with(&[0])), "NUL-terminated");
        return (objs, format!("{}", f.to_string_lossy()));
    }
    let mut objs = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..41 {
        let mut t = format!(".version 7.0\n.target sm_52\n.address_size 64\n// object {i}\n");
        while t.len() < 16_900 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (seed >> 33) as u32;
            t.push_str(&match r % 6 {
                0 => format!(
                    "\tld.global.u64 %rd{}, [%rd{}+{}];\n",
                    r % 97,
                    r % 13,
                    r % 64 * 8
                ),
                1 => format!("$L__BB{i}_{}:\n", r % 400),
                2 => format!(
                    "\tsetp.ne.u32 %r{}, %r{}, 0;\n\t@%r{} bra $L__BB{i}_{};\n",
                    r % 50,
                    r % 31,
                    r % 50,
                    r % 400
                ),
                3 => format!(
                    "\tcall.uni (%value_in), __gomp_fn_{}, (%out_arg1);\n",
                    r % 300
                ),
                4 => format!(
                    "\tmov.u32 %r{}, %tid.x;\n\tadd.s32 %r{}, %r{}, {};\n",
                    r % 40,
                    r % 41,
                    r % 42,
                    r
                ),
                _ => format!(
                    ".func (.param .u32 %value_out) gomp_helper_{} (.param .u64 %in_ar0)\n",
                    r % 999
                ),
            });
        }
        t.push('\0');
        objs.push(t.into_bytes());
    }
    (objs, "synthetic".into())
}

/// Medians and minima of named steps, in microseconds.
struct Table(Vec<(&'static str, Vec<f64>)>);

impl Table {
    fn add(&mut self, name: &'static str, us: f64) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(us),
            None => self.0.push((name, vec![us])),
        }
    }
    fn print(&mut self) {
        println!(
            "{:<34} {:>10} {:>10} {:>6}",
            "step", "median_us", "min_us", "runs"
        );
        for (n, v) in &mut self.0 {
            v.sort_by(f64::total_cmp);
            println!(
                "{n:<34} {:>10.1} {:>10.1} {:>6}",
                v[v.len() / 2],
                v[0],
                v.len()
            );
        }
    }
}

fn us(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

#[test]
fn hit_cost() {
    // Every large buffer a fresh mapping, as in a process's single load (glibc would
    // otherwise keep freed buffers mapped and raise its threshold after the first).
    // SAFETY: plain call.
    unsafe { mallopt(M_MMAP_THRESHOLD, 128 * 1024) };
    let iters: usize = std::env::var("GOMP_PLUGIN_RS_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let (objs, source) = ptx_objects();
    let bytes: usize = objs.iter().map(Vec::len).sum();
    let raw: Vec<RawPtxObj> = objs
        .iter()
        .map(|o| RawPtxObj {
            code: o.as_ptr().cast(),
            size: o.len(),
        })
        .collect();
    let names: Vec<CString> = (0..6)
        .map(|i| CString::new(format!("main$_omp_fn${i}")).unwrap())
        .collect();
    let fns: Vec<RawKernel> = names
        .iter()
        .map(|n| RawKernel {
            name: n.as_ptr(),
            dim: [0; 3],
        })
        .collect();
    let desc = RawDescriptor {
        ptx_objs: raw.as_ptr(),
        ptx_num: raw.len() as u32,
        var_names: std::ptr::null(),
        var_num: 0,
        fn_names: fns.as_ptr(),
        fn_num: fns.len() as u32,
        ind_fn_num: 0,
    };
    let scratch = support::Scratch::new("hit-cost");
    let dir = scratch.join("gomp-plugin-rs");
    let target = Target {
        cc: (9, 0),
        driver: link_cache::driver_identity(13000),
    };
    let options = value_options(None, &Tune::default(), 0);
    let cubin: Vec<u8> = (0..CUBIN as u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    {
        let s = Store::open(dir.clone(), 256 << 20).expect("open");
        // SAFETY: a well-formed descriptor over live buffers.
        let d = unsafe { descriptor::read(VERSION, &desc) }.expect("descriptor");
        s.put(
            link_cache::KIND,
            &link_cache::key(&d.ptx, &options, &target),
            &cubin,
        )
        .expect("put");
    }
    println!(
        "hit cost: {} PTX objects, {bytes} bytes ({source}); entry {} bytes; {iters} runs; \
         CPU with the SHA extensions (sha2 uses them): {}",
        objs.len(),
        CUBIN + entry::HEADER + entry::TRAILER,
        sha_extensions()
    );
    let mut t = Table(Vec::new());
    let mut first_key = None;
    for _ in 0..iters {
        let all = Instant::now();
        let t0 = Instant::now();
        // SAFETY: as above.
        let d = unsafe { descriptor::read(VERSION, &desc) }.expect("descriptor");
        t.add("descriptor::read", us(t0));
        let t0 = Instant::now();
        let s = Store::open(dir.clone(), 256 << 20).expect("open");
        t.add("Store::open (once a process)", us(t0));
        let t0 = Instant::now();
        let key = link_cache::key(&d.ptx, &options, &target);
        t.add("key (SHA-256 of the PTX)", us(t0));
        assert_eq!(*first_key.get_or_insert(key), key, "a stable key");
        let t0 = Instant::now();
        let hit = match s.get(link_cache::KIND, &key) {
            Lookup::Hit(p) => p,
            Lookup::Miss => panic!("miss"),
            Lookup::Unusable(why) => panic!("unusable: {why}"),
        };
        t.add("Store::get (all of it)", us(t0));
        assert!(hit.bytes() == cubin, "the payload");
        let t0 = Instant::now();
        drop(hit);
        t.add("drop the payload", us(t0));
        let t0 = Instant::now();
        let names = PtxNames::from_ptx(&d.ptx);
        t.add("PtxNames::from_ptx", us(t0));
        std::hint::black_box(names);
        t.add("= total of ours on a hit", us(all));

        // Store::get's parts, step by step as it takes them.
        let path = s.path(link_cache::KIND, &key);
        let t0 = Instant::now();
        let mut f = File::open(&path).expect("open entry");
        let m = f.metadata().expect("fstat");
        t.add("  get: open + fstat", us(t0));
        assert_eq!(m.uid(), unsafe_euid());
        let len = m.len() as usize;
        let t0 = Instant::now();
        let mut buf = vec![0u128; len.div_ceil(16)];
        t.add("  get: allocate", us(t0));
        let t0 = Instant::now();
        // SAFETY: the u128 buffer viewed as its bytes.
        let b = unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), len) };
        f.read_exact(b).expect("read");
        t.add("  get: read", us(t0));
        let t0 = Instant::now();
        let p = entry::decode(b, link_cache::KIND, &key).expect("intact");
        t.add("  get: decode (checksum)", us(t0));
        assert_eq!(p.len(), CUBIN);

        // The PTX alone through SHA-256.
        let t0 = Instant::now();
        let mut h = Sha256::new();
        for o in &objs {
            h.update(o);
        }
        std::hint::black_box(h.finalize());
        t.add("  sha256 of the PTX", us(t0));
    }
    t.print();
}

fn sha_extensions() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::is_x86_feature_detected!("sha");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

fn unsafe_euid() -> u32 {
    extern "C" {
        fn geteuid() -> u32;
    }
    // SAFETY: plain call.
    unsafe { geteuid() }
}
