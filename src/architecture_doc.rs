//! Keeps docs/architecture.md's skeleton table true (test only): the table between the
//! `BEGIN skeleton table` / `END skeleton table` markers names, per backend column
//! (a header cell holding `` `CRATE/src/` ``), files or folders (ending in `/`) under
//! that `src/`, each optionally followed by `::Item`; every file or folder must exist
//! and every item must be declared in its file (`pub struct` / `pub enum` /
//! `pub trait` / `pub type` / `pub static`, also inside a macro invocation).
//!
//! A span holding `(` is a signature, `Type::name(params) -> Ret` (a method of an
//! `impl ... Type` block) or `name(params) -> Ret` (a free function), of the file named
//! before it in the cell, without qualifiers (`pub`, `unsafe`); the file must declare
//! that function with that signature (whitespace and rustfmt's trailing commas
//! aside). A span `Type.field: FieldType` is a field of the struct `Type` of that file,
//! which must declare it so (with any visibility); the span `mod tests` says the file
//! holds its unit tests inline (a `mod tests` of its own). The paired items have one
//! shape: every signature, field and `mod tests` of one backend column must be in the
//! other backend columns of its row too, letter for letter, except in the rows of the
//! driver layer (concept starting with "driver layer"), whose signatures name each
//! driver's own types. A drift of either backend, or of the table, fails the test.
//! Besides the table: no crate (`src/`, `nvptx/src/`, `gcn/src/`) keeps unit tests in
//! a separate `tests.rs` (the table's "unit tests" row says where they are). Reads
//! files only.
#[cfg(test)]
mod tests {
    use std::path::Path;

    const BEGIN: &str = "<!-- BEGIN skeleton table";
    const END: &str = "<!-- END skeleton table -->";

    /// The table's cells, row by row (header first, separator dropped).
    fn rows(doc: &str) -> Result<Vec<Vec<String>>, String> {
        let start = doc.find(BEGIN).ok_or("no BEGIN skeleton table marker")?;
        let end = doc[start..]
            .find(END)
            .ok_or("no END skeleton table marker")?
            + start;
        Ok(doc[start..end]
            .lines()
            .skip(1)
            .filter(|l| l.trim_start().starts_with('|'))
            .filter(|l| {
                !l.trim()
                    .trim_matches('|')
                    .chars()
                    .all(|c| "-| ".contains(c))
            })
            .map(|l| {
                let l = l.trim().trim_start_matches('|').trim_end_matches('|');
                l.split('|').map(|c| c.trim().to_string()).collect()
            })
            .collect())
    }

    /// The backtick spans of a cell.
    fn spans(cell: &str) -> Vec<&str> {
        cell.split('`').skip(1).step_by(2).collect()
    }

    /// Whether `src` declares `name` as a public struct, enum, trait or type.
    fn declares(src: &str, name: &str) -> bool {
        src.lines().any(|l| {
            let l = l.trim_start();
            [
                "pub struct ",
                "pub enum ",
                "pub trait ",
                "pub type ",
                "pub static ",
            ]
            .iter()
            .any(|kw| {
                l.strip_prefix(kw).is_some_and(|rest| {
                    rest.strip_prefix(name).is_some_and(|after| {
                        !after.starts_with(|c: char| c.is_alphanumeric() || c == '_')
                    })
                })
            })
        })
    }

    /// Whether a span is paired across the backends: a signature, a field or `mod tests`.
    fn paired(s: &str) -> bool {
        s.contains('(') || is_field(s) || s == "mod tests"
    }

    /// Whether a span is a field, `Type.field: FieldType`.
    fn is_field(s: &str) -> bool {
        !s.contains('(')
            && s.split_once(": ").is_some_and(|(head, _)| {
                head.split_once('.').is_some_and(|(t, f)| {
                    [t, f].iter().all(|w| {
                        !w.is_empty() && w.chars().all(|c| c.is_alphanumeric() || c == '_')
                    })
                })
            })
    }

    /// Whether `src` declares field `field: ty` in `struct name { .. }` (any visibility,
    /// whitespace aside).
    fn declares_field(src: &str, span: &str) -> bool {
        let Some((head, ty)) = span.split_once(": ") else {
            return false;
        };
        let Some((name, field)) = head.split_once('.') else {
            return false;
        };
        let want = normalize(&format!("{field}: {ty},"));
        let mut inside = false;
        for line in src.lines() {
            if !inside {
                let l = line.trim_start();
                let l = l.split_once("struct ").map_or("", |(vis, rest)| {
                    if vis.is_empty() || vis.trim().starts_with("pub") {
                        rest
                    } else {
                        ""
                    }
                });
                inside = l
                    .strip_prefix(name)
                    .is_some_and(|after| after.trim_start().starts_with(['{', '<']));
                continue;
            }
            if line.starts_with('}') {
                inside = false;
                continue;
            }
            let l = line.trim();
            let l = match l.strip_prefix("pub") {
                Some(rest) if rest.starts_with('(') => {
                    rest.split_once(')').map_or(l, |(_, r)| r.trim())
                }
                Some(rest) if rest.starts_with(' ') => rest.trim(),
                _ => l,
            };
            if normalize(l) == want {
                return true;
            }
        }
        false
    }

    /// Whether `src` declares a `mod tests` (inline, with a body).
    fn declares_tests(src: &str) -> bool {
        src.lines()
            .any(|l| l.trim_start().starts_with("mod tests {") || l.trim() == "mod tests {")
    }

    /// Every `tests.rs` under `root/dir` (unit tests kept apart from the code they test).
    fn tests_files(root: &Path, dir: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![root.join(dir)];
        while let Some(d) = todo.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    todo.push(p);
                } else if p.file_name().is_some_and(|n| n == "tests.rs") {
                    out.push(p.strip_prefix(root).unwrap_or(&p).display().to_string());
                }
            }
        }
        out.sort();
        out
    }

    /// Whitespace collapsed, no space inside parentheses, no trailing comma before `)`.
    fn normalize(sig: &str) -> String {
        let s = sig.split_whitespace().collect::<Vec<_>>().join(" ");
        s.replace("( ", "(").replace(" )", ")").replace(",)", ")")
    }

    /// The signature after `fn ` at `at` in `src`: up to its body, `;` or `where`.
    fn signature_at(src: &str, at: usize) -> String {
        let mut depth = 0i32;
        let rest = &src[at..];
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                '{' | ';' if depth == 0 => {
                    end = i;
                    break;
                }
                _ => {}
            }
            if depth == 0
                && rest[i..].starts_with("where")
                && rest[..i].ends_with(char::is_whitespace)
            {
                end = i;
                break;
            }
        }
        normalize(&rest[..end])
    }

    /// The type an `impl` header line is for (`impl X {`, `impl Trait for X {`,
    /// generics dropped, last path segment).
    fn impl_type(header: &str) -> &str {
        let h = header.trim_end().trim_end_matches('{').trim();
        let h = h.rsplit_once(" for ").map_or(h, |(_, t)| t);
        let h = h.strip_prefix("impl").unwrap_or(h).trim();
        let h = if h.starts_with('<') {
            h.split_once("> ").map_or(h, |(_, t)| t)
        } else {
            h
        };
        let h = h.split('<').next().unwrap_or(h).trim();
        h.rsplit("::").next().unwrap_or(h)
    }

    /// Whether `src` declares `sig` (`Type::name(...) -> R` or `name(...) -> R`).
    fn declares_fn(src: &str, sig: &str) -> bool {
        let want = normalize(sig);
        let head = want.split(['(', '<']).next().unwrap_or("");
        let (ty, name) = match head.rsplit_once("::") {
            Some((t, n)) => (Some(t), n),
            None => (None, head),
        };
        let bare = match ty {
            Some(t) => want[t.len() + 2..].to_string(),
            None => want.clone(),
        };
        let lines: Vec<&str> = src.lines().collect();
        let mut offset = 0;
        for (n, line) in lines.iter().enumerate() {
            let start = offset;
            offset += line.len() + 1;
            let Some(at) = line.find("fn ") else { continue };
            let before = line[..at].trim();
            if !before.split_whitespace().all(|w| {
                w.starts_with("pub") || ["unsafe", "const", "extern", "\"C\""].contains(&w)
            }) {
                continue;
            }
            let after = &line[at + 3..];
            if !after.starts_with(name)
                || after[name.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
            {
                continue;
            }
            let indented = line.starts_with(char::is_whitespace);
            let in_type = match ty {
                None => !indented,
                Some(t) => {
                    indented
                        && lines[..n]
                            .iter()
                            .rev()
                            .find(|l| !l.is_empty() && !l.starts_with(char::is_whitespace))
                            .is_some_and(|h| h.starts_with("impl") && impl_type(h) == t)
                }
            };
            if in_type && signature_at(src, start + at + 3) == bare {
                return true;
            }
        }
        false
    }

    /// Every defect of the table against the tree under `root`: one line each. Also a
    /// defect: no backend column, fewer than `min_rows` rows, an empty backend cell.
    fn defects(doc: &str, root: &Path, min_rows: usize) -> Vec<String> {
        let rows = match rows(doc) {
            Ok(r) => r,
            Err(e) => return vec![e],
        };
        let Some((header, body)) = rows.split_first() else {
            return vec!["the skeleton table is empty".into()];
        };
        let columns: Vec<(usize, &str)> = header
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                spans(c)
                    .into_iter()
                    .find(|s| s.ends_with("src/"))
                    .map(|s| (i, s))
            })
            .collect();
        let mut out = Vec::new();
        if columns.is_empty() {
            out.push("no backend column (a header cell with `CRATE/src/`)".into());
        }
        if body.len() < min_rows {
            out.push(format!(
                "{} row(s), expected at least {min_rows}",
                body.len()
            ));
        }
        for row in body {
            let concept = row.first().map_or("", String::as_str);
            for &(i, base) in &columns {
                let cell = row.get(i).map_or("", String::as_str);
                let named = spans(cell);
                if named.is_empty() {
                    out.push(format!("{concept}: nothing named for {base}"));
                }
                let mut file: Option<(String, String)> = None;
                for s in named {
                    if s == "mod tests" || is_field(s) {
                        match &file {
                            None => out.push(format!("{concept}: `{s}` for {base} after no file")),
                            Some((f, src)) => {
                                let ok = if s == "mod tests" {
                                    declares_tests(src)
                                } else {
                                    declares_field(src, s)
                                };
                                if !ok {
                                    out.push(format!("{concept}: {base}{f} declares no `{s}`"));
                                }
                            }
                        }
                        continue;
                    }
                    if s.contains('(') {
                        match &file {
                            None => out.push(format!(
                                "{concept}: signature `{s}` for {base} after no file"
                            )),
                            Some((f, src)) => {
                                if !declares_fn(src, s) {
                                    out.push(format!("{concept}: {base}{f} declares no `{s}`"));
                                }
                            }
                        }
                        continue;
                    }
                    let (path, ty) = match s.split_once("::") {
                        Some((p, t)) => (p, Some(t)),
                        None => (s, None),
                    };
                    let full = root.join(base).join(path);
                    if path.ends_with('/') {
                        if !full.is_dir() {
                            out.push(format!("{concept}: no folder {base}{path}"));
                        }
                        if ty.is_some() {
                            out.push(format!("{concept}: a type after the folder {base}{path}"));
                        }
                        continue;
                    }
                    let Ok(src) = std::fs::read_to_string(&full) else {
                        out.push(format!("{concept}: no file {base}{path}"));
                        continue;
                    };
                    if let Some(ty) = ty {
                        if !declares(&src, ty) {
                            out.push(format!("{concept}: {base}{path} declares no `{ty}`"));
                        }
                    }
                    file = Some((path.to_string(), src));
                }
            }
            if concept.starts_with("driver layer") {
                continue;
            }
            let sigs = |i: usize| -> Vec<String> {
                spans(row.get(i).map_or("", String::as_str))
                    .into_iter()
                    .filter(|s| paired(s))
                    .map(normalize)
                    .collect()
            };
            for &(i, base) in &columns {
                for &(j, other) in &columns {
                    for s in sigs(i) {
                        if i != j && !sigs(j).contains(&s) {
                            out.push(format!(
                                "{concept}: `{s}` of {base} is not in {other}'s cell"
                            ));
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn no_crate_keeps_unit_tests_apart() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let apart: Vec<String> = ["src", "nvptx/src", "gcn/src"]
            .iter()
            .flat_map(|d| tests_files(root, d))
            .collect();
        assert!(
            apart.is_empty(),
            "unit tests belong inline, in a `mod tests` of the file they test: {apart:?}"
        );
    }

    #[test]
    fn skeleton_table_matches_the_tree() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let doc = std::fs::read_to_string(root.join("docs/architecture.md"))
            .expect("docs/architecture.md");
        let found = defects(&doc, root, 10);
        assert!(
            found.is_empty(),
            "docs/architecture.md's skeleton table does not match the tree:\n  {}",
            found.join("\n  ")
        );
    }

    #[test]
    fn the_check_finds_each_kind_of_defect() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let doc = format!(
            "{BEGIN} -->\n| concept | x (`src/`) |\n|---|---|\n\
             | ok | `images.rs::LoadedImages` |\n\
             | ok folder | `edge/` |\n\
             | ok macro | `error.rs::Error` |\n\
             | missing type | `images.rs::LoadedImagez` |\n\
             | prefix only | `images.rs::LoadedImage` |\n\
             | missing file | `nothere.rs::X` |\n\
             | missing folder | `nothere/` |\n\
             | empty | |\n\
             | ok fn | `error.rs`, `check(driver: &'static DriverText, code: i64, call: &'static str) -> Result<()>` |\n\
             | ok method | `images.rs::LoadedImages`, `LoadedImages::new() -> Self` |\n\
             | drifted fn | `error.rs`, `check(code: i64) -> Result<()>` |\n\
             | wrong type | `error.rs`, `Error::code(&self) -> i64` |\n\
             | fn first | `new() -> Self` |\n\
             | ok field | `registry.rs::Registry`, `Registry.kernels: KernelSet<D::Kernel>` |\n\
             | drifted field | `registry.rs`, `Registry.kernels: KernelSet<u8>` |\n\
             | ok tests | `images.rs`, `mod tests` |\n\
             | no tests | `lib.rs`, `mod tests` |\n{END}\n"
        );
        let found = defects(&doc, root, 18);
        let expect = [
            "missing type: src/images.rs declares no `LoadedImagez`",
            "prefix only: src/images.rs declares no `LoadedImage`",
            "missing file: no file src/nothere.rs",
            "missing folder: no folder src/nothere/",
            "empty: nothing named for src/",
            "drifted fn: src/error.rs declares no `check(code: i64) -> Result<()>`",
            "wrong type: src/error.rs declares no `Error::code(&self) -> i64`",
            "fn first: signature `new() -> Self` for src/ after no file",
            "drifted field: src/registry.rs declares no `Registry.kernels: KernelSet<u8>`",
            "no tests: src/lib.rs declares no `mod tests`",
            "17 row(s), expected at least 18",
        ];
        for e in expect {
            assert!(found.iter().any(|f| f == e), "{e:?} not in {found:?}");
        }
        assert_eq!(found.len(), expect.len(), "{found:?}");
        assert_eq!(
            defects("no table", root, 1),
            ["no BEGIN skeleton table marker"]
        );
    }

    #[test]
    fn paired_signatures_must_agree() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let doc = format!(
            "{BEGIN} -->\n| concept | a (`src/`) | b (`src/`) |\n|---|---|---|\n\
             | same | `images.rs`, `LoadedImages::new() -> Self` | `images.rs`, `LoadedImages::new() -> Self` |\n\
             | one side | `images.rs`, `LoadedImages::new() -> Self` | `images.rs` |\n\
             | driver layer: own types | `images.rs`, `LoadedImages::new() -> Self` | `error.rs` |\n\
             | field one side | `registry.rs`, `Registry.kernels: KernelSet<D::Kernel>` | `registry.rs` |\n{END}\n"
        );
        assert_eq!(
            defects(&doc, root, 3),
            [
                "one side: `LoadedImages::new() -> Self` of src/ is not in src/'s cell",
                "field one side: `Registry.kernels: KernelSet<D::Kernel>` of src/ is not in src/'s cell"
            ]
        );
    }
}
