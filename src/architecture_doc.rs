//! Keeps docs/architecture.md's skeleton table true (test only): the table between the
//! `BEGIN skeleton table` / `END skeleton table` markers names, per backend column
//! (a header cell holding `` `CRATE/src/` ``), files or folders (ending in `/`) under
//! that `src/`, each optionally followed by `::Type`; every file or folder must exist
//! and every type must be declared in its file (`pub struct` / `pub enum` /
//! `pub trait` / `pub type`, also inside a macro invocation). Reads files only.

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
            ["pub struct ", "pub enum ", "pub trait ", "pub type "]
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
                for s in named {
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
                }
            }
        }
        out
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
             | empty | |\n{END}\n"
        );
        let found = defects(&doc, root, 9);
        let expect = [
            "missing type: src/images.rs declares no `LoadedImagez`",
            "prefix only: src/images.rs declares no `LoadedImage`",
            "missing file: no file src/nothere.rs",
            "missing folder: no folder src/nothere/",
            "empty: nothing named for src/",
            "8 row(s), expected at least 9",
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
}
