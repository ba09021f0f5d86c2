#!/bin/sh
# generate.sh - regenerate include/gomp_plugin_nvptx.h with cbindgen from the very
# sources the nvptx plugin exports: the entry points of the table src/edge/table.rs that
# name nvptx (their docs and Rust signatures, printed by
# `cargo run -p gomp-plugin --example edge_table -- rust-decls nvptx`, which builds that
# small example), the plugin's own C API (nvptx/src/extensions.rs) and the libgomp types
# they use (src/libgomp/abi.rs, src/libgomp/interop.rs), gathered into a scratch crate
# (cbindgen reads source only, and the shells themselves are macro-expanded).
# usage: include/generate.sh [--check]     (--check: fail if the committed file differs)
# Needs cbindgen (cargo install cbindgen; configured by cbindgen.toml at the repo root),
# cargo, and gcc (to list the header's declarations).
#
# Before writing (or comparing) it refuses a header that declares anything but the
# functions libgomp.map exports (the GOMP_OFFLOAD_* entry points and the plugin's own
# gomp_nvptx_* API), all of them, plus the types those use:
# cbindgen also picks up `extern "C"` import blocks and unrelated #[repr(C)] items, and
# such a leak must be fixed in cbindgen.toml ([export] exclude), not committed.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in ""|--check) ;; *) echo "generate.sh: unknown argument '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -le 1 ] || { echo "generate.sh: too many arguments (see $0 --help)" >&2; exit 2; }
set -eu
cd "$(dirname "$0")/.."
out=include/gomp_plugin_nvptx.h
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The scratch crate: the files as they are, one module each, in the order of the header.
mkdir -p "$tmp/crate/src"
printf '[package]\nname = "gomp-plugin-nvptx-header"\nversion = "0.0.0"\nedition = "2021"\n[lib]\npath = "src/lib.rs"\n' > "$tmp/crate/Cargo.toml"
: > "$tmp/crate/src/lib.rs"
cargo run -q --profile test-fast -p gomp-plugin --example edge_table -- rust-decls nvptx > "$tmp/entry_points.rs"
for f in src/libgomp/abi.rs src/libgomp/interop.rs "$tmp/entry_points.rs" \
         nvptx/src/extensions.rs; do
  m=$(echo "${f#"$tmp"/}" | tr '/.' '__')
  cp "$f" "$tmp/crate/src/$m.rs"
  echo "mod $m;" >> "$tmp/crate/src/lib.rs"
done
cbindgen --config cbindgen.toml --crate gomp-plugin-nvptx-header --quiet --output "$tmp/h.h" "$tmp/crate"

# What the header may declare: exactly the libgomp.map exports.
sed -n 's/^[[:space:]]*\(\(GOMP_OFFLOAD\|gomp_nvptx\)_[A-Za-z0-9_]*\);.*/\1/p' libgomp.map | sort > "$tmp/want"
# What it does declare: every function prototype gcc sees coming from the header.
printf '#include "h.h"\n' > "$tmp/t.c"
gcc -std=c11 -fsyntax-only -aux-info "$tmp/aux" -I"$tmp" "$tmp/t.c"
# (the first "name (" after "extern": parameters may be function pointers)
grep '^/\* [^ ]*h\.h:' "$tmp/aux" | perl -ne 'print "$1\n" if /\*\/ extern .*?([A-Za-z_][A-Za-z0-9_]*) \(/' | sort > "$tmp/have"
bad=0
if ! cmp -s "$tmp/want" "$tmp/have"; then
  echo "generate.sh: header functions differ from libgomp.map (-map +header):" >&2
  diff "$tmp/want" "$tmp/have" | sed -n 's/^[<>]/  &/p' | sed 's/  </  -/; s/  >/  +/' >&2
  bad=1
fi
# Types: each struct/union/enum the header defines must appear in an entry point's
# prototype (the only legitimate reason for it to be there; gomp_nvptx_* use none).
for t in $(sed -n 's/^\(typedef \)\{0,1\}\(struct\|union\|enum\) \([A-Za-z_][A-Za-z0-9_]*\).*/\3/p' "$tmp/h.h" | sort -u); do
  if ! grep 'GOMP_OFFLOAD_' "$tmp/aux" | grep -q "[^A-Za-z0-9_]$t[^A-Za-z0-9_]"; then
    echo "generate.sh: type $t is not used by any GOMP_OFFLOAD_* prototype" >&2
    bad=1
  fi
done
# Macros: only the include guard.
if grep '^#define' "$tmp/h.h" | grep -qv '^#define GOMP_PLUGIN_NVPTX_H$'; then
  echo "generate.sh: unexpected macros:" >&2
  grep '^#define' "$tmp/h.h" | grep -v '^#define GOMP_PLUGIN_NVPTX_H$' | sed 's/^/  /' >&2
  bad=1
fi
if [ $bad -ne 0 ]; then
  echo "generate.sh: fix cbindgen.toml ([export] exclude / item_types) or libgomp.map" >&2
  exit 1
fi

if [ "${1:-}" = --check ]; then
  if diff -u "$out" "$tmp/h.h"; then
    echo "cbindgen: $out is up to date"
  else
    echo "cbindgen: $out is stale; run include/generate.sh" >&2
    exit 1
  fi
  exit 0
fi
cp "$tmp/h.h" "$out"
echo "cbindgen: wrote $out"
