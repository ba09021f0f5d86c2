//! The files produced from the entry-point table ([`super::table`]): each product's
//! export list (libgomp.map, libgomp-gcn.map), abi-tests/entry_points.inc (the C
//! prototypes abi-tests/prototypes.c compiles against the header),
//! abi-tests/entry_points.sh (the required lists abi-tests/check-exports.sh checks), the
//! two tables of
//! docs/plugin-abi.md (between marker comments), and the Rust declarations
//! include/generate.sh gives cbindgen ([`outputs`], through [`crate::generate`]).
//! `cargo run -p gomp-plugin --example edge_table -- write` rewrites the files; this
//! module's unit test fails when one differs from the table. Pure functions over constants; thread-safe.

use super::table::{EntryPoint, Product, Required, ENTRY_POINTS, PRODUCTS, RELEASES};
use crate::generate::Output;
use crate::libgomp::abi::{CAP_OPENACC_200, CAP_OPENMP_400};
use std::fmt::Write as _;

const GENERATED_BY: &str = "`cargo run -p gomp-plugin --example edge_table -- write`";

/// The table's rows that `product` exports, in the table's order.
pub fn exported_by(product: &str) -> impl Iterator<Item = &'static EntryPoint> + '_ {
    ENTRY_POINTS
        .iter()
        .filter(move |e| e.exported_by.contains(&product))
}

/// The product named `name`.
pub fn product(name: &str) -> Option<&'static Product> {
    PRODUCTS.iter().find(|p| p.name == name)
}

/// A product's export list, in version-script syntax.
pub fn map(p: &Product) -> String {
    let mut s = format!(
        "/* {map} - the symbols {so} exports: the GOMP_OFFLOAD_* entry points of\n   \
         src/edge/table.rs that name {name}{own}. Generated from that table by\n   \
         {GENERATED_BY}; do not edit.\n   \
         Written in linker version-script syntax but not passed to the linker: rustc exports\n   \
         exactly the crate's #[no_mangle] functions, and a second version script breaks GNU ld\n   \
         ({name}/build.rs). abi-tests/check-exports.sh (nvptx) and tests/host_fallback.sh (gcn)\n   \
         check the built library's dynamic symbols against this list. */\n{{\n  global:\n",
        map = p.map,
        so = p.soname,
        name = p.name,
        own = if p.own.is_empty() {
            String::new()
        } else {
            ", then the plugin's own C API\n   (not part of libgomp's contract)".to_string()
        },
    );
    for e in exported_by(p.name) {
        let _ = writeln!(s, "    {};", e.name);
    }
    for o in p.own {
        let _ = writeln!(s, "    {o};");
    }
    s.push_str("  local:\n    *;\n};\n");
    s
}

/// abi-tests/entry_points.inc: one `ENTRY_POINT(NAME, DECLARATION)` per entry point
/// the nvptx product exports (the header's), with its newest C prototype.
pub fn prototypes_inc() -> String {
    let mut s = format!(
        "/* entry_points.inc - the GOMP_OFFLOAD_* entry points of libgomp-plugin-nvptx.so.1\n   \
         with the C prototype of the newest libgomp (docs/plugin-abi.md section 2), one\n   \
         ENTRY_POINT (NAME, DECLARATION) each, for abi-tests/prototypes.c. Generated from\n   \
         src/edge/table.rs by {GENERATED_BY}; do not edit. */\n"
    );
    for e in exported_by("nvptx") {
        let _ = writeln!(
            s,
            "ENTRY_POINT ({}, extern {};)",
            e.name,
            e.declaration(e.newest_c())
        );
    }
    s
}

/// abi-tests/entry_points.sh, sourced by abi-tests/check-exports.sh: the lists of
/// required entry points it checks ours and the stock plugins against, and the exports
/// no libgomp up to the stock plugin's release (16) looks up.
pub fn required_sh() -> String {
    let names = |f: &dyn Fn(&EntryPoint) -> bool| -> String {
        ENTRY_POINTS
            .iter()
            .filter(|e| f(e))
            .map(|e| e.short())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let omp = |r: u32| names(&|e| e.required == Required::Cap(CAP_OPENMP_400) && e.looked_up_by(r));
    format!(
        "# entry_points.sh - lists for abi-tests/check-exports.sh (sourced). Generated from\n\
         # src/edge/table.rs by {GENERATED_BY}; do not edit.\n\
         # Required by libgomp 16 whatever the capabilities (spec section 1.2).\n\
         ALWAYS=\"{}\"\n\
         # Required with caps & OPENMP_400 by libgomp 14 and by libgomp 16.\n\
         OPENMP14=\"{}\"\n\
         OPENMP16=\"{}\"\n\
         # nvptx exports that no libgomp up to 16 looks up (the stock GCC 16 plugin lacks them).\n\
         NEWER_THAN_16=\"{}\"\n",
        names(&|e| e.required == Required::Always && e.looked_up_by(16)),
        omp(14),
        omp(16),
        names(&|e| e.exported_by.contains(&"nvptx") && e.from > 16),
    )
}

/// The Rust declarations of `product`'s entry points, for cbindgen (include/generate.sh):
/// each shell's doc and signature with an empty body.
pub fn rust_decls(p: &Product) -> String {
    let mut s = String::from(
        "// The exported entry points as src/edge/table.rs declares them (cbindgen input).\n\
         use std::ffi::{c_char, c_int, c_uint, c_void};\n",
    );
    for e in exported_by(p.name) {
        for d in e.doc {
            s.push_str(d);
            s.push('\n');
        }
        let _ = writeln!(
            s,
            "#[no_mangle]\npub extern \"C\" {} {{\n    loop {{}}\n}}",
            e.rust
        );
    }
    s
}

fn releases(e: &EntryPoint) -> String {
    match e.to {
        Some(t) => format!("{}–{t}", e.from),
        None => format!("{}+", e.from),
    }
}

fn required(e: &EntryPoint) -> String {
    match e.required {
        Required::Always => "req".into(),
        Required::Cap(CAP_OPENMP_400) => "req (OMP)".into(),
        Required::Cap(CAP_OPENACC_200) => "req (ACC)".into(),
        Required::Cap(c) => format!("req (caps & {c})"),
        Required::Optional => "opt".into(),
        Required::AllOrNone(g) => format!("all {g}_* or none"),
        Required::IfPresent(s) => format!("req if {}", s.trim_start_matches("GOMP_OFFLOAD_")),
    }
}

/// docs/plugin-abi.md §2: every entry point, its C prototype per release, the releases
/// that look it up and whether they require it, the products that export it, the
/// semantics.
pub fn docs_entry_points() -> String {
    let mut s = String::from(
        "| Entry point (C signature; from the libgomp release given) | Looked up | Exported by | Semantics / error convention |\n\
         |---|---|---|---|\n",
    );
    for e in ENTRY_POINTS {
        let many = e.c.len() + e.also.len() > 1;
        let sigs: Vec<String> =
            e.c.iter()
                .chain(e.also)
                .map(|(v, c)| {
                    let d = e.declaration(c).replacen("GOMP_OFFLOAD_", "", 1);
                    if many {
                        format!("{v}: `{d}`")
                    } else {
                        format!("`{d}`")
                    }
                })
                .collect();
        let _ = writeln!(
            s,
            "| {} | {} {}{} | {} | {} |",
            sigs.join("<br>"),
            releases(e),
            required(e),
            if e.indirect { ", IFUNC" } else { "" },
            e.exported_by.join(", "),
            e.note
        );
    }
    s
}

/// docs/plugin-abi.md §1.2: per release, which entry points it looks up, by when it
/// requires them ("same": as the release before; "+": those added).
pub fn docs_lookup() -> String {
    // The rows of the table: a title and which entry points belong to it.
    type Class = (String, fn(&EntryPoint) -> bool);
    let mut classes: Vec<Class> = vec![
        ("always".into(), |e| e.required == Required::Always),
        ("caps & OPENMP_400".into(), |e| {
            e.required == Required::Cap(CAP_OPENMP_400)
        }),
        (
            "caps & OPENACC_200 (all of these, else \"plugin missing OpenACC handler function\")"
                .into(),
            |e| e.required == Required::Cap(CAP_OPENACC_200),
        ),
        ("all of the group or none".into(), |e| {
            matches!(e.required, Required::AllOrNone(_))
        }),
    ];
    let mut present: Vec<&str> = ENTRY_POINTS
        .iter()
        .filter_map(|e| match e.required {
            Required::IfPresent(s) => Some(s.trim_start_matches("GOMP_OFFLOAD_")),
            _ => None,
        })
        .collect();
    present.dedup();
    if !present.is_empty() {
        classes.push((
            format!("required if {} is exported", present.join(" / ")),
            |e| matches!(e.required, Required::IfPresent(_)),
        ));
    }
    classes.push(("optional".into(), |e| e.required == Required::Optional));
    let mut s = String::from("| Required when |");
    for r in RELEASES {
        let _ = write!(s, " GCC {r} |");
    }
    s.push_str("\n|---|");
    for _ in RELEASES {
        s.push_str("---|");
    }
    s.push('\n');
    for (title, class) in &classes {
        let _ = write!(s, "| {title} |");
        let mut before: Vec<&str> = Vec::new();
        for &r in RELEASES {
            let now: Vec<&str> = ENTRY_POINTS
                .iter()
                .filter(|e| class(e) && e.looked_up_by(r))
                .map(|e| e.short())
                .collect();
            let cell = if now.is_empty() {
                "—".to_string()
            } else if now == before {
                "same".to_string()
            } else if !before.is_empty() && before.iter().all(|b| now.contains(b)) {
                let added: Vec<&str> = now
                    .iter()
                    .filter(|n| !before.contains(n))
                    .copied()
                    .collect();
                format!("+ {}", added.join(", "))
            } else {
                now.join(", ")
            };
            let _ = write!(s, " {cell} |");
            before = now;
        }
        s.push('\n');
    }
    s
}

/// Every generated file or part.
pub fn outputs() -> Vec<Output> {
    let mut v: Vec<Output> = PRODUCTS
        .iter()
        .map(|p| Output {
            path: p.map,
            markers: None,
            text: map(p),
        })
        .collect();
    v.push(Output {
        path: "abi-tests/entry_points.inc",
        markers: None,
        text: prototypes_inc(),
    });
    v.push(Output {
        path: "abi-tests/entry_points.sh",
        markers: None,
        text: required_sh(),
    });
    v.push(Output {
        path: "docs/plugin-abi.md",
        markers: Some((
            "<!-- BEGIN lookup table: generated from src/edge/table.rs, do not edit -->",
            "<!-- END lookup table -->",
        )),
        text: docs_lookup(),
    });
    v.push(Output {
        path: "docs/plugin-abi.md",
        markers: Some((
            "<!-- BEGIN entry-point table: generated from src/edge/table.rs, do not edit -->",
            "<!-- END entry-point table -->",
        )),
        text: docs_entry_points(),
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_files_agree_with_the_table() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        crate::generate::assert_current(root, &outputs(), GENERATED_BY);
    }

    #[test]
    fn names_are_unique_entry_points_of_known_products() {
        let mut seen = std::collections::HashSet::new();
        for e in ENTRY_POINTS {
            assert!(e.name.starts_with("GOMP_OFFLOAD_"), "{}", e.name);
            assert!(seen.insert(e.name), "{} twice", e.name);
            assert!(!e.exported_by.is_empty(), "{}", e.name);
            for p in e.exported_by {
                assert!(product(p).is_some(), "{}: unknown product {p}", e.name);
            }
            // Signatures oldest first, from the first release that looks it up.
            assert_eq!(e.c.first().map(|c| c.0), Some(e.from), "{}", e.name);
            assert!(e.c.windows(2).all(|w| w[0].0 < w[1].0), "{}", e.name);
            assert!(e.c.iter().all(|(_, c)| c.contains('(')), "{}", e.name);
            if let Required::IfPresent(s) = e.required {
                assert!(ENTRY_POINTS.iter().any(|o| o.name == s), "{}: {s}", e.name);
            }
        }
    }

    #[test]
    fn all_or_none_groups_are_exported_whole() {
        for e in ENTRY_POINTS {
            if let Required::AllOrNone(g) = e.required {
                for o in ENTRY_POINTS.iter().filter(|o| o.required == e.required) {
                    assert_eq!(
                        o.exported_by, e.exported_by,
                        "{g}: {} vs {}",
                        o.name, e.name
                    );
                }
            }
        }
    }

    /// A table of two made-up rows through the same macros: a symbol whose signature
    /// changes with a release and one that only some releases look up.
    mod made_up {
        crate::__gomp_entry_points_from! { [describe]
            /// Doc.
            GOMP_OFFLOAD_widened in [nvptx] looked_up(12..) required(openmp)
            c(12: "void (int)", 17: "void (int, void *session)")
            note("Widened in 17.")
            fn(ord: c_int, session: *mut c_void) { let _ = (ord, session); }

            /// Doc.
            GOMP_OFFLOAD_dropped in [gcn] looked_up(13..=16) required(if_present GOMP_OFFLOAD_widened)
            ifunc(dropped, true)
            c(13: "int (void)")
            note("Dropped after 16.")
            fn() -> c_int { 0 }
        }
    }

    #[test]
    fn rows_say_releases_signatures_and_requirements() {
        let [w, d] = made_up::ENTRY_POINTS else {
            panic!("two rows")
        };
        assert_eq!((w.from, w.to, d.from, d.to), (12, None, 13, Some(16)));
        assert!(w.looked_up_by(17) && !d.looked_up_by(17) && !d.looked_up_by(12));
        assert!(d.looked_up_by(13) && d.looked_up_by(16));
        assert_eq!(
            w.c,
            &[(12, "void (int)"), (17, "void (int, void *session)")]
        );
        assert_eq!(
            w.declaration(w.newest_c()),
            "void GOMP_OFFLOAD_widened (int, void *session)"
        );
        assert_eq!(w.required, Required::Cap(CAP_OPENMP_400));
        assert_eq!(d.required, Required::IfPresent("GOMP_OFFLOAD_widened"));
        assert!(d.indirect && !w.indirect);
        assert_eq!(
            (w.exported_by, d.exported_by),
            (&["nvptx"][..], &["gcn"][..])
        );
        assert!(w.rust.contains("session"), "{}", w.rust);
        assert_eq!(w.doc.len(), 1);
    }
}
