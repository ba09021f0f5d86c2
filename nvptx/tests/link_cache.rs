//! The linked-image cache against a stand-in driver whose JIT makes a deterministic
//! "cubin" and counts its links (tests/fallback/stub_libcuda_jit.c, with the devices of
//! stub_libcuda_2dev.c). Each scenario loads images in child processes (as separate
//! program runs would) through the exported `GOMP_OFFLOAD_load_image`, and checks what
//! the driver did (links, module loads, refused images), the `GOMP_NVPTX_INFO` line of
//! each image, the `GOMP_DEBUG` lines, and the cache directory: hit, miss, corrupt and
//! truncated entries, an entry the driver refuses, both switches that turn the cache
//! off, the compiler's threads (`CU_JIT_SPLIT_COMPILE`) and a driver refusing them, a read-only directory, two processes storing the same entry at once, entries
//! and directories another user could have written, and the size bound.

use gomp_plugin_conformance::support;

use gomp_plugin_nvptx as _; // the rlib holds the exported shells
use gomp_plugin_nvptx::cache::{entry, Key};
use std::ffi::{c_int, c_void, CString, OsStr};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use support::api::*;
use support::image::{Image, VERSION};

extern "C" {
    fn free(p: *mut c_void);
    fn geteuid() -> u32;
    fn setuid(uid: u32) -> c_int;
    fn setgid(gid: u32) -> c_int;
}

/// The unprivileged user a root test run plays another user with.
const NOBODY: u32 = 65534;
/// Bytes of PTX in a "big" test image: the size of a large program's GPU part.
const BIG_PTX: usize = 2 << 20;

/// Image `v`: a "library" object and a "program" object whose text (and second
/// kernel's name) depends on `v`, as two programs of one libgomp differ. A `v` starting
/// with "big" has a program object of [`BIG_PTX`] bytes (comment lines).
fn image(v: &str) -> Image {
    let texts = vec![
        CString::new(
            "// library object\n.version 7.0\n.target sm_52\n.address_size 64\n\
             .visible .entry lib_kernel ()\n{\n\tret;\n}\n",
        )
        .unwrap(),
        CString::new(format!(
            "// program {v}\n.version 7.0\n.target sm_52\n.address_size 64\n\
             .visible .entry main$_omp_fn$0 ()\n{{\n\tret;\n}}\n\
             .visible .entry prog_{v} ()\n{{\n\tret;\n}}\n{}",
            if v.starts_with("big") {
                "// padding\n".repeat(BIG_PTX / 11)
            } else {
                String::new()
            }
        ))
        .unwrap(),
    ];
    Image::new(texts, &["main$_omp_fn$0", &format!("prog_{v}")])
}

/// The stand-in's JIT counters (`struct stub_libcuda_jit_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct JitStats {
    links: i64,
    inputs: i64,
    completes: i64,
    loads: i64,
    live_modules: i64,
    refused_images: i64,
    split: i64,
    refused_links: i64,
}

fn jit_stats() -> JitStats {
    let lib = std::env::var_os("GOMP_PLUGIN_RS_LIBCUDA").expect("set by the parent");
    let f = support::symbol_of_loaded(&lib, "stub_libcuda_jit_stats");
    // SAFETY: the stand-in's `int stub_libcuda_jit_stats (struct stub_libcuda_jit_stats *)`.
    let f: unsafe extern "C" fn(*mut JitStats) -> c_int = unsafe { std::mem::transmute(f) };
    let mut s = JitStats::default();
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { f(&mut s) }, 0);
    s
}

/// The child run of every scenario: loads (and unloads) the images named by
/// `LC_IMAGES` (comma-separated variants) on device 0, as one program run, then checks
/// the stand-in's counters against `LC_LINKS` (links made), `LC_REFUSED` (images the
/// driver refused; default 0). With `LC_AS_NOBODY=1` under root it first becomes the
/// unprivileged user.
fn child() {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("LC_AS_NOBODY") == "1" {
        // SAFETY: plain calls; group first, while still allowed.
        unsafe {
            assert_eq!(setgid(NOBODY), 0, "setgid");
            assert_eq!(setuid(NOBODY), 0, "setuid");
        }
    }
    // SAFETY: libgomp's sequence (version, device count, init), plain calls.
    unsafe {
        assert_eq!(GOMP_OFFLOAD_version(), 0);
        assert_eq!(GOMP_OFFLOAD_get_num_devices(0), 2);
        assert!(GOMP_OFFLOAD_init_device(0), "init_device");
    }
    let images: Vec<String> = var("LC_IMAGES").split(',').map(str::to_string).collect();
    for v in &images {
        let img = image(v);
        let mut table: *mut AddrPair = std::ptr::null_mut();
        let data: *const c_void = img.data();
        // SAFETY: a well-formed descriptor that outlives the image (unloaded below).
        let n = unsafe {
            GOMP_OFFLOAD_load_image(
                0,
                VERSION,
                data,
                &mut table,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(n, 3, "image {v}: two kernels and the ICV entry");
        // SAFETY: `n` entries the plugin allocated.
        let t = unsafe { std::slice::from_raw_parts(table, n as usize) };
        assert!(t[0].start != 0 && t[1].start != 0, "kernel handles");
        // SAFETY: the table is the caller's (malloc'd without a libgomp).
        unsafe { free(table.cast()) };
        assert!(
            // SAFETY: the image loaded above.
            unsafe { GOMP_OFFLOAD_unload_image(0, VERSION, data) },
            "unload {v}"
        );
    }
    let s = jit_stats();
    let want = |k: &str| var(k).parse::<i64>().unwrap_or(0);
    assert_eq!(s.links, want("LC_LINKS"), "links: {s:?}");
    assert_eq!(s.completes, s.links, "{s:?}");
    assert_eq!(s.inputs, 2 * s.links, "{s:?}");
    assert_eq!(s.refused_images, want("LC_REFUSED"), "refused: {s:?}");
    assert_eq!(
        s.loads,
        images.len() as i64,
        "every image's module loaded once: {s:?}"
    );
    assert_eq!(s.live_modules, 0, "{s:?}");
    // The stand-in's record of the last link made (0 when none was).
    assert_eq!(s.split, want("LC_SPLIT"), "compiler threads: {s:?}");
    assert_eq!(s.refused_links, want("LC_REFUSED_LINKS"), "{s:?}");
    // SAFETY: plain call.
    assert!(unsafe { GOMP_OFFLOAD_fini_device(0) });
}

/// A scenario's files: the stand-in driver and a cache directory.
struct Env {
    test: &'static str,
    scratch: support::Scratch,
    lib: PathBuf,
}

impl Env {
    /// The files of the scenario run by the test `test`; `None` when `cc` is missing
    /// (said on stderr).
    fn new(test: &'static str) -> Option<Env> {
        if !support::have_tools(test, &["cc"]) {
            return None;
        }
        let scratch = support::Scratch::new("link-cache");
        support::write_stub_names(scratch.path(), "nvptx", &[]);
        let lib = scratch.join("libcuda.so.1");
        let repo = support::repo();
        let mut args: Vec<std::ffi::OsString> = vec![
            "-shared".into(),
            "-fPIC".into(),
            "-pthread".into(),
            "-Wall".into(),
            // The JIT and modules of stub_libcuda_jit.c, not stub_libcuda_2dev.c's.
            "-DSTUB_SEPARATE_JIT".into(),
            format!("-I{}", scratch.path().display()).into(),
        ];
        for f in [
            "stub_libcuda_2dev.c",
            "stub_libcuda_jit.c",
            "stub_libcuda_rest.c",
        ] {
            args.push(repo.join("tests/fallback").join(f).into());
        }
        args.push("-o".into());
        args.push(lib.clone().into());
        support::cc(&args);
        // Readable by the unprivileged user of the read-only scenario.
        let _ = std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o755));
        Some(Env { test, scratch, lib })
    }

    /// `CUDA_CACHE_PATH` of the scenario.
    fn cuda_cache(&self) -> PathBuf {
        self.scratch.join("cuda-cache")
    }

    /// The linked-image cache inside it.
    fn dir(&self) -> PathBuf {
        self.cuda_cache().join("gomp-plugin-rs")
    }

    /// Runs the scenario's [`child`] loading `images` with `links` links expected, the scenario's
    /// cache, `GOMP_DEBUG=1`, `GOMP_NVPTX_INFO=1` and `env`.
    fn run(&self, images: &str, links: usize, env: &[(&str, &str)]) -> support::Child {
        let links = links.to_string();
        let cache = self.cuda_cache();
        let mut all: Vec<(&str, &OsStr)> = vec![
            ("GOMP_PLUGIN_RS_LIBCUDA", self.lib.as_os_str()),
            ("GOMP_DEBUG", OsStr::new("1")),
            ("GOMP_NVPTX_INFO", OsStr::new("1")),
            ("CUDA_CACHE_PATH", cache.as_os_str()),
            // Nothing of the developer's own cache directory is used.
            ("HOME", self.scratch.path().as_os_str()),
            ("XDG_CACHE_HOME", self.scratch.path().as_os_str()),
            ("LC_IMAGES", OsStr::new(images)),
            ("LC_LINKS", OsStr::new(&links)),
        ];
        all.extend(env.iter().map(|(k, v)| (*k, OsStr::new(v))));
        let c = support::run_child(self.test, &all);
        c.assert_passed()
            .assert_stderr_lacks("panicked")
            .assert_stderr_lacks("internal error");
        c
    }

    /// The entry files in the cache directory (no temporary files), sorted.
    fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.dir())
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// The single entry file.
    fn entry(&self) -> PathBuf {
        let e = self.entries();
        assert_eq!(e.len(), 1, "one entry: {e:?}");
        self.dir().join(&e[0])
    }
}

/// The `GOMP_NVPTX_INFO` line of an image says `how`.
fn info_says(c: &support::Child, how: &str) {
    c.assert_line_starts("libgomp: nvptx info: device 0: image 0x");
    assert!(
        c.stderr
            .lines()
            .any(|l| l.starts_with("libgomp: nvptx info: device 0: image") && l.contains(how)),
        "no image info line with {how:?}:\n{}",
        c.stderr
    );
}

fn is_root() -> bool {
    // SAFETY: plain call.
    unsafe { geteuid() == 0 }
}

fn set_mode(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

// ---------------------------------------------------------------------------------

/// The first run links and stores (a private directory, a private entry); the next
/// runs of the same image load it without linking; another image, or other JIT
/// options, are misses.
#[test]
fn hit_and_miss() {
    if support::is_child("hit_and_miss") {
        return child();
    }
    let Some(env) = Env::new("hit_and_miss") else {
        return;
    };
    let c = env.run("a", 1, &[]);
    info_says(&c, "linked-image cache miss, linked, stored in");
    c.assert_stderr("linked-image cache: stored ")
        .assert_stderr(&format!(
            "linked-image cache {}/gomp-plugin-rs",
            env.cuda_cache().display()
        ));
    let e = env.entry();
    assert_eq!(std::fs::metadata(env.dir()).unwrap().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(&e).unwrap().mode() & 0o077, 0);
    let name = e.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("cubin-") && name.len() == 6 + 64, "{name}");
    for _ in 0..2 {
        let c = env.run("a", 0, &[]);
        info_says(&c, "linked-image cache hit in");
        c.assert_stderr("linked-image cache hit: ");
    }
    // Another image: a miss; then both are hits in one run.
    info_says(&env.run("b", 1, &[]), "miss");
    assert_eq!(env.entries().len(), 2);
    env.run("a,b", 0, &[]);
    // The JIT options are part of the key.
    let c = env.run("a", 1, &[("GOMP_NVPTX_JIT", "-O2")]);
    info_says(&c, "miss");
    env.run("a", 0, &[("GOMP_NVPTX_JIT", "-O2")]);
    assert_eq!(env.entries().len(), 3);
}

/// A damaged entry (bytes changed, cut short, or a complete entry whose cubin the
/// driver refuses) is said with GOMP_DEBUG, the image is linked as without a cache,
/// and the entry is replaced: the next run hits.
#[test]
fn damaged_entries_are_relinked_and_replaced() {
    if support::is_child("damaged_entries_are_relinked_and_replaced") {
        return child();
    }
    let Some(env) = Env::new("damaged_entries_are_relinked_and_replaced") else {
        return;
    };
    env.run("a", 1, &[]);
    let e = env.entry();
    let good = std::fs::read(&e).unwrap();
    let mut flipped = good.clone();
    flipped[entry::HEADER + 3] ^= 0x20;
    let key = Key(good[16..48].try_into().unwrap());
    let cases: [(&str, Vec<u8>, &str, &str); 4] = [
        ("corrupt", flipped, "corrupt (checksum mismatch)", "0"),
        (
            "truncated",
            good[..good.len() - 7].to_vec(),
            "truncated (",
            "0",
        ),
        ("empty", Vec::new(), "not a cache entry", "0"),
        (
            "refused by the driver",
            entry::encode("cubin", &key, b"not a cubin\0"),
            "the driver refused it",
            "1",
        ),
    ];
    for (what, bytes, why, refused) in cases {
        std::fs::write(&e, &bytes).unwrap();
        let c = env.run("a", 1, &[("LC_REFUSED", refused)]);
        c.assert_stderr(&format!("linked-image cache: ignoring {}: ", e.display()))
            .assert_stderr(why);
        info_says(&c, "entry unusable: ");
        info_says(&c, "linked, stored");
        assert_eq!(
            std::fs::read(&e).unwrap(),
            good,
            "{what}: the entry is replaced"
        );
        info_says(&env.run("a", 0, &[]), "hit");
    }
}

/// `CUDA_CACHE_DISABLE=1` and `GOMP_NVPTX_LINK_CACHE=0` each turn the cache off: every
/// run links, nothing is read or written.
#[test]
fn disabled() {
    if support::is_child("disabled") {
        return child();
    }
    let Some(env) = Env::new("disabled") else {
        return;
    };
    env.run("a", 1, &[]);
    let before = std::fs::read(env.entry()).unwrap();
    for (var, val) in [("CUDA_CACHE_DISABLE", "1"), ("GOMP_NVPTX_LINK_CACHE", "0")] {
        for _ in 0..2 {
            let c = env.run("a,b", 2, &[(var, val)]);
            info_says(&c, "linked (linked-image cache off)");
            c.assert_stderr(&format!("linked-image cache off: {var}={val}"))
                .assert_stderr(&format!("linked-image cache off ({var}={val})"));
        }
    }
    assert_eq!(env.entries().len(), 1, "nothing stored while off");
    assert_eq!(std::fs::read(env.entry()).unwrap(), before);
    // Off in a fresh place: no directory is made.
    let fresh = env.scratch.join("never");
    let c = env.run(
        "a",
        1,
        &[
            ("CUDA_CACHE_DISABLE", "1"),
            ("CUDA_CACHE_PATH", fresh.to_str().unwrap()),
        ],
    );
    info_says(&c, "off");
    assert!(!fresh.exists());
    // Back on: a hit.
    info_says(&env.run("a", 0, &[]), "hit");
}

/// A read-only cache directory: its entries are still used, a new image is linked and
/// not stored (a GOMP_DEBUG line), and the program goes on.
#[test]
fn read_only_directory() {
    if support::is_child("read_only_directory") {
        return child();
    }
    let Some(env) = Env::new("read_only_directory") else {
        return;
    };
    // Root writes into a read-only directory anyway, so under root the runs are made
    // as the unprivileged user, who owns the directory.
    let as_nobody: &[(&str, &str)] = if is_root() {
        std::fs::create_dir_all(env.dir()).unwrap();
        set_mode(&env.cuda_cache(), 0o755);
        std::os::unix::fs::chown(env.dir(), Some(NOBODY), Some(NOBODY)).expect("chown");
        set_mode(&env.dir(), 0o700);
        &[("LC_AS_NOBODY", "1")]
    } else {
        &[]
    };
    env.run("a", 1, as_nobody);
    set_mode(&env.dir(), 0o500);
    info_says(&env.run("a", 0, as_nobody), "hit");
    let c = env.run("b", 1, as_nobody);
    info_says(&c, "linked, not stored");
    c.assert_stderr("linked-image cache: not stored: cannot write ");
    set_mode(&env.dir(), 0o700);
    assert_eq!(env.entries().len(), 1, "{:?}", env.entries());
}

/// Two processes linking the same image at once both store it (the stand-in holds
/// both links until both have reached it): one whole entry results, no temporary file
/// is left, and the next run hits.
#[test]
fn two_processes_store_the_same_entry() {
    if support::is_child("two_processes_store_the_same_entry") {
        return child();
    }
    let Some(env) = Env::new("two_processes_store_the_same_entry") else {
        return;
    };
    let barrier = env.scratch.join("barrier");
    let spec = format!("{}:2", barrier.display());
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| env.run("a", 1, &[("STUB_LIBCUDA_LINK_BARRIER", &spec)]));
        let b = s.spawn(|| env.run("a", 1, &[("STUB_LIBCUDA_LINK_BARRIER", &spec)]));
        (a.join().unwrap(), b.join().unwrap())
    });
    for c in [&a, &b] {
        c.assert_stderr_lacks("link barrier");
        info_says(c, "linked, stored");
    }
    assert_eq!(env.entries().len(), 1, "{:?}", env.entries());
    info_says(&env.run("a", 0, &[]), "hit");
}

/// An entry another user could have written (writable by group or others, or owned by
/// someone else) is ignored with a GOMP_DEBUG line and replaced by the process's own;
/// a cache directory writable by others, or another user's, turns the cache off.
#[test]
fn foreign_entries_and_directories_are_ignored() {
    if support::is_child("foreign_entries_and_directories_are_ignored") {
        return child();
    }
    let Some(env) = Env::new("foreign_entries_and_directories_are_ignored") else {
        return;
    };
    env.run("a", 1, &[]);
    let e = env.entry();
    for mode in [0o666, 0o620] {
        set_mode(&e, mode);
        let c = env.run("a", 1, &[]);
        c.assert_stderr(&format!("writable by group or others (mode {mode:o})"));
        info_says(&c, "entry unusable");
        assert_eq!(std::fs::metadata(&e).unwrap().mode() & 0o077, 0, "replaced");
        info_says(&env.run("a", 0, &[]), "hit");
    }
    if is_root() {
        std::os::unix::fs::chown(&e, Some(NOBODY), Some(NOBODY)).expect("chown");
        let c = env.run("a", 1, &[]);
        c.assert_stderr(&format!("owned by uid {NOBODY}, not by this user"));
        assert_eq!(
            std::fs::metadata(&e).unwrap().uid(),
            0,
            "replaced by root's own"
        );
    } else {
        eprintln!("SKIPPED the other-owner entry: needs root (chown)");
    }
    set_mode(&env.dir(), 0o777);
    let c = env.run("a", 1, &[]);
    c.assert_stderr("linked-image cache off: ")
        .assert_stderr("is writable by group or others (mode 777)");
    info_says(&c, "linked (linked-image cache off)");
    set_mode(&env.dir(), 0o700);
    if is_root() {
        std::os::unix::fs::chown(env.dir(), Some(NOBODY), None).expect("chown");
        let c = env.run("a", 1, &[]);
        c.assert_stderr(&format!("is owned by uid {NOBODY}, not by this user"));
        info_says(&c, "off");
    }
}

/// The cache keeps at most `GOMP_NVPTX_LINK_CACHE_SIZE` bytes, the least recently used
/// entries going first; an entry larger than the bound is not stored.
#[test]
fn size_bound() {
    if support::is_child("size_bound") {
        return child();
    }
    let Some(env) = Env::new("size_bound") else {
        return;
    };
    env.run("a", 1, &[]);
    let a = env.entry();
    let one = std::fs::metadata(&a).unwrap().len();
    // Room for two entries of this size (the variants differ by a byte at most).
    let bound = (2 * one + one / 2).to_string();
    let limit: &[(&str, &str)] = &[("GOMP_NVPTX_LINK_CACHE_SIZE", &bound)];
    env.run("b", 1, limit);
    assert_eq!(env.entries().len(), 2);
    // Make "a" the older of the two, then store a third: "a" goes.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let set_old = |p: &Path| {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(old)
            .unwrap()
    };
    for e in env.entries() {
        set_old(&env.dir().join(e));
    }
    // A hit on "b" refreshes it.
    info_says(&env.run("b", 0, limit), "hit");
    let b_entry = env
        .entries()
        .into_iter()
        .find(|e| env.dir().join(e) != a)
        .unwrap();
    env.run("c", 1, limit);
    let left = env.entries();
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(
        left.contains(&b_entry),
        "the recently used entry stays: {left:?}"
    );
    assert!(!a.exists(), "the least recently used entry went");
    info_says(&env.run("b", 0, limit), "hit");
    // Smaller than one entry: nothing is stored.
    let tiny: &[(&str, &str)] = &[("GOMP_NVPTX_LINK_CACHE_SIZE", "100")];
    let c = env.run("d", 1, tiny);
    c.assert_stderr("is larger than the cache's bound (100 bytes)");
    info_says(&c, "not stored");
}

/// Drivers of CUDA 12.9 and later are asked to compile an image on several threads
/// (`CU_JIT_SPLIT_COMPILE`) only when `jitthreads` is set, for any image size; older
/// ones are not asked; the threads are part of the key; a driver that refuses the
/// option links on one thread.
#[test]
fn compiler_threads() {
    if support::is_child("compiler_threads") {
        return child();
    }
    let Some(env) = Env::new("compiler_threads") else {
        return;
    };
    let v13 = ("STUB_LIBCUDA_DRIVER_VERSION", "13000");
    // The stand-in's default release (12.8): never the option, not even asked for.
    env.run("a", 1, &[("LC_SPLIT", "0")]);
    env.run("a", 0, &[("GOMP_NVPTX_TUNE", "jitthreads=3")]);
    env.run("big1", 1, &[("LC_SPLIT", "0")]);
    // 13.0 (another driver in the key): without the knob, small and large images on
    // the driver's single thread.
    env.run("a", 1, &[v13, ("LC_SPLIT", "0")]);
    env.run("big1", 1, &[v13, ("LC_SPLIT", "0")]);
    env.run("a,big1", 0, &[v13]);
    // The knob, for any image (its threads are in the key); 1: the option not passed.
    let knob = ("GOMP_NVPTX_TUNE", "jitthreads=3");
    info_says(&env.run("a", 1, &[v13, knob, ("LC_SPLIT", "3")]), "miss");
    env.run("a", 0, &[v13, knob]);
    env.run("a", 0, &[v13, ("GOMP_NVPTX_TUNE", "jitthreads=1")]);
    assert_eq!(env.entries().len(), 5, "{:?}", env.entries());
    // A driver that refuses the option: linked without it, said with GOMP_DEBUG.
    let c = env.run(
        "b",
        1,
        &[
            v13,
            ("GOMP_NVPTX_TUNE", "jitthreads=2"),
            ("STUB_LIBCUDA_REFUSE_SPLIT", "1"),
            ("LC_REFUSED_LINKS", "1"),
        ],
    );
    info_says(&c, "miss");
    c.assert_stderr("JIT link with CU_JIT_SPLIT_COMPILE refused");
}
