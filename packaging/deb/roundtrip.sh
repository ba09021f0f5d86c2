#!/bin/bash
# roundtrip.sh - the Debian package's round trip in a Debian sid root (no GPU needed):
#   1. an offload program (examples/saxpy.c, built with the root's gcc-16 as
#      scripts/run-example does) run with GOMP_DEBUG=1 loads the stock plugin;
#   2. dpkg -i gomp-plugin-rs-nvptx and its -dbg package: the stock file is diverted, the
#      program now loads ours (GOMP_DEBUG lines "nvptx (gomp-plugin-rs): ..."), still
#      correct on the host; the licence texts are in /usr/share/doc, the debug info at
#      /usr/lib/debug/.build-id/ under the installed library's build ID;
#   3. dpkg -r: the diversion is gone, the stock file is back, the program loads stock,
#      the debug info is gone.
# Everything runs inside the root (its dpkg, ldconfig cache and libgomp 16), so it is
# what a Debian user gets. Without a GPU both plugins report 0 devices; what tells them
# apart is our plugin's own debug lines (the stock plugin prints none of them).
#
# usage: packaging/deb/roundtrip.sh [DEB DBG_DEB]   (default: build them with packaging/deb/build.sh)
#        packaging/deb/roundtrip.sh -h|--help
# env: WORK (default ./.toolchain; the sid root is made there if missing: root, debootstrap)
# Prints PASS/FAIL per step and "N passed, M failed"; exit status 0 when all passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; }
case ${1:-} in -h|--help) usage; exit 0 ;; -*) echo "roundtrip.sh: unknown option '$1' (see --help)" >&2; exit 2 ;; esac
[ $# = 0 ] || [ $# = 2 ] || { echo "roundtrip.sh: give both packages or none (see --help)" >&2; exit 2; }
for f in "$@"; do [ -f "$f" ] || { echo "roundtrip.sh: no file $f" >&2; exit 2; }; done
export WORK=${WORK:-$PWD/.toolchain}
set -e
[ -x "$WORK/sid/usr/bin/gcc-16" ] || scripts/toolchain/mkroot.sh sid
if [ $# = 2 ]; then deb=$1 dbg=$2
else built=$(packaging/deb/build.sh | tail -2); dbg=$(head -1 <<< "$built") deb=$(tail -1 <<< "$built"); fi
D=$WORK/deb-test; rm -rf "$D"; mkdir -p "$D"
cp "$deb" "$dbg" "$D/"; cp examples/saxpy.c "$D/"
debname=$(basename "$deb") dbgname=$(basename "$dbg")
IN() { scripts/toolchain/inroot.sh sid env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
IN sh -c "cd /w/deb-test && gcc-16 -O2 -fopenmp -foffload=nvptx-none -foffload-options=-lm saxpy.c -o saxpy -lm"
set +e
# A package left installed by an interrupted earlier run would make step 1 meaningless.
IN dpkg -s gomp-plugin-rs-nvptx >/dev/null 2>&1 && IN dpkg -r gomp-plugin-rs-nvptx-dbg gomp-plugin-rs-nvptx >/dev/null
MA=usr/lib/x86_64-linux-gnu LIB=/usr/lib/x86_64-linux-gnu/libgomp-plugin-nvptx.so.1
pass=0 fail=0
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@"; then echo "PASS: $name"; pass=$((pass + 1))
  else echo "FAIL: $name"; echo "$out" | sed 's/^/    /' | tail -25; fail=$((fail + 1)); fi
}
has() { grep -qE -- "$1" <<< "$out" || { echo "    missing: $1"; return 1; }; }
hasnt() { ! grep -qE -- "$1" <<< "$out" || { echo "    unexpected: $1"; return 1; }; }
# The root may hold Debian's gcn plugin and HSA runtime (tests/host_fallback.sh adds them);
# without an AMD GPU that plugin's failing hsa_init is fatal, so it gets no runtime here.
run() { out=$(IN env GOMP_DEBUG=1 HSA_RUNTIME_LIB=/nonexistent/libhsa-runtime64.so.1 /w/deb-test/saxpy 1000 2>&1); }
stock_loaded() {
  run && has "^offload plugin: $LIB\$" && hasnt 'gomp-plugin-rs' &&
  has 'ran on the host \(fallback\)' && has '^OK: 0 of 1000 elements wrong' &&
  [ -L "$WORK/sid$LIB" ] && [ ! -e "$WORK/sid$LIB.distrib" ]
}
DOC=/usr/share/doc/gomp-plugin-rs-nvptx
debug_file() {  # the installed library's debug file under /usr/lib/debug/.build-id/
  local id; id=$(readelf -n "$WORK/sid$LIB" | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p')
  [ -n "$id" ] && echo "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
}
install_() {
  out=$(IN dpkg -i "/w/deb-test/$debname" "/w/deb-test/$dbgname" 2>&1) &&
  out+=$'\n'$(IN dpkg-divert --list "$LIB" 2>&1) &&
  has "diversion of $LIB to $LIB.distrib by gomp-plugin-rs-nvptx" &&
  [ -f "$WORK/sid$LIB" ] && [ ! -L "$WORK/sid$LIB" ] && [ -L "$WORK/sid$LIB.distrib" ] &&
  [ -f "$WORK/sid/usr/include/gomp_plugin_nvptx.h" ] &&
  cmp -s LICENSE-MIT "$WORK/sid$DOC/LICENSE-MIT" && cmp -s LICENSE-APACHE "$WORK/sid$DOC/LICENSE-APACHE" &&
  grep -q '^ Permission is hereby granted, free of charge' "$WORK/sid$DOC/copyright" &&
  dbgfile=$(debug_file) && [ -f "$WORK/sid$dbgfile" ] &&
  out+=$'\n'$(readelf -S "$WORK/sid$dbgfile" 2>&1) && has '\.debug_line'
}
ours_loaded() {
  run && has "^offload plugin: $LIB\$" &&
  has '^nvptx \(gomp-plugin-rs\): gomp-plugin-rs [0-9.]+ loaded by libgomp 16' &&
  has 'ran on the host \(fallback\)' && has '^OK: 0 of 1000 elements wrong' &&
  out+=$'\n'$(readelf -d "$WORK/sid$LIB" 2>&1; readelf -S "$WORK/sid$LIB" 2>&1) &&
  has 'SONAME.*\[libgomp-plugin-nvptx.so.1\]' && has '\.gnu_debuglink' && hasnt '\.debug_info'
}
remove_() {
  out=$(IN dpkg -r gomp-plugin-rs-nvptx-dbg gomp-plugin-rs-nvptx 2>&1) &&
  out+=$'\n'"divert list: $(IN dpkg-divert --list "$LIB" 2>&1)" && has '^divert list: $' &&
  [ -L "$WORK/sid$LIB" ] && [ ! -e "$WORK/sid$LIB.distrib" ] &&
  [ ! -e "$WORK/sid/usr/include/gomp_plugin_nvptx.h" ] && [ ! -e "$WORK/sid$dbgfile" ] &&
  [ ! -e "$WORK/sid$DOC" ]
}
echo "packages: $deb $dbg"
check "before: the program loads the stock plugin (no gomp-plugin-rs lines)" stock_loaded
check "dpkg -i (plugin and -dbg): stock file diverted to .distrib, ours in its place, header, licence texts, debug info under its build ID" install_
check "installed: the program loads ours (GOMP_DEBUG: nvptx (gomp-plugin-rs) ... loaded by libgomp 16), stripped, debuglink" ours_loaded
echo "$out" | grep -m3 -E '^(offload plugin|nvptx \(gomp-plugin-rs\))' | sed 's/^/    /'
check "dpkg -r: diversion removed, stock symlink back, header, docs and debug info gone" remove_
check "after: the program loads the stock plugin again" stock_loaded
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
