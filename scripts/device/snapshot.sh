#!/bin/bash
# snapshot.sh - on a GPU machine: programs built by Debian's gcc-snapshot (GCC 17
# development branch) run with its own libgomp 17, first with its stock nvptx plugin,
# then with ours (GOMP_DEBUG=1: which libgomp loaded it, the session protocol), then
# each under OMP_TARGET_OFFLOAD=mandatory. A mandatory run of ours that fails with the
# very libgomp message the stock plugin's mandatory run gave is libgomp's own doing
# ("same as stock", not counted against ours).
#
# usage: scripts/device/snapshot.sh CARRY_DIR     (results in $OUT/snapshot.txt)
# CARRY_DIR holds snapshot/ packed by 'tests/snapshot_gcc.sh --pack CARRY_DIR/snapshot'
# (saxpy, t_omp, t_acc, nowait_task, session, dims17, lib/, stock/, VERSION) and
# plugin/libgomp-plugin-nvptx.so.1 (ours, scripts/build). env: N (saxpy's floats,
# default 2^24), CUDA_LIBDIR (default: from ldconfig).
# Exit status 1 when a run with our plugin is not right on the GPU ("BAD: ..." lines).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "snapshot.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 1 ] || { echo "snapshot.sh: expects 1 argument, got $# (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "$1" && pwd) || exit 2
D=$C/snapshot
[ -x "$D/saxpy" ] || { echo "snapshot.sh: no $D/saxpy (tests/snapshot_gcc.sh --pack $C/snapshot)" >&2; exit 2; }
O=${OUT:-/tmp/snapshot-out}; mkdir -p "$O"
CUDA_LIBDIR=${CUDA_LIBDIR:-$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")}
# What each program prints when it ran right on a device (saxpy also says where it ran).
want() {
  case $1 in
    saxpy) echo '^OK' ;;
    t_omp) echo '^sum=499500 initial_device=0 ' ;;
    t_acc) echo '^sum=499500 devtype=5 ' ;;
    nowait_task) echo '^nowait_task: 4 regions done$' ;;
    session) echo '^session: results right$' ;;
    dims17) echo '^dims17: [1-9][0-9]* device' ;;
  esac
}
bad=0
{
  nvidia-smi -L 2>&1 | head -2
  echo "driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1), libcuda in $CUDA_LIBDIR"
  cat "$D/VERSION"
  for p in saxpy t_omp t_acc nowait_task session dims17; do
    args=(); [ $p = saxpy ] && args=("${N:-16777216}")
    for pl in stock ours stock-mandatory ours-mandatory; do
      dir=$D/stock envs=()
      case $pl in
        ours) dir=$C/plugin envs=(GOMP_DEBUG=1) ;;
        stock-mandatory) envs=(OMP_TARGET_OFFLOAD=mandatory) ;;
        ours-mandatory) dir=$C/plugin envs=(OMP_TARGET_OFFLOAD=mandatory) ;;
      esac
      out=$(env "${envs[@]}" "$D/lib/ld-linux-x86-64.so.2" --library-path "$dir:$D/lib:$CUDA_LIBDIR" \
            "$D/$p" "${args[@]}" 2>&1); rc=$?
      echo "--- $p, $pl plugin: exit $rc"
      grep -E '^(saxpy|why|OK|FAILED|sum=|nowait_task:|session:|dims17:|dev [0-9]|libgomp:)' <<< "$out" | head -8
      grep -E 'gomp-plugin-rs [0-9.]+ loaded by|launches take a session|device 0: ' <<< "$out" | head -3
      # dims17: the device answers (and ran=1) must be the stock plugin's, line for line.
      [ $p = dims17 ] && [ $pl = stock ] && stock_dims=$(grep '^dev ' <<< "$out")
      [ $p = dims17 ] && [ $pl = ours ] && { [ "$(grep '^dev ' <<< "$out")" = "$stock_dims" ] &&
        ! grep '^dev ' <<< "$out" | grep -vq ' ran=1$' || { echo "BAD: dims17: ours answers differ from stock's"; bad=1; }; }
      [ $pl = stock-mandatory ] && stock_m="$rc $(grep '^libgomp:' <<< "$out" | head -1)"
      case $pl in
        ours*)
          ok=1
          [ "$rc" = 0 ] && grep -qE "$(want $p)" <<< "$out" || ok=0
          [ $p = saxpy ] && ! grep -q 'ran on the GPU' <<< "$out" && ok=0
          [ $pl = ours ] && ! grep -q 'loaded by libgomp 17 ' <<< "$out" && ok=0
          if [ $ok = 0 ] && [ $pl = ours-mandatory ] && [ "$rc" != 0 ] &&
             [ "$rc $(grep '^libgomp:' <<< "$out" | head -1)" = "$stock_m" ]; then
            echo "SAME AS STOCK: $p under mandatory fails in libgomp 17 itself with either plugin"; ok=1
          fi
          if [ $ok = 0 ]; then echo "BAD: $p with our plugin ($pl) did not run right on the GPU"; bad=1; fi ;;
      esac
    done
  done
  [ $bad = 0 ] && echo "snapshot: every program ran right on the GPU through our plugin under libgomp 17"
} 2>&1 | tee "$O/snapshot.txt"
! grep -q '^BAD' "$O/snapshot.txt"
