//! The source line of each kernel of an image whose PTX carries line information
//! (built with `-g`: `.file N "name"` and `.loc N LINE COL` directives), for the names
//! profilers show (`crate::observe::nvtx::names`). Read at image load only while an
//! NVTX tool is attached.
//!
//! GCC's OpenMP kernel `f$_omp_fn$N` is an `.entry` wrapper that calls the region's
//! body, the `.func f$_omp_fn$N$impl`; an OpenACC kernel's `.entry` is its body. A
//! kernel's line is taken from its body (the entry, else its `$impl`): the file of the
//! body's first `.loc`, and the smallest line of that file in the body, which is the
//! construct's own line (the `#pragma`/`!$omp` line comes before the statements of its
//! region). The file is shown by its last path component.
//!
//! Plain functions; the map returned is owned by the caller.

use std::collections::HashMap;

/// Where one function's body is: its `.loc` lines as (file number, line).
type Locs = Vec<(u32, u32)>;

/// The kernels' (file, line) in `ptx` (an image's PTX objects), by kernel name. Kernels
/// without line information are absent.
pub fn kernel_lines<T: AsRef<[u8]>>(ptx: &[T]) -> HashMap<String, (String, u32)> {
    let mut out = HashMap::new();
    for obj in ptx {
        let text = String::from_utf8_lossy(obj.as_ref());
        let (files, bodies, entries) = scan(&text);
        for k in entries {
            let locs = bodies
                .get(&k)
                .filter(|l| !l.is_empty())
                .or_else(|| bodies.get(&format!("{k}$impl")));
            let Some(&(file, _)) = locs.and_then(|l| l.first()) else {
                continue;
            };
            let line = locs
                .into_iter()
                .flatten()
                .filter(|(f, _)| *f == file)
                .map(|&(_, l)| l)
                .filter(|&l| l > 0)
                .min();
            if let (Some(name), Some(line)) = (files.get(&file), line) {
                out.insert(k, (name.clone(), line));
            }
        }
    }
    out
}

/// One PTX text's file names by number, each function body's `.loc`s, and the names of
/// its kernels (`.entry` definitions).
fn scan(text: &str) -> (HashMap<u32, String>, HashMap<String, Locs>, Vec<String>) {
    let (mut files, mut bodies, mut entries) = (HashMap::new(), HashMap::new(), Vec::new());
    let mut current: Option<String> = None;
    for line in text.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix(".file") {
            if let Some((n, name)) = file_directive(rest) {
                files.insert(n, name);
            }
        } else if let Some(rest) = l.strip_prefix(".loc") {
            let mut f = rest.split_whitespace().map(str::parse::<u32>);
            if let (Some(name), Some(Ok(file)), Some(Ok(n))) = (&current, f.next(), f.next()) {
                bodies
                    .entry(name.clone())
                    .or_insert_with(Vec::new)
                    .push((file, n));
            }
        } else if let Some((kind, name)) = definition(l) {
            if kind == ".entry" {
                entries.push(name.clone());
            }
            bodies.entry(name.clone()).or_insert_with(Vec::new);
            current = Some(name);
        }
    }
    (files, bodies, entries)
}

/// `.file`'s number and the last path component of its name (`N "path"[, ...]`).
fn file_directive(rest: &str) -> Option<(u32, String)> {
    let rest = rest.trim_start();
    let (n, rest) = rest.split_once(char::is_whitespace)?;
    let n = n.parse().ok()?;
    let name = rest.trim_start().strip_prefix('"')?.split('"').next()?;
    let base = name.rsplit('/').next().unwrap_or(name);
    (!base.is_empty()).then(|| (n, base.to_string()))
}

/// A function definition's directive (`.entry` or `.func`) and name; `None` for other
/// lines and for declarations (which end with `;`).
fn definition(l: &str) -> Option<(&'static str, String)> {
    if l.ends_with(';') {
        return None;
    }
    let words = l.trim_start_matches(|c: char| c != '.');
    let (kind, rest) = [".entry", ".func"].iter().find_map(|k| {
        let at = words.find(k)?;
        let before = &words[..at];
        let after = &words[at + k.len()..];
        let prefix_ok = before
            .split_whitespace()
            .all(|w| matches!(w, ".visible" | ".weak" | ".extern"));
        (prefix_ok && after.starts_with([' ', '\t', '('])).then_some((*k, after))
    })?;
    let mut rest = rest.trim_start();
    if kind == ".func" && rest.starts_with('(') {
        // A return parameter: `.func (.param .u32 %value_out) name (...)`.
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.'))
        .collect();
    (!name.is_empty()).then_some((kind, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As GCC 16 writes an image of `t.c` built with `-g` (OpenMP regions at lines 4
    /// and 11, whose bodies start at 5 and 12), shortened.
    const OMP: &str = "// BEGIN PREAMBLE\n.version 7.3\n.target sm_52\n.address_size 64\n\
.file 1 \"<dummy>\"\n.file 2 \"/home/u/src/t.c\"\n\
.visible .entry foo$_omp_fn$0 (.param .u64 %arg, .param .u64 %stack, .param .u64 %sz)\n{\n\
.loc 2 5 21\nadd.u64 %r1,%r1,8;\n.loc 2 6 10\n.loc 2 5 21\n$L1:\n.loc 2 4 9\nret;\n}\n\
.visible .entry main$_omp_fn$0 (.param .u64 %arg, .param .u64 %stack, .param .u64 %sz)\n{\n\
call.uni gomp_nvptx_main,(%P0,%P1);\nret.uni;\n}\n\
// BEGIN FUNCTION DEF: main$_omp_fn$0$impl\n.func main$_omp_fn$0$impl (.param .u64 %in_ar0)\n{\n\
.loc 2 12 8\nld.u64 %r24,[%r23];\n.loc 2 11 9\nret;\n}\n\
.func (.param .u32 %value_out) helper (.param .u64 %in_ar0)\n{\n.loc 1 3 1\nret;\n}\n";

    /// An OpenACC image's kernel (declared, then defined), region at line 14.
    const ACC: &str = ".file 2 \"t.c\", 1700000000, 321\n\
.entry main$_omp_fn$0 (.param .u64 %in_ar0);\n\
.entry main$_omp_fn$0 (.param .u64 %in_ar0)\n{\n.loc 2 15 8\n.loc 2 14 9\nret;\n}\n";

    #[test]
    fn lines_of_omp_and_acc_kernels() {
        let m = kernel_lines(&[OMP.as_bytes()]);
        assert_eq!(m.get("foo$_omp_fn$0"), Some(&("t.c".to_string(), 4)));
        assert_eq!(m.get("main$_omp_fn$0"), Some(&("t.c".to_string(), 11)));
        assert_eq!(m.len(), 2, "{m:?}: functions are no kernels");
        let m = kernel_lines(&[ACC]);
        assert_eq!(m.get("main$_omp_fn$0"), Some(&("t.c".to_string(), 14)));
    }

    #[test]
    fn no_lines_without_debug_info() {
        let m =
            kernel_lines(&[".version 7.0\n.visible .entry k (.param .u64 %in_ar0)\n{\nret;\n}\n"]);
        assert!(m.is_empty());
        assert_eq!(
            definition(".visible .entry k(.param .u64 a)"),
            Some((".entry", "k".into()))
        );
        assert_eq!(definition(".extern .func abort;"), None);
        assert_eq!(definition("ld.u64 %r1,[x];"), None);
    }
}
