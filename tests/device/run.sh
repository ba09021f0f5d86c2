#!/bin/bash
# run.sh - on the GPU machine: run each test of CARRY_DIR/tests with the stock plugin and
# ours (bundle libraries), with the variables of CARRY_DIR/tests/TEST.env (KEY=VALUE
# lines) if there is one. A test passes when it exits 0, or, when CARRY_DIR/tests/TEST.expect
# exists, when it ends as that file says: a line "exit N" (the wanted exit status) and any
# number of lines "grep ERE" (each must match a line of the test's output).
# A test that cannot run on this machine (e.g. it needs 2 devices and sees 1) exits 77
# (TEST_SKIP of gpu_probe.h) after a line starting "SKIP": that run is SKIP, counted
# apart, never as passed (exit 77 without such a line is a failure).
# Prints "PLUGIN TEST: PASS|FAIL|SKIP|TIMEOUT (why; last output line)", then per plugin
# "PLUGIN: N passed, N failed, N skipped" and last "N passed, N failed, N skipped" (all
# plugins; TIMEOUT counts as failed); with OUT set, each output is also kept as
# devtests/PLUGIN-TEST.txt in $OUT/devtests.tgz (one file: the device tool brings back at
# most 8). Exits 0 whatever the verdicts (the stock plugin is
# expected to fail some tests): read the lines.
# env TEST_TIMEOUT: seconds per run (default 60); TESTS: ERE on test names (default all);
#     PLUGINS: which plugins (default "stock ours"; any other name is the plugin in
#     CARRY_DIR/NAME/, e.g. "before" for ours as it was before a change).
# env LIBGOMP=17: the tests of CARRY_DIR/tests17 (tests/device/build.sh with
#     GCC=snapshot) with libgomp 17, its loader and libraries, and its stock plugin from
#     CARRY_DIR/snapshot/ (tests/snapshot_gcc.sh --pack); default 16 (bundle-16).
# usage: tests/device/run.sh CARRY_DIR      (CARRY_DIR as for scripts/device/suite.sh)
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "run.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 1 ] || { echo "run.sh: expects 1 argument (CARRY_DIR), got $# (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "${1:?usage: run.sh CARRY_DIR}" && pwd)
T=/tmp/devtests; mkdir -p "$T"
case ${LIBGOMP:-16} in
  16) [ -d "$T/bundle-16" ] || tar -xJf "$C/bundle-16.tar.xz" -C "$T"
      B=$T/bundle-16 LIB=$T/bundle-16/lib STOCK=$T/bundle-16/plugin TD=$C/tests ;;
  17) LIB=$C/snapshot/lib STOCK=$C/snapshot/stock TD=$C/tests17 ;;
  *) echo "run.sh: LIBGOMP must be 16 or 17, not '$LIBGOMP'" >&2; exit 2 ;;
esac
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
declare -A DIR=([stock]=$STOCK [ours]=$C/plugin)
for p in ${PLUGINS:-stock ours}; do [ -n "${DIR[$p]:-}" ] || DIR[$p]=$C/$p; done
rm -rf "$T/devtests"; mkdir -p "$T/devtests"
declare -A NPASS NFAIL NSKIP
for p in ${PLUGINS:-stock ours}; do NPASS[$p]=0 NFAIL[$p]=0 NSKIP[$p]=0; done
verdict() {  # verdict RC OUTPUT_FILE EXPECT_FILE -> prints the verdict word and why
  local rc=$1 out=$2 exp=$3 want=0 why="" key arg
  [ "$rc" = 124 ] && { echo "TIMEOUT"; return; }
  [ "$rc" = 77 ] && grep -q '^SKIP' "$out" && { echo "SKIP"; return; }
  if [ -f "$exp" ]; then
    while read -r key arg; do
      case $key in
        exit) want=$arg ;;
        grep) grep -qE -- "$arg" "$out" || why="${why:+$why; }no line matches /$arg/" ;;
      esac
    done < "$exp"
  fi
  [ "$rc" = "$want" ] || why="exit $rc, wanted $want${why:+; $why}"
  if [ -z "$why" ]; then echo "PASS"; else echo "FAIL($why)"; fi
}
for t in "$TD"/*; do
  case $t in *.env|*.expect) continue ;; esac
  [[ $(basename "$t") =~ ${TESTS:-.} ]] || continue
  envs=()
  [ -f "$t.env" ] && mapfile -t envs < "$t.env"
  for p in ${PLUGINS:-stock ours}; do
    env "${envs[@]}" timeout "${TEST_TIMEOUT:-60}" "$LIB/ld-linux-x86-64.so.2" --library-path "${DIR[$p]}:$LIB:$CUDA_LIBDIR" \
      "$t" > "$T/out.txt" 2>&1
    rc=$?
    v=$(verdict "$rc" "$T/out.txt" "$t.expect")
    echo "$p $(basename "$t"): $v ($(tail -1 "$T/out.txt" | cut -c1-200))"
    case $v in PASS) NPASS[$p]=$((NPASS[$p] + 1)) ;; SKIP) NSKIP[$p]=$((NSKIP[$p] + 1)) ;;
               *) NFAIL[$p]=$((NFAIL[$p] + 1)) ;; esac
    head -c 200000 "$T/out.txt" > "$T/devtests/$p-$(basename "$t").txt"
  done
done
np=0 nf=0 ns=0
for p in ${PLUGINS:-stock ours}; do
  echo "$p: ${NPASS[$p]} passed, ${NFAIL[$p]} failed, ${NSKIP[$p]} skipped"
  np=$((np + NPASS[$p])) nf=$((nf + NFAIL[$p])) ns=$((ns + NSKIP[$p]))
done
echo "$np passed, $nf failed, $ns skipped"
[ -z "${OUT:-}" ] || { mkdir -p "$OUT" && tar -czf "$OUT/devtests.tgz" -C "$T" devtests; }
