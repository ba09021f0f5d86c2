//! Settings as the environment writes them, shared by every backend: one reader over a
//! table of entries. A backend lists its variables once, each as an [`Entry`] (name,
//! value syntax with its bounds, default, doc line), and reads them all at one moment
//! with [`read`]; a bad value is reported as `Invalid value 'V' for NAME (WHY); using
//! the default (DEFAULT)` (a `libgomp:` warning in production) and the setting keeps its
//! default. The same entries describe the keys of a `key=value,...` list
//! ([`apply_list`]). Plain data and functions, no state.

use std::path::PathBuf;

/// How one setting's value is written and where it goes: `set` stores the parsed value
/// in the backend's settings `S`. Plain data (function pointers).
pub enum Value<S> {
    /// A byte count ([`parse_size`]) within `min..=max`.
    Bytes {
        /// Least value accepted.
        min: usize,
        /// Greatest value accepted.
        max: usize,
        /// Stores the value.
        set: fn(&mut S, usize),
    },
    /// A decimal whole number within `min..=max`.
    Number {
        /// Least value accepted.
        min: usize,
        /// Greatest value accepted.
        max: usize,
        /// Stores the value.
        set: fn(&mut S, usize),
    },
    /// A whole number written as [`parse_size`] reads it, within `min..=max`, as GCC's
    /// plugins take theirs (`atol`): when `min` > 0, `0` means unset (the setting keeps
    /// its default and `set` is not called) and is not reported.
    Size {
        /// Least value accepted, but for an unsetting `0`.
        min: u64,
        /// Greatest value accepted.
        max: u64,
        /// Stores the value.
        set: fn(&mut S, u64),
    },
    /// A switch: `1`/`0`, `yes`/`no`, `on`/`off`, `true`/`false` (any case).
    Flag(fn(&mut S, bool)),
    /// A file name (anything but blank).
    Path(fn(&mut S, PathBuf)),
    /// One of a few words; `set` gets the index of the one written.
    Word(&'static [&'static str], fn(&mut S, usize)),
    /// Any other syntax, as the first field says it (Markdown, for the docs): the
    /// parser stores the value or says what it expected.
    Parsed(&'static str, fn(&mut S, &str) -> Result<(), String>),
}

/// One setting: a variable of the environment, or a key of a `key=value` list. Plain
/// data; backends keep theirs in a `static` table.
pub struct Entry<S> {
    /// The variable (or key).
    pub name: &'static str,
    /// Its syntax, bounds and destination.
    pub value: Value<S>,
    /// Its default, as the warning for a bad value names it.
    pub default: &'static str,
    /// What it sets, one line.
    pub doc: &'static str,
}

/// A switch's value, if `v` is one.
fn flag(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "yes" | "on" | "true" => Some(true),
        "0" | "no" | "off" | "false" => Some(false),
        _ => None,
    }
}

impl<S> Value<S> {
    /// What a value must be, as a warning says it.
    pub fn expected(&self) -> String {
        match self {
            Value::Bytes { min, max, .. } => format!("{min}..{max} bytes"),
            Value::Number { min, max, .. } => format!("a number in {min}..{max}"),
            Value::Size { min, max, .. } => format!("{min}..{max}"),
            Value::Flag(_) => "1 or 0".into(),
            Value::Path(_) => "a file name".into(),
            Value::Word(words, _) => words.join(", "),
            Value::Parsed(..) => "a valid value".into(),
        }
    }

    /// What a value may be, as the docs' tables say it (Markdown): bounds with byte
    /// counts in binary units, the words, the syntax of a parsed value.
    pub fn accepted(&self) -> String {
        match self {
            Value::Bytes { min, max, .. } => format!("{}..{}", bytes(*min), bytes(*max)),
            Value::Number { min, max, .. } => format!("{min}..{max}"),
            Value::Size { min, max, .. } => {
                let (lo, hi) = (bytes(*min as usize), bytes(*max as usize));
                match min {
                    0 => format!("{lo}..{hi}"),
                    _ => format!("{lo}..{hi} (0: the default)"),
                }
            }
            Value::Flag(_) => "`1` or `0` (also `yes`/`no`, `on`/`off`, `true`/`false`)".into(),
            Value::Path(_) => "a file name".into(),
            Value::Word(words, _) => {
                let w: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
                match w.split_last() {
                    Some((last, rest)) if !rest.is_empty() => {
                        format!("{} or {last}", rest.join(", "))
                    }
                    _ => w.concat(),
                }
            }
            Value::Parsed(syntax, _) => syntax.to_string(),
        }
    }

    /// Stores `v` in `s`, or says why it cannot (`s` is then unchanged).
    pub fn apply(&self, s: &mut S, v: &str) -> Result<(), String> {
        let bad = || Err(format!("expected {}", self.expected()));
        match self {
            Value::Bytes { min, max, set } => match parse_size(v) {
                Some(n) if (*min..=*max).contains(&n) => set(s, n),
                _ => return bad(),
            },
            Value::Number { min, max, set } => match v.trim().parse::<usize>() {
                Ok(n) if (*min..=*max).contains(&n) => set(s, n),
                _ => return bad(),
            },
            Value::Size { min, max, set } => match parse_size(v).map(|n| n as u64) {
                Some(0) if *min > 0 => {}
                Some(n) if (*min..=*max).contains(&n) => set(s, n),
                _ => return bad(),
            },
            Value::Flag(set) => match flag(v) {
                Some(b) => set(s, b),
                None => return bad(),
            },
            Value::Path(set) if !v.trim().is_empty() => set(s, v.into()),
            Value::Path(_) => return bad(),
            Value::Word(words, set) => match words.iter().position(|w| *w == v.trim()) {
                Some(i) => set(s, i),
                None => return bad(),
            },
            Value::Parsed(_, parse) => return parse(s, v),
        }
        Ok(())
    }
}

/// Reads every variable of `table` through `get` (the environment in production) into
/// `s`, which holds the defaults: a variable that is unset keeps its default, a bad
/// value is reported through `warn` and keeps it too.
pub fn read<S>(
    table: &[Entry<S>],
    s: &mut S,
    get: &impl Fn(&str) -> Option<String>,
    warn: &impl Fn(&str),
) {
    for e in table {
        if let Some(v) = get(e.name) {
            if let Err(why) = e.value.apply(s, &v) {
                warn(&format!(
                    "Invalid value '{v}' for {} ({why}); using the default ({})",
                    e.name, e.default
                ));
            }
        }
    }
}

/// The process environment, as [`read`] takes it: the variable's value, if it is set
/// and valid Unicode.
pub fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A backend's settings as one value (its `Config`), read from the environment once per
/// process, the same in every product. The backend writes [`ProcessSettings::from_lookup`]
/// (its table read with [`read`] through a lookup, a bad value reported through a
/// callback) and names the one cell the process's value lives in
/// ([`ProcessSettings::cell`], a `static` of its own); reading the process environment
/// ([`ProcessSettings::from_env`]: bad values reported as `libgomp:` errors) and keeping
/// it ([`ProcessSettings::process`]) are written here once. The value is read at the
/// plugin's first use (`Plugin::read_settings`, at the first `get_num_devices`), so a
/// bad value is reported once, also on a machine without a GPU; afterwards it is
/// shared read-only by every thread (`Sync`).
pub trait ProcessSettings: Sized + Send + Sync + 'static {
    /// Reads the settings through `get` (the environment in production), reporting each
    /// bad value through `warn` and keeping its default.
    fn from_lookup(get: impl Fn(&str) -> Option<String>, warn: impl Fn(&str)) -> Self;

    /// The cell the process's settings are kept in: the backend's own `static` (Rust
    /// has no generic statics, so the one line that owns it is the backend's).
    fn cell() -> &'static once_cell::sync::OnceCell<Self>;

    /// Reads the process environment; bad values are reported through libgomp's error
    /// stream ([`ProcessSettings::process`] reads it once).
    fn from_env() -> Self {
        Self::from_lookup(env, crate::libgomp::report::error)
    }

    /// The settings of this process: the environment read once, at the first call
    /// (`Plugin::read_settings`), and kept for the process. Thread-safe.
    #[inline]
    fn process() -> &'static Self {
        Self::cell().get_or_init(Self::from_env)
    }
}

/// A lookup over `pairs` (name, value), as [`read`] takes one (tests, fuzzing): the
/// value of the first pair of that name.
pub fn lookup<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |k| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    }
}

/// `n` bytes as the docs write a bound: in the largest binary unit that divides it
/// (`64 KiB`, `1 TiB`), else as a number.
fn bytes(n: usize) -> String {
    let units = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
    match units
        .iter()
        .find(|(shift, _)| n >= 1 << shift && n % (1 << shift) == 0)
    {
        Some((shift, unit)) => format!("{} {unit}", n >> shift),
        None => n.to_string(),
    }
}

/// The docs' table of `table` (Markdown; `what` heads the first column, "variable" or
/// "key"): a row per entry with its name, doc line, [`Value::accepted`] and default.
pub fn markdown_table<S>(what: &str, table: &[Entry<S>]) -> String {
    format!("| {what} | meaning | accepted | default |\n|---|---|---|---|\n")
        + &markdown_rows(table)
}

/// The rows of [`markdown_table`] alone, to follow a table of another entry type.
pub fn markdown_rows<S>(table: &[Entry<S>]) -> String {
    let mut s = String::new();
    for e in table {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            e.name,
            e.doc,
            e.value.accepted(),
            e.default
        ));
    }
    s
}

/// A Rust source file (as rustfmt writes it) of one constant, `pub const VARIABLES:
/// &[&str]`, the names of `table`, under the comment lines `header` (each without its
/// `//! `): the list the tests clear in their children's environment.
pub fn names_rs<S>(header: &[&str], table: &[Entry<S>]) -> String {
    let mut s = String::new();
    for h in header {
        s.push_str(&format!("//! {h}\n"));
    }
    s.push_str("\npub const VARIABLES: &[&str] = &[\n");
    for e in table {
        s.push_str(&format!("    \"{}\",\n", e.name));
    }
    s.push_str("];\n");
    s
}

/// Whether `table` is well formed: every entry has a doc line and a default, neither
/// (nor a parsed value's syntax) breaks a row of the docs' table (a `|` or a line
/// break), and no name stands twice (the backends' tests check their tables with it).
pub fn check_table<S>(table: &[Entry<S>]) -> Result<(), String> {
    for (i, e) in table.iter().enumerate() {
        if e.doc.is_empty() || e.default.is_empty() {
            return Err(format!("{}: no doc line or no default", e.name));
        }
        let cells = [e.doc, e.default, &e.value.accepted()].concat();
        if cells.contains(['|', '\n']) {
            return Err(format!("{}: a '|' or a line break in its row", e.name));
        }
        if table[..i].iter().any(|o| o.name == e.name) {
            return Err(format!("{} twice", e.name));
        }
    }
    Ok(())
}

/// Applies a comma-separated list of `key=value` items (the keys are the entries'
/// names) to `s`, in order; the first bad item ends it with an error naming the item
/// (`s` may then hold the items before it).
pub fn apply_list<S>(table: &[Entry<S>], list: &str, s: &mut S) -> Result<(), String> {
    for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("'{item}' is not key=value"))?;
        let k = k.trim();
        let e = table
            .iter()
            .find(|e| e.name == k)
            .ok_or_else(|| format!("unknown key '{k}'"))?;
        e.value
            .apply(s, v)
            .map_err(|why| format!("{k}: '{v}' is not valid ({why})"))?;
    }
    Ok(())
}

/// Parses a byte count: decimal or `0x` hex, optional `k`/`m`/`g` suffix (binary).
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mul) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1usize << 10),
        b'm' | b'M' => (&s[..s.len() - 1], 1 << 20),
        b'g' | b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let n = match num.strip_prefix("0x").or_else(|| num.strip_prefix("0X")) {
        Some(h) => usize::from_str_radix(h, 16).ok()?,
        None => num.parse::<usize>().ok()?,
    };
    n.checked_mul(mul)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8192"), Some(8192));
        assert_eq!(parse_size(" 64k"), Some(65536));
        assert_eq!(parse_size(" 2k "), Some(2048));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("0x100"), Some(256));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        for bad in [
            "",
            "k",
            "-1",
            "12q",
            "0x",
            "99999999999999999999",
            "99999999999g",
            "18446744073709551615g",
        ] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[derive(Debug, Default, PartialEq)]
    struct S {
        bytes: usize,
        count: usize,
        on: bool,
        file: Option<PathBuf>,
        word: usize,
        text: String,
        size: Option<u64>,
        pool: Option<u64>,
    }

    static TABLE: [Entry<S>; 8] = [
        Entry {
            name: "B",
            value: Value::Bytes {
                min: 16,
                max: 1 << 20,
                set: |s, n| s.bytes = n,
            },
            default: "0",
            doc: "bytes",
        },
        Entry {
            name: "N",
            value: Value::Number {
                min: 1,
                max: 8,
                set: |s, n| s.count = n,
            },
            default: "0",
            doc: "a count",
        },
        Entry {
            name: "F",
            value: Value::Flag(|s, b| s.on = b),
            default: "off",
            doc: "a switch",
        },
        Entry {
            name: "P",
            value: Value::Path(|s, p| s.file = Some(p)),
            default: "none",
            doc: "a file",
        },
        Entry {
            name: "W",
            value: Value::Word(&["ca", "cg"], |s, i| s.word = i + 1),
            default: "none",
            doc: "a word",
        },
        Entry {
            name: "T",
            value: Value::Parsed("`ok`", |s, v| match v {
                "ok" => {
                    s.text = v.into();
                    Ok(())
                }
                _ => Err("not ok".into()),
            }),
            default: "empty",
            doc: "its own syntax",
        },
        Entry {
            name: "Z",
            value: Value::Size {
                min: 16,
                max: 1 << 20,
                set: |s, n| s.size = Some(n),
            },
            default: "unset",
            doc: "a size whose 0 unsets",
        },
        Entry {
            name: "Y",
            value: Value::Size {
                min: 0,
                max: 64,
                set: |s, n| s.pool = Some(n),
            },
            default: "unset",
            doc: "a size whose 0 is a value",
        },
    ];

    fn read_env(pairs: &[(&str, &str)]) -> (S, Vec<String>) {
        let warned = RefCell::new(Vec::new());
        let mut s = S::default();
        read(&TABLE, &mut s, &lookup(pairs), &|w| {
            warned.borrow_mut().push(w.to_string())
        });
        (s, warned.into_inner())
    }

    #[test]
    fn every_kind_reads_its_syntax() {
        let (s, w) = read_env(&[]);
        assert_eq!(s, S::default());
        assert!(w.is_empty());
        let (s, w) = read_env(&[
            ("B", "1m"),
            ("N", " 8 "),
            ("F", "Yes"),
            ("P", "/t.json"),
            ("W", "cg"),
            ("T", "ok"),
            ("Z", "0x1k"),
            ("Y", "64"),
        ]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            s,
            S {
                bytes: 1 << 20,
                count: 8,
                on: true,
                file: Some("/t.json".into()),
                word: 2,
                text: "ok".into(),
                size: Some(1024),
                pool: Some(64),
            }
        );
        let (_, w) = read_env(&[("B", "16"), ("N", "1"), ("F", "off"), ("Z", "16")]);
        assert!(w.is_empty(), "{w:?}");
        // A size's 0: unset (silently) where the least value is above it, else a value.
        let (s, w) = read_env(&[("Z", "0"), ("Y", "0")]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!((s.size, s.pool), (None, Some(0)));
    }

    #[test]
    fn every_bad_value_is_reported_and_keeps_the_default() {
        for (name, bad) in [
            ("B", "15"),
            ("B", "1025k"),
            ("B", "lots"),
            ("N", "0"),
            ("N", "9"),
            ("N", "-1"),
            ("F", "maybe"),
            ("F", ""),
            ("P", "  "),
            ("W", "cs"),
            ("T", "no"),
            ("Z", "15"),
            ("Z", "1025k"),
            ("Z", "-1"),
            ("Y", "65"),
            ("Y", "lots"),
        ] {
            let (s, w) = read_env(&[(name, bad)]);
            assert_eq!(s, S::default(), "{name}={bad}");
            assert_eq!(w.len(), 1, "{name}={bad}: {w:?}");
            assert!(
                w[0].starts_with(&format!("Invalid value '{bad}' for {name} ("))
                    && w[0].contains("; using the default ("),
                "{w:?}"
            );
        }
        let (_, w) = read_env(&[("B", "1")]);
        assert_eq!(
            w,
            ["Invalid value '1' for B (expected 16..1048576 bytes); using the default (0)"]
        );
        let (_, w) = read_env(&[("Z", "8")]);
        assert_eq!(
            w,
            ["Invalid value '8' for Z (expected 16..1048576); using the default (unset)"]
        );
        let (_, w) = read_env(&[("T", "x")]);
        assert_eq!(
            w,
            ["Invalid value 'x' for T (not ok); using the default (empty)"]
        );
    }

    #[test]
    fn tables_are_checked() {
        assert_eq!(check_table(&TABLE), Ok(()));
        let dup = [
            Entry::<S> {
                name: "N",
                value: Value::Flag(|s, b| s.on = b),
                default: "off",
                doc: "a switch",
            },
            Entry::<S> {
                name: "N",
                value: Value::Flag(|s, b| s.on = b),
                default: "off",
                doc: "again",
            },
        ];
        assert_eq!(check_table(&dup), Err("N twice".into()));
        let undocumented = [Entry::<S> {
            name: "U",
            value: Value::Flag(|s, b| s.on = b),
            default: "off",
            doc: "",
        }];
        assert_eq!(
            check_table(&undocumented),
            Err("U: no doc line or no default".into())
        );
        let cell_breaking = [Entry::<S> {
            name: "C",
            value: Value::Parsed("`a|b`", |_, _| Ok(())),
            default: "a",
            doc: "a choice",
        }];
        assert_eq!(
            check_table(&cell_breaking),
            Err("C: a '|' or a line break in its row".into())
        );
    }

    #[test]
    fn docs_rows_say_bounds_words_and_syntax() {
        let accepted: Vec<String> = TABLE.iter().map(|e| e.value.accepted()).collect();
        assert_eq!(
            accepted,
            [
                "16..1 MiB",
                "1..8",
                "`1` or `0` (also `yes`/`no`, `on`/`off`, `true`/`false`)",
                "a file name",
                "`ca` or `cg`",
                "`ok`",
                "16..1 MiB (0: the default)",
                "0..64",
            ]
        );
        assert_eq!(bytes(0), "0");
        assert_eq!(bytes(1536), "1536");
        assert_eq!(bytes(3 << 10), "3 KiB");
        assert_eq!(bytes(1 << 40), "1 TiB");
        assert_eq!(bytes(i32::MAX as usize), "2147483647");
        let words = Value::<S>::Word(&["0", "1", "fresh"], |_, _| {});
        assert_eq!(words.accepted(), "`0`, `1` or `fresh`");
        let table = markdown_table("key", &TABLE[..2]);
        assert_eq!(
            table,
            "| key | meaning | accepted | default |\n|---|---|---|---|\n\
             | `B` | bytes | 16..1 MiB | 0 |\n| `N` | a count | 1..8 | 0 |\n"
        );
        assert_eq!(
            names_rs(&["Generated."], &TABLE[..2]),
            "//! Generated.\n\npub const VARIABLES: &[&str] = &[\n    \"B\",\n    \"N\",\n];\n"
        );
    }

    #[test]
    fn lists_of_keys() {
        let mut s = S::default();
        assert_eq!(apply_list(&TABLE, "", &mut s), Ok(()));
        assert_eq!(apply_list(&TABLE, " N=3, W=ca,,F=1 ", &mut s), Ok(()));
        assert_eq!((s.count, s.word, s.on), (3, 1, true));
        for (bad, why) in [
            ("N", "'N' is not key=value"),
            ("X=1", "unknown key 'X'"),
            ("N=9", "N: '9' is not valid (expected a number in 1..8)"),
            ("W=x", "W: 'x' is not valid (expected ca, cg)"),
        ] {
            assert_eq!(
                apply_list(&TABLE, bad, &mut S::default()),
                Err(why.into()),
                "{bad}"
            );
        }
    }
}
