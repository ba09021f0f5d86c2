//! The entry store on disk: one directory, one file per entry named `KIND-KEYHEX`.
//!
//! - The directory is created private to the user (0700); a directory not owned by the
//!   user, or writable by group or others, is refused ([`Store::open`]): an entry is
//!   code or data the process will trust.
//! - An entry is read through one descriptor, checked (owner, mode, format and
//!   checksum: [`super::entry`]) on that descriptor; anything wrong makes it
//!   [`Lookup::Unusable`] with the reason, never an error of the program.
//! - An entry is written to a temporary file in the same directory and renamed into
//!   place, so readers see a whole entry or none; processes storing the same entry at
//!   once (MPI ranks) each rename a complete file of the same contents.
//! - After each store the directory is trimmed to the size bound, least recently used
//!   first (a hit refreshes the entry's time); temporary files of processes that died
//!   while writing are removed once stale.
//!
//! Thread-safety: a `Store` is plain data (`Send + Sync`); every operation works on the
//! file system only, and concurrent operations of threads or processes are safe as
//! described above.

use super::entry;
use super::evict::{self, Item};
use super::key::Key;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

extern "C" {
    /// POSIX `geteuid`: never fails.
    fn geteuid() -> u32;
}

/// The effective user id of the process.
fn euid() -> u32 {
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    unsafe { geteuid() }
}

/// A hit's refreshed time is written at most this often (it orders eviction).
const REFRESH: Duration = Duration::from_secs(60);
/// A temporary file older than this belongs to a process that died while writing.
const STALE_TMP: Duration = Duration::from_secs(3600);
/// Prefix of temporary files.
const TMP: &str = ".tmp-";

/// An open store: a checked directory and its size bound.
#[derive(Clone, Debug)]
pub struct Store {
    dir: PathBuf,
    limit: u64,
    uid: u32,
}

/// The payload of a hit, in a buffer whose payload starts 16-byte aligned (an ELF
/// image can be handed to a loader as it is).
pub struct Payload {
    buf: Vec<u128>,
    start: usize,
    len: usize,
}

impl Payload {
    /// The payload bytes.
    pub fn bytes(&self) -> &[u8] {
        &as_bytes(&self.buf)[self.start..self.start + self.len]
    }
}

fn as_bytes(v: &[u128]) -> &[u8] {
    // SAFETY: any u128 is 16 initialised bytes; the slice covers exactly `v`.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

fn as_bytes_mut(v: &mut [u128]) -> &mut [u8] {
    // SAFETY: as above; every byte pattern is a valid u128.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v)) }
}

/// The outcome of [`Store::get`].
pub enum Lookup {
    /// An intact entry of the key.
    Hit(Payload),
    /// No entry of the key.
    Miss,
    /// A file in the entry's place that must not be used: why (corrupt, truncated,
    /// owned by someone else, writable by others, unreadable). Storing the entry again
    /// replaces it.
    Unusable(String),
}

/// Whether `mode` lets group or others write.
fn shared_writable(mode: u32) -> bool {
    mode & 0o022 != 0
}

/// Checks that the file or directory `m` describes belongs to `uid` and only it may
/// write it; the reason otherwise.
fn private(m: &fs::Metadata, uid: u32) -> Result<(), String> {
    if m.uid() != uid {
        return Err(format!(
            "owned by uid {}, not by this user (uid {uid})",
            m.uid()
        ));
    }
    if shared_writable(m.mode()) {
        return Err(format!(
            "writable by group or others (mode {:o})",
            m.mode() & 0o7777
        ));
    }
    Ok(())
}

fn nanos(t: SystemTime) -> i128 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// Whether `name` is an entry's file name (`KIND-` and 64 hex digits).
fn is_entry_name(name: &str) -> bool {
    match name.len().checked_sub(65) {
        Some(k) if k > 0 => {
            let (kind, rest) = name.split_at(k);
            entry::valid_kind(kind)
                && rest.starts_with('-')
                && rest[1..]
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        }
        _ => false,
    }
}

impl Store {
    /// Opens the store in `dir`, creating it (mode 0700; missing parents with the
    /// process's defaults) if needed, keeping at most `limit` bytes of entries. Fails,
    /// saying why, when `dir` is not a directory the user owns and alone may write.
    pub fn open(dir: PathBuf, limit: u64) -> Result<Store, String> {
        if let Some(parent) = dir.parent() {
            // A failure shows in the creation below.
            let _ = fs::create_dir_all(parent);
        }
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        }
        let m = fs::metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if !m.is_dir() {
            return Err(format!("{} is not a directory", dir.display()));
        }
        let uid = euid();
        private(&m, uid).map_err(|e| format!("{} is {e}", dir.display()))?;
        Ok(Store { dir, limit, uid })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The size bound in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The file of (`kind`, `key`).
    pub fn path(&self, kind: &str, key: &Key) -> PathBuf {
        self.dir.join(format!("{kind}-{}", key.hex()))
    }

    /// The entry of (`kind`, `key`).
    pub fn get(&self, kind: &str, key: &Key) -> Lookup {
        if !entry::valid_kind(kind) {
            return Lookup::Unusable(format!("bad entry kind {kind:?}"));
        }
        let path = self.path(kind, key);
        let mut f = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Unusable(format!("cannot open: {e}")),
        };
        // Checked on the descriptor that is read: a file swapped in after the check
        // is not the one read.
        let m = match f.metadata() {
            Ok(m) => m,
            Err(e) => return Lookup::Unusable(format!("cannot stat: {e}")),
        };
        if !m.is_file() {
            return Lookup::Unusable("not a regular file".into());
        }
        if let Err(e) = private(&m, self.uid) {
            return Lookup::Unusable(e);
        }
        let len = m.len();
        if len > self.limit.max(entry::HEADER as u64) {
            return Lookup::Unusable(format!("{len} bytes, over the cache's bound"));
        }
        let len = len as usize;
        let mut buf = vec![0u128; len.div_ceil(16)];
        let bytes = &mut as_bytes_mut(&mut buf)[..len];
        if let Err(e) = f.read_exact(bytes) {
            return Lookup::Unusable(format!("cannot read {len} bytes: {e}"));
        }
        let (start, plen) = match entry::decode(&as_bytes(&buf)[..len], kind, key) {
            Ok(p) => (entry::HEADER, p.len()),
            Err(d) => return Lookup::Unusable(d.to_string()),
        };
        let now = SystemTime::now();
        if m.modified()
            .is_ok_and(|t| now.duration_since(t).is_ok_and(|d| d > REFRESH))
        {
            // Recently used: eviction goes by this time. The owner may set it whatever
            // the descriptor's access mode.
            let _ = f.set_modified(now);
        }
        Lookup::Hit(Payload {
            buf,
            start,
            len: plen,
        })
    }

    /// Stores `payload` as the entry of (`kind`, `key`), replacing any file there,
    /// then trims the store to its bound. Fails, saying why, when the entry could not
    /// be written (nothing is left behind then) or is larger than the bound.
    pub fn put(&self, kind: &str, key: &Key, payload: &[u8]) -> Result<(), String> {
        if !entry::valid_kind(kind) {
            return Err(format!("bad entry kind {kind:?}"));
        }
        let bytes = entry::encode(kind, key, payload);
        if bytes.len() as u64 > self.limit {
            return Err(format!(
                "the entry ({} bytes) is larger than the cache's bound ({} bytes)",
                bytes.len(),
                self.limit
            ));
        }
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let tmp = self.dir.join(format!(
            "{TMP}{kind}-{}-{}-{}",
            &key.hex()[..16],
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&bytes))
            .and_then(|()| fs::rename(&tmp, self.path(kind, key)));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(format!(
                "cannot write {}: {e}",
                self.path(kind, key).display()
            ));
        }
        self.trim();
        Ok(())
    }

    /// Removes the least recently used entries until the rest fits the bound, and
    /// temporary files left by processes that died while writing. Best effort: files
    /// another process removed first are skipped.
    pub fn trim(&self) {
        let Ok(list) = fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut items = Vec::new();
        for e in list.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(m) = e.metadata() else { continue };
            if !m.is_file() {
                continue;
            }
            let mtime = m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if name.starts_with(TMP) {
                if now.duration_since(mtime).is_ok_and(|d| d > STALE_TMP) {
                    let _ = fs::remove_file(e.path());
                }
            } else if is_entry_name(&name) {
                items.push(Item {
                    name,
                    bytes: m.len(),
                    mtime: nanos(mtime),
                });
            }
        }
        for name in evict::victims(items, self.limit) {
            let _ = fs::remove_file(self.dir.join(name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::sync::atomic::AtomicUsize;

    struct Tmp(PathBuf);
    impl Tmp {
        fn new(tag: &str) -> Tmp {
            static N: AtomicUsize = AtomicUsize::new(0);
            let p = std::env::temp_dir().join(format!(
                "gomp-plugin-rs-store-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&p);
            Tmp(p)
        }
    }
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = fs::set_permissions(&self.0, fs::Permissions::from_mode(0o700));
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    const K1: Key = Key([1; 32]);
    const K2: Key = Key([2; 32]);

    fn hit(l: Lookup) -> Vec<u8> {
        match l {
            Lookup::Hit(p) => p.bytes().to_vec(),
            Lookup::Miss => panic!("miss"),
            Lookup::Unusable(why) => panic!("unusable: {why}"),
        }
    }

    fn unusable(l: Lookup) -> String {
        match l {
            Lookup::Unusable(why) => why,
            Lookup::Hit(_) => panic!("hit"),
            Lookup::Miss => panic!("miss"),
        }
    }

    #[test]
    fn miss_put_hit() {
        let t = Tmp::new("basic");
        let s = Store::open(t.0.join("a/b/store"), 1 << 20).expect("open");
        let mode = fs::metadata(s.dir()).unwrap().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "created private: {mode:o}");
        assert!(matches!(s.get("cubin", &K1), Lookup::Miss));
        s.put("cubin", &K1, b"image one").expect("put");
        assert_eq!(hit(s.get("cubin", &K1)), b"image one");
        assert!(matches!(s.get("cubin", &K2), Lookup::Miss));
        assert!(
            matches!(s.get("shape", &K1), Lookup::Miss),
            "kinds are apart"
        );
        // Replacing keeps one file; no temporary file is left.
        s.put("cubin", &K1, b"image one, again").expect("put");
        assert_eq!(hit(s.get("cubin", &K1)), b"image one, again");
        let names: Vec<_> = fs::read_dir(s.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, [format!("cubin-{}", K1.hex())]);
        // The payload starts aligned.
        if let Lookup::Hit(p) = s.get("cubin", &K1) {
            assert_eq!(p.bytes().as_ptr() as usize % 16, 0);
        }
        let e = fs::metadata(s.path("cubin", &K1)).unwrap().mode();
        assert_eq!(e & 0o077, 0, "entry private: {e:o}");
        assert!(s.put("Bad/kind", &K1, b"x").is_err());
    }

    #[test]
    fn damaged_entries_are_unusable_and_replaced() {
        let t = Tmp::new("damaged");
        let s = Store::open(t.0.clone(), 1 << 20).expect("open");
        s.put("cubin", &K1, &[0x5a; 4000]).expect("put");
        let path = s.path("cubin", &K1);
        let good = fs::read(&path).unwrap();
        // Truncated (a full disk, a killed writer).
        fs::write(&path, &good[..good.len() - 100]).unwrap();
        assert!(unusable(s.get("cubin", &K1)).contains("truncated"));
        // One byte changed.
        let mut bad = good.clone();
        bad[2000] ^= 0x10;
        fs::write(&path, &bad).unwrap();
        assert!(unusable(s.get("cubin", &K1)).contains("checksum"));
        // Empty, and not an entry at all.
        fs::write(&path, b"").unwrap();
        assert!(unusable(s.get("cubin", &K1)).contains("not a cache entry"));
        // Another key's entry under this name.
        fs::write(&path, entry::encode("cubin", &K2, b"x")).unwrap();
        assert!(unusable(s.get("cubin", &K1)).contains("another key"));
        // Storing again repairs it.
        s.put("cubin", &K1, &[0x5a; 4000]).expect("put");
        assert_eq!(hit(s.get("cubin", &K1)), vec![0x5a; 4000]);
    }

    #[test]
    fn shared_writable_entry_or_directory_is_refused() {
        let t = Tmp::new("perm");
        let s = Store::open(t.0.clone(), 1 << 20).expect("open");
        s.put("cubin", &K1, b"x").expect("put");
        let path = s.path("cubin", &K1);
        for mode in [0o620, 0o602, 0o666] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            let why = unusable(s.get("cubin", &K1));
            assert!(
                why.contains("writable by group or others"),
                "{mode:o}: {why}"
            );
        }
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(hit(s.get("cubin", &K1)), b"x", "readable by others is fine");
        fs::set_permissions(&t.0, fs::Permissions::from_mode(0o770)).unwrap();
        let why = Store::open(t.0.clone(), 1 << 20).unwrap_err();
        assert!(why.contains("writable by group or others"), "{why}");
        fs::set_permissions(&t.0, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(Store::open(t.0.clone(), 1 << 20).is_ok());
        // A file where the directory should be.
        let f = t.0.join("file");
        fs::write(&f, b"").unwrap();
        assert!(Store::open(f, 1 << 20)
            .unwrap_err()
            .contains("not a directory"));
    }

    #[test]
    fn other_owner_is_refused() {
        // Only root can give a file away; elsewhere the mode test above covers the rule.
        if euid() != 0 {
            eprintln!("SKIPPED other_owner_is_refused: needs root (chown)");
            return;
        }
        let t = Tmp::new("owner");
        let s = Store::open(t.0.join("s"), 1 << 20).expect("open");
        s.put("cubin", &K1, b"x").expect("put");
        let path = s.path("cubin", &K1);
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        let why = unusable(s.get("cubin", &K1));
        assert!(why.contains("owned by uid 65534"), "{why}");
        std::os::unix::fs::chown(s.dir(), Some(65534), None).unwrap();
        let why = Store::open(s.dir().to_path_buf(), 1 << 20).unwrap_err();
        assert!(why.contains("owned by uid 65534"), "{why}");
    }

    #[test]
    fn eviction_keeps_the_bound() {
        let t = Tmp::new("evict");
        let one = (entry::HEADER + 1000 + entry::TRAILER) as u64;
        let s = Store::open(t.0.clone(), 3 * one).expect("open");
        let keys: Vec<Key> = (0..5).map(|i| Key([10 + i; 32])).collect();
        for (i, k) in keys.iter().enumerate() {
            s.put("cubin", k, &[i as u8; 1000]).expect("put");
            // Distinct times, oldest first.
            let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + i as u64);
            File::options()
                .write(true)
                .open(s.path("cubin", k))
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        let present: Vec<bool> = keys.iter().map(|k| s.path("cubin", k).exists()).collect();
        assert_eq!(present, [false, false, true, true, true]);
        // A hit refreshes: the oldest surviving entry is used, so the next store
        // evicts the one after it.
        assert!(matches!(s.get("cubin", &keys[2]), Lookup::Hit(_)));
        s.put("cubin", &Key([99; 32]), &[9; 1000]).expect("put");
        assert!(s.path("cubin", &keys[2]).exists());
        assert!(!s.path("cubin", &keys[3]).exists());
        // Larger than the bound: refused, nothing written.
        assert!(s
            .put("cubin", &K1, &[0; 4000])
            .unwrap_err()
            .contains("larger"));
        assert!(!s.path("cubin", &K1).exists());
        // A stale temporary file goes, a fresh one stays; other files are not touched.
        let stale = t.0.join(".tmp-cubin-0-1-2");
        let fresh = t.0.join(".tmp-cubin-0-1-3");
        let other = t.0.join("README");
        for f in [&stale, &fresh, &other] {
            fs::write(f, b"x").unwrap();
        }
        File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(SystemTime::now() - 2 * STALE_TMP)
            .unwrap();
        s.trim();
        assert!(!stale.exists() && fresh.exists() && other.exists());
    }

    #[test]
    fn concurrent_writers_and_readers_see_whole_entries() {
        let t = Tmp::new("race");
        let s = Store::open(t.0.clone(), 1 << 24).expect("open");
        let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..20 {
                        s.put("cubin", &K1, &payload).expect("put");
                    }
                });
            }
            for _ in 0..2 {
                sc.spawn(|| {
                    for _ in 0..200 {
                        match s.get("cubin", &K1) {
                            Lookup::Hit(p) => assert!(p.bytes() == &payload[..]),
                            Lookup::Miss => {}
                            Lookup::Unusable(why) => panic!("reader saw {why}"),
                        }
                    }
                });
            }
        });
        assert_eq!(hit(s.get("cubin", &K1)), payload);
        let n = fs::read_dir(s.dir()).unwrap().count();
        assert_eq!(n, 1, "no temporary file is left");
    }

    #[test]
    fn entry_names() {
        let h = "0123456789abcdef".repeat(4);
        assert!(is_entry_name(&format!("cubin-{h}")));
        assert!(is_entry_name(&format!("launch-shape-{h}")));
        assert!(!is_entry_name(&h));
        assert!(!is_entry_name(&format!("-{h}")));
        assert!(!is_entry_name(&format!("cubin-{}", h.to_uppercase())));
        assert!(!is_entry_name(&format!("cubin-{h}0")));
        assert!(!is_entry_name(&format!(".tmp-cubin-{h}")));
    }
}
