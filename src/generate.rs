//! Files (or parts of files between marker lines) produced from tables in the code, and
//! the check that they are current: the entry-point table's ([`crate::edge::generated`])
//! and each product's settings tables (its `settings_tables` example). A generator is a
//! list of [`Output`]s; [`sync`] compares or rewrites them and [`cli`] is the `write` /
//! `check` command of an example. Pure functions but for the files they read and write;
//! thread-safe.

use std::path::Path;
use std::process::ExitCode;

/// A generated file, or the generated part of one between two marker lines. Plain data.
pub struct Output {
    /// Path relative to the repository root.
    pub path: &'static str,
    /// `Some((begin, end))`: only the lines between these marker lines are generated.
    pub markers: Option<(&'static str, &'static str)>,
    /// The generated text.
    pub text: String,
}

/// `current` with `out` put in (the whole text, or between its markers); an error
/// names a missing marker.
pub fn apply(current: &str, out: &Output) -> Result<String, String> {
    let Some((begin, end)) = out.markers else {
        return Ok(out.text.clone());
    };
    let b = current
        .find(begin)
        .ok_or_else(|| format!("{}: no line '{begin}'", out.path))?;
    let body = b + begin.len();
    let e = current[body..]
        .find(end)
        .map(|i| body + i)
        .ok_or_else(|| format!("{}: no line '{end}' after '{begin}'", out.path))?;
    Ok(format!(
        "{}\n{}{}",
        &current[..body],
        out.text,
        &current[e..]
    ))
}

/// The files of `outputs` under `root` that differ from what their tables give (empty:
/// all current); with `write`, rewrites them instead. Outputs of one file are applied
/// in turn.
pub fn sync(root: &Path, outputs: &[Output], write: bool) -> Result<Vec<String>, String> {
    let mut stale = Vec::new();
    for out in outputs {
        let path = root.join(out.path);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        let want = apply(&current, out)?;
        if want != current {
            if write {
                std::fs::write(&path, &want).map_err(|e| format!("{}: {e}", out.path))?;
            }
            stale.push(out.path.to_string());
        }
    }
    Ok(stale)
}

/// The unit test of a generator: panics, naming the stale files and the `command` that
/// rewrites them, when any of `outputs` under `root` differs from its table.
pub fn assert_current(root: &Path, outputs: &[Output], command: &str) {
    match sync(root, outputs, false) {
        Ok(stale) => assert!(stale.is_empty(), "stale (run {command}): {stale:?}"),
        Err(e) => panic!("{e} (run {command})"),
    }
}

/// The `write` / `check` command of a generator example named `name`: `write` rewrites
/// the stale files of `outputs` under `root` and lists them; `check` lists them and
/// fails when there are any. Any other `mode` is a usage error (status 2).
pub fn cli(name: &str, root: &Path, outputs: &[Output], mode: &str) -> ExitCode {
    let write = match mode {
        "write" => true,
        "check" => false,
        _ => {
            eprintln!("{name}: unknown mode '{mode}' (write or check)");
            return ExitCode::from(2);
        }
    };
    match sync(root, outputs, write) {
        Ok(changed) => {
            for c in &changed {
                println!("{}: {c}", if write { "wrote" } else { "stale" });
            }
            if !write && !changed.is_empty() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The arguments of a generator example, `write`, `check` or `--help`: runs [`cli`],
/// prints `usage` for `-h`/`--help`, refuses anything else (status 2).
pub fn main(
    name: &str,
    usage: &str,
    root: &Path,
    outputs: impl FnOnce() -> Vec<Output>,
) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["-h" | "--help"] => {
            println!("{usage}");
            ExitCode::SUCCESS
        }
        [mode @ ("write" | "check")] => cli(name, root, &outputs(), mode),
        _ => {
            eprintln!("{usage}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_pair_is_replaced_between_its_lines() {
        let out = Output {
            path: "x",
            markers: Some(("<!-- B -->", "<!-- E -->")),
            text: "new\n".into(),
        };
        assert_eq!(
            apply("a\n<!-- B -->\nold\n<!-- E -->\nz\n", &out).unwrap(),
            "a\n<!-- B -->\nnew\n<!-- E -->\nz\n"
        );
        assert!(apply("a\n", &out).is_err());
        assert!(apply("a\n<!-- B -->\nold\n", &out).is_err());
    }

    #[test]
    fn sync_reports_and_rewrites_stale_files() {
        let dir = std::env::temp_dir().join(format!("gomp-generate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f"), "a\n<!-- B -->\nold\n<!-- E -->\n").unwrap();
        let outs = [
            Output {
                path: "f",
                markers: Some(("<!-- B -->", "<!-- E -->")),
                text: "new\n".into(),
            },
            Output {
                path: "g",
                markers: None,
                text: "whole\n".into(),
            },
        ];
        assert_eq!(sync(&dir, &outs, false).unwrap(), ["f", "g"]);
        assert!(!dir.join("g").exists());
        assert_eq!(sync(&dir, &outs, true).unwrap(), ["f", "g"]);
        assert_eq!(sync(&dir, &outs, false).unwrap(), Vec::<String>::new());
        assert_eq!(
            std::fs::read_to_string(dir.join("f")).unwrap(),
            "a\n<!-- B -->\nnew\n<!-- E -->\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
