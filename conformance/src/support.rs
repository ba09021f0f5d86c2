//! Helpers shared by the products' integration tests (`nvptx/tests/*.rs`,
//! `gcn/tests/*.rs`, each `use gomp_plugin_conformance::support;`) and by the
//! conformance suite ([`crate::suite`]).
//!
//! The tests call the exported `GOMP_OFFLOAD_*` shells directly: a test binary links
//! the product's rlib, where they are `#[no_mangle]` symbols. The stand-in C libraries
//! (libcuda, libhsa-runtime64, libgomp) stay C, because they impersonate C libraries:
//! the tests compile them with `cc` from `tests/fallback/` and `tests/fake_libgomp/`
//! into a [`Scratch`] directory that is removed afterwards ([`cc`] copies one built
//! before from the same inputs instead of compiling it again).
//!
//! A plugin reads its driver once per process, so every scenario runs in a process of
//! its own: the test re-executes its own binary, running only itself ([`run_child`]),
//! with the environment the scenario needs; the child does the calls and asserts their
//! results, the parent checks the child's exit and its stderr (the `libgomp: ...`
//! messages and `GOMP_DEBUG` lines, which go to stderr when no libgomp is loaded).
//!
//! Everything here is used by one test thread at a time (the child's scenario, or the
//! parent that starts it), except where an item says otherwise.

use std::collections::hash_map::DefaultHasher;
use std::ffi::{c_char, c_int, c_void, CString, OsStr};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Set in a child run to the name of the test it runs.
pub const CHILD_ENV: &str = "GOMP_PLUGIN_RS_TEST_CHILD";

/// Set (to anything) in the developer's shell: [`run_child`] prints every child's
/// environment, exit, stdout and stderr, passed or not (seen with `--nocapture`).
pub const SHOW_ENV: &str = "GOMP_PLUGIN_RS_TEST_SHOW";

/// The variables each plugin reads from its settings table (generated from the tables:
/// `cargo run -p gomp-plugin-nvptx --example nvptx_settings -- write`, likewise
/// `gcn_settings`; their unit tests fail when these files are stale).
#[path = "gcn_variables.rs"]
mod gcn_variables;
#[path = "nvptx_variables.rs"]
mod nvptx_variables;

/// Variables beside the plugins' settings tables that change a plugin's behaviour: the
/// driver or runtime loaded, libgomp's debug switch, the CUDA driver's own. Removed,
/// with the tables' ([`plugin_env`]), from every child's environment before the
/// scenario's own are set, so the developer's shell cannot leak in.
const OTHER_ENV: &[&str] = &[
    "GOMP_DEBUG",
    "GOMP_PLUGIN_RS_LIBCUDA",
    "HSA_RUNTIME_LIB",
    "LD_PRELOAD",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_PATH",
];

/// Every variable [`run_child`] removes from a child's environment.
pub fn plugin_env() -> impl Iterator<Item = &'static str> {
    OTHER_ENV
        .iter()
        .chain(nvptx_variables::VARIABLES)
        .chain(gcn_variables::VARIABLES)
        .copied()
}

/// The repository root (the workspace).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("a member crate lies inside the workspace")
        .to_path_buf()
}

/// The `src/` of the product crate in directory `product` (`"nvptx"`, `"gcn"`), where
/// its symbol table is declared.
pub fn crate_src(product: &str) -> PathBuf {
    repo().join(product).join("src")
}

/// Whether `tool --version` succeeds (asked once per process).
fn answers_version(tool: &str) -> bool {
    static SEEN: Mutex<Vec<(String, bool)>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, ok)) = seen.iter().find(|(t, _)| t == tool) {
        return ok;
    }
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    seen.push((tool.to_string(), ok));
    ok
}

/// True when every tool answers `--version`; otherwise prints why `test` is skipped.
/// The only reason a test here may skip (CI has both tools: under CI=true a missing
/// one fails the test).
pub fn have_tools(test: &str, tools: &[&str]) -> bool {
    for t in tools {
        let ok = answers_version(t);
        if !ok {
            // CI installs every tool first (scripts/setup --dev): a missing one there is
            // a failure, not a skip.
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{test}: `{t}` is not installed, and CI=true (scripts/setup --dev installs it)"
            );
            // Straight to stderr, past libtest's capture, so the skip is always seen
            // (and counted by scripts/test, which reads "SKIPPED" lines).
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: `{t}` is not installed (scripts/setup installs it)"
            );
            return false;
        }
    }
    true
}

/// A fresh directory under the system's temp directory, removed on drop.
pub struct Scratch(PathBuf);

impl Scratch {
    /// Creates `gomp-plugin-rs-<tag>-<pid>-<n>`.
    pub fn new(tag: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "gomp-plugin-rs-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
        Scratch(p)
    }

    /// `name` inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `cc ARGS...`; panics with the compiler's output when it fails. What it makes
/// (`-o FILE`) is kept in the test profile's `stand-ins/` directory under a key of
/// everything that goes into it ([`cc_key`]), and copied from there when the same
/// inputs come again: the tests build the same few stand-ins a few hundred times.
pub fn cc<S: AsRef<OsStr>>(args: &[S]) {
    let args: Vec<&OsStr> = args.iter().map(|a| a.as_ref()).collect();
    let cached = cc_key(&args).and_then(|(key, out)| Some((stand_ins()?.join(key), out)));
    if let Some((kept, out)) = &cached {
        if std::fs::copy(kept, out).is_ok() {
            return;
        }
    }
    let run = Command::new("cc").args(&args).output().expect("run cc");
    assert!(
        run.status.success(),
        "cc {args:?} failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    if let Some((kept, out)) = cached {
        // Through a file of this process's own, renamed into place: tests running at
        // once may keep the same key.
        static N: AtomicUsize = AtomicUsize::new(0);
        let tmp = kept.with_extension(format!(
            "tmp-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        if std::fs::copy(&out, &tmp).is_ok() && std::fs::rename(&tmp, &kept).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// Where [`cc`] keeps what it made: `stand-ins/` beside the test binary's `deps/`
/// (`target/test-fast/stand-ins`); `None` when that cannot be made.
fn stand_ins() -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().ok()?;
        let dir = exe.parent()?.parent()?.join("stand-ins");
        std::fs::create_dir_all(&dir).ok()?;
        Some(dir)
    })
    .clone()
}

/// The key of a `cc ARGS...` run and its output file: a hash of the compiler's
/// `--version`, every argument, the contents of every file an argument names (a
/// source, `-Wl,--version-script=FILE`), of the headers in each `-I` directory, and of
/// the files beside a source (the headers it includes by relative path: every file
/// under its folder in the repository, the `.h` files beside it elsewhere).
/// `None` (not kept) without `-o`, for an argument that is not UTF-8, or when a file
/// cannot be read.
fn cc_key(args: &[&OsStr]) -> Option<(String, PathBuf)> {
    fn file(h: &mut DefaultHasher, p: &Path) -> Option<()> {
        std::fs::read(p).ok()?.hash(h);
        Some(())
    }
    /// The files of `dir` (and below, when `deep`) whose names pass `keep`, by name.
    fn files_in(
        h: &mut DefaultHasher,
        d: &Path,
        deep: bool,
        keep: fn(&Path) -> bool,
    ) -> Option<()> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(d)
            .ok()?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .ok()?;
        entries.sort();
        for p in entries {
            if p.is_dir() && deep {
                files_in(h, &p, deep, keep)?;
            } else if p.is_file() && keep(&p) {
                p.file_name().hash(h);
                file(h, &p)?;
            }
        }
        Some(())
    }
    static VERSION: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    let version = VERSION.get_or_init(|| {
        let o = Command::new("cc").arg("--version").output().ok()?;
        o.status.success().then_some(o.stdout)
    });
    let mut h = DefaultHasher::new();
    version.as_ref()?.hash(&mut h);
    let mut out = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        // Where a file or folder is named, what is in it counts, not where it is (the
        // tests' scratch folders differ from run to run).
        let a = a.to_str()?;
        if a == "-o" {
            out = Some(PathBuf::from(it.next()?));
        } else if let Some(d) = a.strip_prefix("-I") {
            "-I".hash(&mut h);
            files_in(&mut h, Path::new(d), false, |p| {
                p.extension().is_some_and(|x| x == "h")
            })?;
        } else if let Some((flag, f)) = a.split_once('=').filter(|(_, f)| Path::new(f).is_file()) {
            flag.hash(&mut h);
            file(&mut h, Path::new(f))?;
        } else if !Path::new(a).is_file() {
            a.hash(&mut h);
        } else {
            a.strip_prefix(repo().to_str()?)
                .unwrap_or("(scratch)")
                .hash(&mut h);
            let p = Path::new(a);
            file(&mut h, p)?;
            // Its neighbours: the whole folder (and below) in the repository, the
            // headers beside it elsewhere (a file a test wrote into its scratch).
            if p.starts_with(repo()) {
                files_in(&mut h, p.parent()?, true, |_| true)?;
            } else {
                files_in(&mut h, p.parent()?, false, |p| {
                    p.extension().is_some_and(|x| x == "h")
                })?;
            }
        }
    }
    Some((format!("{:016x}", h.finish()), out?))
}

/// Compiles the C file `src` (relative to the repository) into the shared library
/// `out` with the extra `flags` (`-D...`, `-I...`).
pub fn cc_shared(src: &str, out: &Path, flags: &[&str]) {
    let mut args: Vec<&OsStr> = vec!["-shared".as_ref(), "-fPIC".as_ref()];
    args.extend(flags.iter().map(OsStr::new));
    let src = repo().join(src);
    args.extend([src.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    cc(&args);
}

/// The symbols of the run-time symbol table of the product in directory `product`
/// (every `name = "symbol" (...)` line of a `symbol_table!` invocation under its
/// `src/`), in order. Panics if there is none: the stand-ins would then test nothing.
pub fn table_symbols(product: &str) -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                let mut inside = false;
                for line in text.lines() {
                    if line.contains("symbol_table! {") {
                        inside = true;
                    } else if inside && line == "}" {
                        inside = false;
                    } else if inside {
                        if let Some(s) = table_line(line) {
                            out.push(s.to_string());
                        }
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    let src = crate_src(product);
    walk(&src, &mut out);
    assert!(
        !out.is_empty(),
        "no symbol_table! entries found under {}",
        src.display()
    );
    out
}

/// `"cuInit"` from `        cuInit = "cuInit" (u32) -> CUresult;`.
fn table_line(line: &str) -> Option<&str> {
    let (name, rest) = line.trim_start().split_once(" = \"")?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let (sym, rest) = rest.split_once('"')?;
    rest.trim_start().starts_with('(').then_some(sym)
}

/// Writes `dir/stub_names.h`: one `STUB(symbol)` line per symbol of the table of
/// `product` (see [`table_symbols`]) not in `defined` (those the stand-in's C file
/// defines itself), as tests/host_fallback.sh generates it.
pub fn write_stub_names(dir: &Path, product: &str, defined: &[&str]) {
    let text: String = table_symbols(product)
        .iter()
        .filter(|s| !defined.contains(&s.as_str()))
        .map(|s| format!("STUB({s})\n"))
        .collect();
    std::fs::write(dir.join("stub_names.h"), text).expect("write stub_names.h");
}

/// Builds the stand-in libcuda of tests/fallback/stub_libcuda_2dev.c (with the extra
/// C `flags`) into `dir`: its own entries plus weak "not implemented" ones for the
/// rest of the plugin's table (tests/fallback/stub_libcuda_rest.c).
pub fn stub_libcuda_2dev(dir: &Scratch, flags: &[&str]) -> PathBuf {
    write_stub_names(dir.path(), "nvptx", &[]);
    let lib = dir.join("libcuda.so.1");
    let mut args: Vec<std::ffi::OsString> = ["-shared", "-fPIC", "-pthread", "-Wall"]
        .iter()
        .chain(flags)
        .map(std::ffi::OsString::from)
        .collect();
    args.push(format!("-I{}", dir.path().display()).into());
    args.push(repo().join("tests/fallback/stub_libcuda_2dev.c").into());
    args.push(repo().join("tests/fallback/stub_libcuda_rest.c").into());
    args.push("-o".into());
    args.push(lib.clone().into());
    cc(&args);
    lib
}

/// The output of a child run.
pub struct Child {
    /// What the child was.
    pub what: String,
    /// Its exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// libtest's report.
    pub stdout: String,
    /// The plugin's messages (and the child's panics).
    pub stderr: String,
}

impl Child {
    fn show(&self) -> String {
        format!(
            "{}: exit {:?}\n--- stdout\n{}--- stderr\n{}",
            self.what, self.code, self.stdout, self.stderr
        )
    }

    /// Asserts that the child ran its test and the test passed.
    pub fn assert_passed(&self) -> &Self {
        assert!(
            self.code == Some(0) && self.stdout.contains("1 passed"),
            "child failed\n{}",
            self.show()
        );
        self
    }

    /// Asserts that stderr has a line containing `needle`.
    pub fn assert_stderr(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.lines().any(|l| l.contains(needle)),
            "stderr lacks {needle:?}\n{}",
            self.show()
        );
        self
    }

    /// Asserts that stderr has the line `line`.
    pub fn assert_line(&self, line: &str) -> &Self {
        assert!(
            self.stderr.lines().any(|l| l == line),
            "stderr lacks the line {line:?}\n{}",
            self.show()
        );
        self
    }

    /// Asserts that stderr has a line starting with `prefix`.
    pub fn assert_line_starts(&self, prefix: &str) -> &Self {
        assert!(
            self.stderr.lines().any(|l| l.starts_with(prefix)),
            "stderr has no line starting {prefix:?}\n{}",
            self.show()
        );
        self
    }

    /// Asserts that no stderr line contains `needle`.
    pub fn assert_stderr_lacks(&self, needle: &str) -> &Self {
        assert!(
            !self.stderr.contains(needle),
            "stderr has {needle:?}\n{}",
            self.show()
        );
        self
    }

    /// How many stderr lines start with `prefix`.
    pub fn count_lines(&self, prefix: &str) -> usize {
        self.stderr
            .lines()
            .filter(|l| l.starts_with(prefix))
            .count()
    }
}

/// True in the child run of `test` (see [`run_child`]).
pub fn is_child(test: &str) -> bool {
    std::env::var(CHILD_ENV).is_ok_and(|v| v == test)
}

/// Runs this test binary again with only the test `test` (a top-level `#[test]` fn of
/// the calling file), output uncaptured, the plugins' variables cleared and `env` set.
pub fn run_child(test: &str, env: &[(&str, &OsStr)]) -> Child {
    run_child_with(test, env, &[])
}

/// [`run_child`] of an `#[ignore]`d test (a benchmark run by hand).
pub fn run_ignored_child(test: &str, env: &[(&str, &OsStr)]) -> Child {
    run_child_with(test, env, &["--include-ignored"])
}

fn run_child_with(test: &str, env: &[(&str, &OsStr)], extra: &[&str]) -> Child {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = Command::new(exe);
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    cmd.args(extra);
    for v in plugin_env() {
        cmd.env_remove(v);
    }
    cmd.env(CHILD_ENV, test).envs(env.iter().copied());
    let out = cmd.output().expect("re-run the test binary");
    let c = Child {
        what: format!("{test} with {env:?}"),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    if std::env::var_os(SHOW_ENV).is_some() {
        eprintln!("{}", c.show());
    }
    c
}

/// Decompresses `tests/fixtures/gcn/<file>` with `xz` into `dest`.
pub fn unxz_fixture(file: &str, dest: &Path) {
    let src = repo().join("tests/fixtures/gcn").join(file);
    let out = Command::new("xz")
        .arg("-dc")
        .arg(&src)
        .output()
        .expect("run xz");
    assert!(out.status.success(), "xz -dc {} failed", src.display());
    std::fs::write(dest, out.stdout).expect("write the decompressed fixture");
}

/// The `GOMP_PLUGIN_*` version nodes every fake libgomp has (tests/libgomp_versions.sh).
const PLUGIN_NODES: &str = "GOMP_PLUGIN_1.0 { global: GOMP_PLUGIN_malloc; GOMP_PLUGIN_malloc_cleared; GOMP_PLUGIN_realloc; GOMP_PLUGIN_debug; GOMP_PLUGIN_error; GOMP_PLUGIN_fatal; local: *; };
GOMP_PLUGIN_1.1 { global: GOMP_PLUGIN_target_task_completion; } GOMP_PLUGIN_1.0;
GOMP_PLUGIN_1.4 { global: GOMP_PLUGIN_target_rev; } GOMP_PLUGIN_1.1;
";

/// The newest version node of each release 13..=16 and the probe symbol in it.
pub const RELEASE_NODES: [(&str, &str); 4] = [
    ("GOMP_5.1.1", "GOMP_taskwait_depend_nowait"),
    ("GOMP_5.1.2", "GOMP_add_alloc"),
    ("GOMP_6.0", "omp_get_uid_from_device"),
    ("GOMP_6.0.1", "omp_target_memset"),
];

/// Builds `dir/libgomp.so.1` from tests/fake_libgomp/fake_libgomp.c with the plugin
/// nodes plus `nodes` (version node, symbol) as its version definitions.
pub fn fake_libgomp(dir: &Path, nodes: &[(&str, &str)]) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut map = PLUGIN_NODES.to_string();
    for (node, sym) in nodes {
        map += &format!("{node} {{ global: {sym}; }};\n");
    }
    let map_file = dir.join("map");
    std::fs::write(&map_file, map).expect("write the version script");
    let out = dir.join("libgomp.so.1");
    let script = format!("-Wl,--version-script={}", map_file.display());
    cc_shared(
        "tests/fake_libgomp/fake_libgomp.c",
        &out,
        &["-Wl,-soname,libgomp.so.1", &script],
    );
    out
}

/// Builds `dir/libgomp.so.1` from tests/fallback/gcn_libgomp.c: the fake libgomp whose
/// `GOMP_PLUGIN_target_rev` and `GOMP_PLUGIN_target_task_completion` record their calls
/// (in its exported `gcn_rev_calls`, `gcn_rev_count`, `gcn_completions` and
/// `gcn_completion_count`, whatever the product), with the plugin nodes plus `nodes`.
pub fn recording_libgomp(dir: &Path, nodes: &[(&str, &str)]) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut map = PLUGIN_NODES.to_string();
    for (node, sym) in nodes {
        map += &format!("{node} {{ global: {sym}; gcn_rev_calls; gcn_rev_count; gcn_completion_count; gcn_completions; }};\n");
    }
    let map_file = dir.join("libgomp.map");
    std::fs::write(&map_file, map).expect("write the version script");
    let out = dir.join("libgomp.so.1");
    let script = format!("-Wl,--version-script={}", map_file.display());
    cc_shared(
        "tests/fallback/gcn_libgomp.c",
        &out,
        &["-Wl,-soname,libgomp.so.1", &script],
    );
    out
}

const RTLD_NOW: c_int = 2;
const RTLD_NOLOAD: c_int = 4;
const RTLD_GLOBAL: c_int = 0x100;

#[link(name = "dl")]
extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
}

fn cstr(s: &OsStr) -> CString {
    use std::os::unix::ffi::OsStrExt;
    CString::new(s.as_bytes()).expect("no NUL in a path")
}

/// Loads the library at `path` for the whole process (`RTLD_NOW | RTLD_GLOBAL`), as a
/// program linked with libgomp has it; panics if it cannot.
pub fn load_global(path: &OsStr) {
    let p = cstr(path);
    // SAFETY: a valid C string; the fake libgomp's initialisers are trivial.
    let h = unsafe { dlopen(p.as_ptr(), RTLD_NOW | RTLD_GLOBAL) };
    assert!(!h.is_null(), "dlopen {path:?} failed");
}

/// Child: prints the stand-in libcuda's launch log (`stub_libcuda_launch_log`, one
/// `NAME GRID BLOCK_Y` line per launch) as `LAUNCH ...` lines on stdout, for the parent
/// to read; the stand-in is the one `GOMP_PLUGIN_RS_LIBCUDA` names.
pub fn print_launch_log() {
    let lib = std::env::var_os("GOMP_PLUGIN_RS_LIBCUDA").expect("set by the parent");
    let f = symbol_of_loaded(&lib, "stub_libcuda_launch_log");
    // SAFETY: the stand-in's `long stub_libcuda_launch_log (char *, size_t)`.
    let f: unsafe extern "C" fn(*mut std::ffi::c_char, usize) -> i64 =
        unsafe { std::mem::transmute(f) };
    let mut buf = vec![0u8; 1 << 20];
    // SAFETY: a buffer of that many bytes.
    let n = unsafe { f(buf.as_mut_ptr().cast(), buf.len()) } as usize;
    assert!(n < buf.len(), "launch log too long");
    for l in String::from_utf8_lossy(&buf[..n]).lines() {
        println!("LAUNCH {l}");
    }
}

/// The address of `symbol` in the library at `path`, which must be loaded already
/// (the plugin loaded it); panics if either is missing.
pub fn symbol_of_loaded(path: &OsStr, symbol: &str) -> *mut c_void {
    let p = cstr(path);
    // SAFETY: RTLD_NOLOAD only returns a handle to a library already loaded.
    let h = unsafe { dlopen(p.as_ptr(), RTLD_NOW | RTLD_NOLOAD) };
    assert!(!h.is_null(), "{path:?} is not loaded");
    let s = CString::new(symbol).expect("symbol name");
    // SAFETY: a live handle and a valid C string.
    let a = unsafe { dlsym(h, s.as_ptr()) };
    assert!(!a.is_null(), "{path:?} has no {symbol}");
    a
}

/// The counters of one device of the stand-in libcuda (tests/fallback/stub_libcuda_2dev.c),
/// as its `stub_libcuda_stats` fills them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct StubStats {
    pub ctx_refs: i64,
    pub ctx_resets: i64,
    pub live_allocs: i64,
    pub live_bytes: i64,
    pub total_allocs: i64,
    pub reset_freed: i64,
    pub live_streams: i64,
    pub live_events: i64,
    pub live_pools: i64,
    pub live_host_allocs: i64,
    pub live_host_regs: i64,
    pub copies: i64,
    pub foreign: i64,
    pub misuse: i64,
    pub pool_reserved: i64,
    pub pool_used: i64,
    pub pool_trims: i64,
    pub pool_released: i64,
    pub frees: i64,
    pub live_host_bytes: i64,
}

/// What the stand-in libcuda (`GOMP_PLUGIN_RS_LIBCUDA`, loaded by the plugin) saw on
/// visible device `dev`.
pub fn stub_stats(dev: c_int) -> StubStats {
    let lib = std::env::var_os("GOMP_PLUGIN_RS_LIBCUDA").expect("set by the parent");
    let f = symbol_of_loaded(&lib, "stub_libcuda_stats");
    // SAFETY: the stand-in's `int stub_libcuda_stats (int, struct stub_libcuda_stats *)`,
    // whose struct is `StubStats`.
    let f: unsafe extern "C" fn(c_int, *mut StubStats) -> c_int = unsafe { std::mem::transmute(f) };
    let mut s = StubStats::default();
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { f(dev, &mut s) }, 0, "stats of device {dev}");
    s
}

/// The OpenMP shells of the table `src/edge/table.rs`, which both products export (C
/// signatures: docs/plugin-abi.md §2). Declared, not imported: the tests call the
/// exported symbols, as libgomp does.
pub mod api {
    use std::ffi::{c_char, c_int, c_void};

    /// One entry of `load_image`'s table.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct AddrPair {
        /// First byte (or a kernel's handle).
        pub start: usize,
        /// One past the last byte (handle + 1 for a kernel).
        pub end: usize,
    }

    extern "C" {
        pub fn GOMP_OFFLOAD_version() -> u32;
        pub fn GOMP_OFFLOAD_get_name() -> *const c_char;
        pub fn GOMP_OFFLOAD_get_caps() -> u32;
        pub fn GOMP_OFFLOAD_get_type() -> c_int;
        pub fn GOMP_OFFLOAD_get_num_devices(omp_requires_mask: u32) -> c_int;
        pub fn GOMP_OFFLOAD_get_uid(ord: c_int) -> *const c_char;
        pub fn GOMP_OFFLOAD_init_device(ord: c_int) -> bool;
        pub fn GOMP_OFFLOAD_fini_device(ord: c_int) -> bool;
        pub fn GOMP_OFFLOAD_load_image(
            ord: c_int,
            version: u32,
            target_data: *const c_void,
            target_table: *mut *mut AddrPair,
            rev_fn_table: *mut *mut u64,
            host_ind_fn_table: *mut u64,
        ) -> c_int;
        pub fn GOMP_OFFLOAD_unload_image(ord: c_int, version: u32, data: *const c_void) -> bool;
        pub fn GOMP_OFFLOAD_alloc(ord: c_int, size: usize) -> *mut c_void;
        pub fn GOMP_OFFLOAD_free(ord: c_int, ptr: *mut c_void) -> bool;
        pub fn GOMP_OFFLOAD_dev2host(
            ord: c_int,
            dst: *mut c_void,
            src: *const c_void,
            n: usize,
        ) -> bool;
        pub fn GOMP_OFFLOAD_host2dev(
            ord: c_int,
            dst: *mut c_void,
            src: *const c_void,
            n: usize,
        ) -> bool;
        pub fn GOMP_OFFLOAD_dev2dev(
            ord: c_int,
            dst: *mut c_void,
            src: *const c_void,
            n: usize,
        ) -> bool;
        pub fn GOMP_OFFLOAD_memset(ord: c_int, ptr: *mut c_void, val: c_int, n: usize) -> bool;
        pub fn GOMP_OFFLOAD_is_accessible_ptr(ord: c_int, ptr: *const c_void, size: usize)
            -> c_int;
    }

    // The OpenACC async-queue shells of the table `src/edge/table.rs` (the queue is
    // opaque: `*mut c_void`) and its page-locked memory shells.
    extern "C" {
        pub fn GOMP_OFFLOAD_openacc_async_construct(ord: c_int) -> *mut c_void;
        pub fn GOMP_OFFLOAD_openacc_async_destruct(aq: *mut c_void) -> bool;
        pub fn GOMP_OFFLOAD_openacc_async_test(aq: *mut c_void) -> c_int;
        pub fn GOMP_OFFLOAD_openacc_async_synchronize(aq: *mut c_void) -> bool;
        pub fn GOMP_OFFLOAD_openacc_async_serialize(aq1: *mut c_void, aq2: *mut c_void) -> bool;
        pub fn GOMP_OFFLOAD_openacc_async_queue_callback(
            aq: *mut c_void,
            cb: unsafe extern "C" fn(*mut c_void),
            data: *mut c_void,
        );
        pub fn GOMP_OFFLOAD_openacc_async_host2dev(
            ord: c_int,
            dst: *mut c_void,
            src: *const c_void,
            n: usize,
            aq: *mut c_void,
        ) -> bool;
        pub fn GOMP_OFFLOAD_openacc_async_dev2host(
            ord: c_int,
            dst: *mut c_void,
            src: *const c_void,
            n: usize,
            aq: *mut c_void,
        ) -> bool;
        pub fn GOMP_OFFLOAD_openacc_async_dev2dev(
            ord: c_int,
            dst: *mut c_void,
            src: *const c_void,
            n: usize,
            aq: *mut c_void,
        ) -> bool;
        pub fn GOMP_OFFLOAD_page_locked_host_alloc(ptr: *mut *mut c_void, size: usize) -> bool;
        pub fn GOMP_OFFLOAD_page_locked_host_free(ptr: *mut c_void) -> bool;
    }

    /// As libgomp starts: `version` (no libgomp loaded here: 0, which also starts the
    /// `GOMP_DEBUG` logger), then `get_num_devices`, asserting it finds `n` devices.
    pub fn start(n: c_int) {
        // SAFETY: plain calls without pointer arguments.
        unsafe {
            assert_eq!(GOMP_OFFLOAD_version(), 0, "no libgomp: version 0");
            assert_eq!(GOMP_OFFLOAD_get_num_devices(0), n, "get_num_devices");
        }
    }

    /// `init_device(d)`.
    pub fn init(d: c_int) -> bool {
        // SAFETY: the plugin checks the device number.
        unsafe { GOMP_OFFLOAD_init_device(d) }
    }

    /// `fini_device(d)`.
    pub fn fini(d: c_int) -> bool {
        // SAFETY: the plugin checks the device number.
        unsafe { GOMP_OFFLOAD_fini_device(d) }
    }

    /// `GOMP_OFFLOAD_get_name()` as a string.
    pub fn name() -> String {
        // SAFETY: the plugin returns a static NUL-terminated string.
        unsafe { std::ffi::CStr::from_ptr(GOMP_OFFLOAD_get_name()) }
            .to_string_lossy()
            .into_owned()
    }
}

/// The image descriptor as mkoffload lays it out (nvptx/src/image/descriptor.rs), for
/// tests that load images of their own. Plain data; built and read by one thread.
pub mod image {
    use super::api::{AddrPair, GOMP_OFFLOAD_load_image};
    use std::ffi::{c_char, c_int, c_void, CString};

    /// One PTX object: its text (NUL-terminated) and size with the NUL.
    #[repr(C)]
    pub struct PtxObj {
        pub code: *const c_char,
        pub size: usize,
    }
    /// One kernel: its name and OpenACC dimensions.
    #[repr(C)]
    pub struct FnEntry {
        pub name: *const c_char,
        pub dim: [u16; 3],
    }
    /// What `load_image` receives as `target_data`.
    #[repr(C)]
    pub struct Desc {
        pub ptx: *const PtxObj,
        pub ptx_num: u32,
        pub vars: *const *const c_char,
        pub var_num: u32,
        pub fns: *const FnEntry,
        pub fn_num: u32,
        pub ind_fn_num: u32,
    }

    /// libgomp 3's version word for nvptx images.
    pub const VERSION: u32 = 0x30001;

    /// An image descriptor over PTX objects and kernel names it owns: everything the
    /// descriptor points into lives as long as the image. Built and used by one thread.
    pub struct Image {
        _texts: Vec<CString>,
        _names: Vec<CString>,
        _objs: Vec<PtxObj>,
        _fns: Vec<FnEntry>,
        desc: Box<Desc>,
    }

    impl Image {
        /// The image of PTX objects `texts` whose table names kernels `names`, in order
        /// (no variables, no indirect functions).
        pub fn new(texts: Vec<CString>, names: &[&str]) -> Image {
            Image::with_dims(texts, names, &vec![[0; 3]; names.len()])
        }

        /// As [`Image::new`], the kernels' OpenACC dimensions fixed by the compiler
        /// `dims` (0: left to the runtime), one per name.
        pub fn with_dims(texts: Vec<CString>, names: &[&str], dims: &[[u16; 3]]) -> Image {
            let names: Vec<CString> = names.iter().map(|n| CString::new(*n).unwrap()).collect();
            let objs: Vec<PtxObj> = texts
                .iter()
                .map(|t| PtxObj {
                    code: t.as_ptr(),
                    size: t.as_bytes_with_nul().len(),
                })
                .collect();
            let fns: Vec<FnEntry> = names
                .iter()
                .zip(dims)
                .map(|(n, d)| FnEntry {
                    name: n.as_ptr(),
                    dim: *d,
                })
                .collect();
            let desc = Box::new(Desc {
                ptx: objs.as_ptr(),
                ptx_num: objs.len() as u32,
                vars: std::ptr::null(),
                var_num: 0,
                fns: fns.as_ptr(),
                fn_num: fns.len() as u32,
                ind_fn_num: 0,
            });
            Image {
                _texts: texts,
                _names: names,
                _objs: objs,
                _fns: fns,
                desc,
            }
        }

        /// The descriptor, as `load_image` and `unload_image` take it (`target_data`).
        pub fn data(&self) -> *const c_void {
            (&*self.desc as *const Desc).cast()
        }

        /// `load_image` of this image on device `ord` (version [`VERSION`], no indirect
        /// functions), asking for the reverse-offload table when `want_rev`: the count it
        /// returns, its address table and the reverse-offload table (NULL when not asked
        /// for or not given). The image must outlive its use by the plugin.
        pub fn load(&self, ord: c_int, want_rev: bool) -> (c_int, *mut AddrPair, *mut u64) {
            let mut table: *mut AddrPair = std::ptr::null_mut();
            let mut rev: *mut u64 = std::ptr::null_mut();
            let rev_arg: *mut *mut u64 = if want_rev {
                &mut rev
            } else {
                std::ptr::null_mut()
            };
            // SAFETY: a well-formed descriptor; the out-pointers are live locals.
            let n = unsafe {
                GOMP_OFFLOAD_load_image(
                    ord,
                    VERSION,
                    self.data(),
                    &mut table,
                    rev_arg,
                    std::ptr::null_mut(),
                )
            };
            (n, table, rev)
        }
    }
}
