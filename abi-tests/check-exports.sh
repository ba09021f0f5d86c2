#!/bin/sh
# check-exports.sh - check the built plugin's ELF interface against libgomp.map (the export
# list generated from src/edge/table.rs; not a linker input), the ABI
# spec (docs/plugin-abi.md sections 1.1, 1.2) and GCC's stock nvptx plugins.
#
# usage: abi-tests/check-exports.sh [OURS [STOCK16 [STOCK14]]]
#   OURS     our plugin          (default: target/plugin/nvptx/libgomp-plugin-nvptx.so.1, built by
#                                 scripts/build; this script builds nothing)
#   STOCK16  GCC 16 stock plugin (default: bundle-16/plugin/libgomp-plugin-nvptx.so.1
#                                 extracted from $BUNDLES/bundle-16.tar.xz, else the
#                                 one in the sid toolchain root, made if missing)
#   STOCK14  GCC 14 stock plugin (default: the same from $BUNDLES/bundle-14.tar.xz, else
#                                 from the trixie root)
# environment: PLUGIN, STOCK16, STOCK14 (same as the arguments), BUNDLES (default:
#   $WORK/bundles, WORK defaulting to the checkout's .toolchain), MAP (default:
#   libgomp.map), CC (gcc).
# needs: readelf, strings, tar + xz, $CC; cbindgen for the header freshness check (skipped without).
#
# Checks (each prints PASS/FAIL and a reason; see abi-tests/README.md):
#   ours is an ELF shared object for the stock plugin's machine; SONAME is
#   libgomp-plugin-nvptx.so.1; libgomp.map names only GOMP_OFFLOAD_* symbols and the
#   plugin's own API (exactly $EXTENSIONS below); ours defines every one of them and no
#   other global symbol (no GOMP_PLUGIN_* definitions, no Rust symbols, nothing else);
#   every GOMP_OFFLOAD_* symbol ours exports is exported by the stock GCC 16 plugin; the
#   own API is prefixed gomp_nvptx_ and clashes with nothing the stock plugin exports;
#   the required entry points of spec section 1.2 (always: version ...
#   host2dev; OpenMP on libgomp 16: run, dev2dev, memset) are exported, and the stock
#   plugins export them too (cross-check of the lists below); GOMP_OFFLOAD_async_run is
#   an indirect function (its resolver hides it from libgomp 12); libgomp 17:
#   abi-tests/libgomp17-lookups.tsv is exactly what gcc-snapshot's libgomp.so.1 looks up
#   (env LIBGOMP17, default the snapshot root's, made on first use) and both products
#   (GCN_PLUGIN: the gcn one) export every required lookup and exactly the optional ones
#   the file marks theirs; no GOMP_OFFLOAD_* symbol
#   carries a symbol version; abi-tests/prototypes.c compiles against
#   include/gomp_plugin_nvptx.h; the header is what include/generate.sh produces.
# Informational: stock GCC 16 / GCC 14 exports we do not implement yet.
# Exit status: 0 if every check passed, 1 otherwise. Last line: "N passed, M failed".
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "check-exports.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -le 3 ] || { echo "check-exports.sh: too many arguments (see $0 --help)" >&2; exit 2; }
set -u
LC_ALL=C; export LC_ALL   # one collation for sort/comm
here=$PWD
abspath() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$here/$1" ;; esac; }
ours=${1:-${PLUGIN:-}}; [ -n "$ours" ] && ours=$(abspath "$ours")
stock16=${2:-${STOCK16:-}}; [ -n "$stock16" ] && stock16=$(abspath "$stock16")
stock14=${3:-${STOCK14:-}}; [ -n "$stock14" ] && stock14=$(abspath "$stock14")
map=${MAP:-}; [ -n "$map" ] && map=$(abspath "$map")
cd "$(dirname "$0")/.." || exit 2
repo=$PWD
: "${ours:=$repo/target/plugin/nvptx/libgomp-plugin-nvptx.so.1}"
: "${map:=$repo/libgomp.map}"
bundles=${BUNDLES:-${WORK:-$repo/.toolchain}/bundles}
CC=${CC:-gcc}
SONAME=libgomp-plugin-nvptx.so.1

# Spec section 1.2: looked up with DLSYM (a missing one makes libgomp skip the plugin):
# ALWAYS, OPENMP14 and OPENMP16 (caps & OPENMP_400, libgomp 14 / 16), and NEWER_THAN_16
# (entry points only a libgomp newer than the stock plugins looks up), from the
# entry-point table (src/edge/table.rs), generated into abi-tests/entry_points.sh.
. "$repo/abi-tests/entry_points.sh" || exit 2
# The plugin's own C API (src/edge/extensions.rs, README "Page-locking host memory"):
# exported on purpose beside the entry points, not part of libgomp's contract. Any
# other non-GOMP_OFFLOAD_* export is a leak.
EXTENSIONS="gomp_nvptx_host_lock gomp_nvptx_host_unlock"
EXT_PREFIX=gomp_nvptx_

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "PASS  $*"; }
fail() { nfail=$((nfail + 1)); echo "FAIL  $*"; }
info() { echo "info  $*"; }
detail() { sed 's/^/        /'; }    # indent a list under the line above
prefixed() { for n in $1; do echo "GOMP_OFFLOAD_$n"; done | sort -u; }

# Defined global (GLOBAL/WEAK/UNIQUE) dynamic symbols, as readelf prints them
# (binutils >= 2.35 appends @VERSION / @@VERSION to versioned ones). An indirect function
# (GOMP_OFFLOAD_async_run) in an object without the GNU OS ABI has the type
# "<OS specific>: 10", two words more than any other type: made one word first.
dynsyms_raw() {
  readelf --dyn-syms -W "$1" 2>/dev/null | awk '
    { sub(/<OS specific>: [0-9]+/, "OS_SPECIFIC") }
    $1 ~ /^[0-9]+:$/ && NF >= 8 && $7 != "UND" &&
    ($5 == "GLOBAL" || $5 == "WEAK" || $5 == "UNIQUE" || $5 == "GNU_UNIQUE") { print $8 }' | sort -u
}
dynsyms() { dynsyms_raw "$1" | sed 's/@.*//' | sort -u; }

# Stock plugin from a bundle: bundle-N/plugin/libgomp-plugin-nvptx.so.1.
stock_from_bundle() {  # $1 = 14 | 16
  tb="$bundles/bundle-$1.tar.xz"
  [ -r "$tb" ] || { echo "no $tb" >&2; return 1; }
  tar -xJf "$tb" -C "$tmp" "bundle-$1/plugin/$SONAME" || return 1
  printf '%s\n' "$tmp/bundle-$1/plugin/$SONAME"
}
# Without the bundles (none in $BUNDLES): the same Debian package's plugin
# from the toolchain root of that GCC (sid: 16, trixie: 14), made on first use as the
# integration tests make theirs (scripts/toolchain/mkroot.sh, network needed).
stock_from_root() {  # $1 = 14 | 16
  r=sid; [ "$1" = 14 ] && r=trixie
  work=${WORK:-$repo/.toolchain}
  f=$work/$r/usr/lib/x86_64-linux-gnu/$SONAME
  [ -e "$f" ] || WORK=$work scripts/toolchain/mkroot.sh $r >"$tmp/mkroot$1.log" 2>&1 ||
    { echo "no bundle, and the $r root could not be made (see scripts/toolchain/mkroot.sh)" >&2; return 1; }
  [ -e "$f" ] || { echo "no $f" >&2; return 1; }
  printf '%s\n' "$f"
}
for v in 16 14; do
  eval "s=\$stock$v"
  if [ -z "$s" ]; then
    s=$(stock_from_bundle $v 2>"$tmp/err$v") || s=$(stock_from_root $v 2>>"$tmp/err$v") || s=""
  fi
  if [ -n "$s" ] && readelf -h "$s" >/dev/null 2>&1; then
    dynsyms "$s" | grep '^GOMP_OFFLOAD_' > "$tmp/stock$v"
    info "stock GCC $v plugin: $s ($(wc -l < "$tmp/stock$v") GOMP_OFFLOAD_* exports)"
  else
    fail "stock GCC $v plugin not available: ${s:-$(cat "$tmp/err$v" 2>/dev/null)}"
    s=""
  fi
  eval "stock$v=\$s"
done
info "ours: $ours"

# --- ours: ELF type, machine, SONAME ------------------------------------------------------
machine() { readelf -h "$1" 2>/dev/null | sed -n 's/^ *Machine: *//p'; }
if ! readelf -h "$ours" >/dev/null 2>&1; then
  fail "ours is not a readable ELF file: $ours (run scripts/build)"
  echo "$npass passed, $nfail failed"; exit 1
fi
type=$(readelf -h "$ours" | sed -n 's/^ *Type: *\([A-Z]*\).*/\1/p')
want_machine=$(machine "${stock16:-${stock14:-$ours}}")
if [ "$type" = DYN ] && [ "$(machine "$ours")" = "$want_machine" ]; then
  pass "ours is an ELF shared object for $want_machine"
else
  fail "ours is type '$type', machine '$(machine "$ours")' (want DYN, '$want_machine')"
fi

soname=$(readelf -d "$ours" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [ "$soname" = "$SONAME" ]; then
  pass "SONAME is $SONAME"
else
  fail "SONAME is '${soname:-<none>}', want $SONAME"
fi

# --- libgomp.map ↔ dynamic symbol table ------------------------------------------------------
# The script as one line without comments, then the names between "global:" and "local:".
tr '\n' ' ' < "$map" | sed -E 's:/\*([^*]|\*+[^*/])*\*+/: :g' > "$tmp/map_text"
sed -E 's/.*global://; s/local:.*//' "$tmp/map_text" | tr ' \t;{}' '\n\n\n\n\n' | grep . | sort -u > "$tmp/map"
printf '%s\n' $EXTENSIONS | sort -u > "$tmp/ext"
grep -v '^GOMP_OFFLOAD_[A-Za-z0-9_]*$' "$tmp/map" > "$tmp/map_ext"
if [ -s "$tmp/map" ] && cmp -s "$tmp/map_ext" "$tmp/ext" \
   && grep -qE 'global:.*local:[[:space:]]*\*[[:space:]]*;[[:space:]]*\}' "$tmp/map_text"; then
  pass "libgomp.map exports $(grep -c '^GOMP_OFFLOAD_' "$tmp/map") GOMP_OFFLOAD_* names and the $(wc -l < "$tmp/ext") of the own API, and hides the rest (local: *)"
else
  fail "libgomp.map must list only GOMP_OFFLOAD_* names and exactly the own API ($EXTENSIONS) under global: and end in 'local: *;'"
  diff "$tmp/ext" "$tmp/map_ext" | sed -n 's/^> /unexpected: /p; s/^< /missing: /p' | detail
fi

dynsyms_raw "$ours" > "$tmp/ours_raw"
dynsyms "$ours" > "$tmp/ours"
comm -23 "$tmp/map" "$tmp/ours" > "$tmp/missing"
if [ ! -s "$tmp/missing" ]; then
  pass "ours defines every libgomp.map symbol"
else
  fail "ours lacks $(wc -l < "$tmp/missing") libgomp.map symbol(s):"; detail < "$tmp/missing"
fi

comm -13 "$tmp/map" "$tmp/ours" > "$tmp/extra"
grep '^GOMP_PLUGIN_' "$tmp/extra" > "$tmp/extra_plugin"
grep -E '^(_ZN|_R[A-Z0-9_]|__rust|rust_)' "$tmp/extra" > "$tmp/extra_rust"
grep -vE '^(GOMP_PLUGIN_|_ZN|_R[A-Z0-9_]|__rust|rust_)' "$tmp/extra" > "$tmp/extra_other"
if [ ! -s "$tmp/extra_plugin" ]; then
  pass "ours defines no GOMP_PLUGIN_* symbol (those are libgomp's)"
else
  fail "ours defines $(wc -l < "$tmp/extra_plugin") GOMP_PLUGIN_* symbol(s):"; detail < "$tmp/extra_plugin"
fi
if [ ! -s "$tmp/extra_rust" ]; then
  pass "ours exports no Rust symbols"
else
  fail "ours exports $(wc -l < "$tmp/extra_rust") Rust symbol(s):"; head -n 10 "$tmp/extra_rust" | detail
fi
if [ ! -s "$tmp/extra_other" ]; then
  pass "ours defines no other global symbol outside libgomp.map"
else
  fail "ours defines $(wc -l < "$tmp/extra_other") global symbol(s) not in libgomp.map:"
  head -n 10 "$tmp/extra_other" | detail
fi

# --- against the stock GCC 16 plugin -----------------------------------------------------------
if [ -n "$stock16" ]; then
  dynsyms "$stock16" > "$tmp/stock16_all"
  # Optional entry points libgomp looks up (spec section 1.2) that GCC's nvptx plugin
  # lacks but its GCN plugin has: async_run (nowait) and can_run.
  printf '%s\n' GOMP_OFFLOAD_async_run GOMP_OFFLOAD_can_run >> "$tmp/stock16_all"
  # And those no libgomp up to 16 looks up (the table's newer entry points).
  prefixed "$NEWER_THAN_16" >> "$tmp/stock16_all"
  # And what libgomp 17 looks up (abi-tests/libgomp17-lookups.tsv, checked below).
  grep -v '^#' abi-tests/libgomp17-lookups.tsv | cut -f1 | sed 's/^/GOMP_OFFLOAD_/' >> "$tmp/stock16_all"
  sort -u -o "$tmp/stock16_all" "$tmp/stock16_all"
  grep '^GOMP_OFFLOAD_' "$tmp/ours" | comm -23 - "$tmp/stock16_all" > "$tmp/invented"
  if [ ! -s "$tmp/invented" ]; then
    pass "every GOMP_OFFLOAD_* symbol ours exports is exported by the stock GCC 16 plugin (or is the spec's optional async_run/can_run, or one libgomp 17 looks up)"
  else
    fail "ours exports $(wc -l < "$tmp/invented") GOMP_OFFLOAD_* symbol(s) the stock GCC 16 plugin does not:"
    head -n 10 "$tmp/invented" | detail
  fi
fi

# --- the plugin's own API ---------------------------------------------------------------------
grep -v '^GOMP_OFFLOAD_' "$tmp/ours" | comm -12 - "$tmp/map" > "$tmp/ours_ext"
cat "$tmp/stock16_all" "$tmp/stock14" 2>/dev/null | sort -u | comm -12 - "$tmp/ext" > "$tmp/ext_clash"
if cmp -s "$tmp/ours_ext" "$tmp/ext" && ! grep -qv "^$EXT_PREFIX" "$tmp/ext" && [ ! -s "$tmp/ext_clash" ]; then
  pass "ours exports the own API exactly ($(xargs < "$tmp/ext")), prefixed $EXT_PREFIX, exported by no stock plugin"
else
  fail "own API exports differ from '$EXTENSIONS', lack the $EXT_PREFIX prefix or clash with the stock plugin:"
  { diff "$tmp/ext" "$tmp/ours_ext" | sed -n 's/^> /unexpected: /p; s/^< /missing: /p'
    grep -v "^$EXT_PREFIX" "$tmp/ext" | sed 's/^/unprefixed: /'
    sed 's/^/also stock: /' "$tmp/ext_clash"; } | detail
fi

# --- required entry points (spec section 1.2) --------------------------------------------------
required() {  # $1 = description, $2 = short names, $3 = symbol list file, $4 = whose
  prefixed "$2" | comm -23 - "$3" > "$tmp/req_missing"
  if [ ! -s "$tmp/req_missing" ]; then
    pass "$4 exports the $1 ($(echo $2 | wc -w))"
  else
    fail "$4 lacks $(wc -l < "$tmp/req_missing") of the $1:"; detail < "$tmp/req_missing"
  fi
}
required "always-required entry points" "$ALWAYS" "$tmp/ours" ours
required "OpenMP entry points libgomp 16 requires" "$OPENMP16" "$tmp/ours" ours
# Cross-check the lists above against what GCC's own plugins export.
[ -n "$stock16" ] && required "required entry points of libgomp 16" "$ALWAYS $OPENMP16" "$tmp/stock16" "stock GCC 16"
[ -n "$stock14" ] && required "required entry points of libgomp 14" "$ALWAYS $OPENMP14" "$tmp/stock14" "stock GCC 14"

# --- libgomp 17 (docs/plugin-abi.md section 7) -------------------------------------------------
# abi-tests/libgomp17-lookups.tsv: every name libgomp 17's loader looks up, whether it is
# required, and what each product exports. The file against the real loader (the
# GOMP_OFFLOAD_* strings of gcc-snapshot's libgomp.so.1, root made on first use), then
# each product against the file: a required lookup missing, or an optional one the file
# says we export but we do not (or the reverse), fails.
L17=$repo/abi-tests/libgomp17-lookups.tsv
libgomp17=${LIBGOMP17:-}
if [ -z "$libgomp17" ]; then
  work=${WORK:-$repo/.toolchain}
  libgomp17=$work/snapshot/usr/lib/gcc-snapshot/lib/libgomp.so.1
  [ -e "$libgomp17" ] || WORK=$work scripts/toolchain/mkroot.sh snapshot > "$tmp/mkroot17.log" 2>&1 ||
    fail "the snapshot root (gcc-snapshot, libgomp 17) could not be made (scripts/toolchain/mkroot.sh snapshot; log: $(tail -3 "$tmp/mkroot17.log"))"
fi
grep -v '^#' "$L17" | cut -f1 | sed 's/^/GOMP_OFFLOAD_/' | sort -u > "$tmp/l17"
if [ -r "$libgomp17" ]; then
  strings -a "$libgomp17" | grep -E '^GOMP_OFFLOAD_[a-z0-9_]+$' | sort -u > "$tmp/l17_real"
  if cmp -s "$tmp/l17" "$tmp/l17_real"; then
    pass "abi-tests/libgomp17-lookups.tsv lists exactly the $(wc -l < "$tmp/l17") entry points libgomp 17's loader looks up ($libgomp17)"
  else
    fail "abi-tests/libgomp17-lookups.tsv differs from what $libgomp17 looks up (< file only, > loader only):"
    diff "$tmp/l17" "$tmp/l17_real" | grep '^[<>]' | detail
  fi
else
  fail "no libgomp 17 to check abi-tests/libgomp17-lookups.tsv against: $libgomp17"
fi
lookups17() {  # $1 = product column (3 nvptx, 4 gcn), $2 = plugin file, $3 = product name
  [ -r "$2" ] || { fail "$3 plugin missing: $2 (run scripts/build)"; return; }
  dynsyms "$2" | grep '^GOMP_OFFLOAD_' > "$tmp/p17"
  awk -F'\t' '!/^#/ && $2 != "optional" && $2 != "cuda" { print "GOMP_OFFLOAD_" $1 }' "$L17" |
    sort -u | comm -23 - "$tmp/p17" > "$tmp/p17_req"
  awk -F'\t' -v c="$1" '!/^#/ && $c == "yes" { print "GOMP_OFFLOAD_" $1 }' "$L17" | sort -u > "$tmp/p17_yes"
  comm -12 "$tmp/l17" "$tmp/p17" > "$tmp/p17_has"
  if [ ! -s "$tmp/p17_req" ] && cmp -s "$tmp/p17_yes" "$tmp/p17_has"; then
    pass "$3 exports every entry point libgomp 17 requires and exactly the optional ones libgomp17-lookups.tsv says ($(wc -l < "$tmp/p17_has") of $(wc -l < "$tmp/l17"))"
  else
    fail "$3 against libgomp 17's lookups (required missing, then < file says yes but not exported, > exported but file says no):"
    { sed 's/^/required missing: /' "$tmp/p17_req"; diff "$tmp/p17_yes" "$tmp/p17_has" | grep '^[<>]'; } | detail
  fi
}
lookups17 3 "$ours" ours
lookups17 4 "${GCN_PLUGIN:-$repo/target/plugin/gcn/libgomp-plugin-gcn.so.1}" "ours (gcn)"

# --- async_run is an indirect function ------------------------------------------------------
# Its symbol's code is the resolver that answers NULL under libgomp 12 (docs/plugin-abi.md
# §4.1); were it a plain function, libgomp would call the resolver as async_run and no
# 'target nowait' region would ever run. readelf names the type IFUNC in an object with
# the GNU OS ABI and "<OS specific>: 10" (STT_GNU_IFUNC) otherwise.
if readelf --dyn-syms -W "$ours" | grep -Eq '(IFUNC|<OS specific>: 10) +GLOBAL +DEFAULT +[0-9]+ GOMP_OFFLOAD_async_run$'; then
  pass "GOMP_OFFLOAD_async_run is an indirect function (STT_GNU_IFUNC; not offered to libgomp 12)"
else
  fail "GOMP_OFFLOAD_async_run is not an indirect function:"
  readelf --dyn-syms -W "$ours" | grep 'GOMP_OFFLOAD_async_run' | detail
fi

# --- symbol versions -----------------------------------------------------------------------
grep '^GOMP_OFFLOAD_.*@' "$tmp/ours_raw" > "$tmp/versioned"
readelf -V -W "$ours" | awk '/^Version definition section/ { d = 1; next } /^Version / { d = 0 }
  d && /Name:/ && !/BASE/ { for (i = 1; i <= NF; i++) if ($i == "Name:") print "version node " $(i + 1) }' \
  >> "$tmp/versioned"
if [ ! -s "$tmp/versioned" ]; then
  pass "no GOMP_OFFLOAD_* symbol is versioned (unversioned like GCC's plugin)"
else
  fail "ours has symbol versions (GCC's plugin exports GOMP_OFFLOAD_* unversioned):"
  detail < "$tmp/versioned"
fi

# --- the C header ------------------------------------------------------------------------------
if "$CC" -std=c11 -Wall -Werror -Werror=incompatible-pointer-types -fsyntax-only \
     -Iinclude abi-tests/prototypes.c > "$tmp/cc.log" 2>&1; then
  pass "abi-tests/prototypes.c: include/gomp_plugin_nvptx.h agrees with the spec's prototypes"
else
  fail "abi-tests/prototypes.c does not compile against include/gomp_plugin_nvptx.h:"
  grep -E 'error|note: previous' "$tmp/cc.log" | head -n 12 | detail
fi
if command -v cbindgen >/dev/null 2>&1; then
  if include/generate.sh --check > "$tmp/gen.log" 2>&1; then
    pass "include/gomp_plugin_nvptx.h is up to date with the crate (include/generate.sh --check)"
  else
    fail "include/gomp_plugin_nvptx.h is stale or invalid (run include/generate.sh):"
    head -n 20 "$tmp/gen.log" | detail
  fi
else
  info "skipped: header freshness (cbindgen not installed)"
fi

# --- informational: what the stock plugins have that we do not ------------------------------------
for v in 16 14; do
  [ -s "$tmp/stock$v" ] || continue
  comm -23 "$tmp/stock$v" "$tmp/ours" > "$tmp/todo$v"
  info "stock GCC $v exports $(wc -l < "$tmp/todo$v") GOMP_OFFLOAD_* symbol(s) we do not implement yet:"
  [ -s "$tmp/todo$v" ] && sed 's/^GOMP_OFFLOAD_//' "$tmp/todo$v" | xargs | fold -s -w 88 | sed 's/ *$//' | detail
done

echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
