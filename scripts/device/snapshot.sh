#!/bin/bash
# snapshot.sh - on a GPU machine: programs built by Debian's gcc-snapshot (GCC 17
# development branch) run with its own libgomp 17, first with its stock nvptx plugin,
# then with ours (GOMP_DEBUG=1: which libgomp loaded it, the session protocol), then
# ours under OMP_TARGET_OFFLOAD=mandatory.
#
# usage: scripts/device/snapshot.sh CARRY_DIR     (results in $OUT/snapshot.txt)
# CARRY_DIR holds snapshot/ packed by 'tests/snapshot_gcc.sh --pack CARRY_DIR/snapshot'
# (saxpy, t_omp, t_acc, nowait_task, session, lib/, stock/, VERSION) and
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
  esac
}
bad=0
{
  nvidia-smi -L 2>&1 | head -2
  echo "driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1), libcuda in $CUDA_LIBDIR"
  cat "$D/VERSION"
  for p in saxpy t_omp t_acc nowait_task session; do
    args=(); [ $p = saxpy ] && args=("${N:-16777216}")
    for pl in stock ours ours-mandatory; do
      dir=$D/stock envs=()
      case $pl in
        ours) dir=$C/plugin envs=(GOMP_DEBUG=1) ;;
        ours-mandatory) dir=$C/plugin envs=(OMP_TARGET_OFFLOAD=mandatory) ;;
      esac
      out=$(env "${envs[@]}" "$D/lib/ld-linux-x86-64.so.2" --library-path "$dir:$D/lib:$CUDA_LIBDIR" \
            "$D/$p" "${args[@]}" 2>&1); rc=$?
      echo "--- $p, $pl plugin: exit $rc"
      grep -E '^(saxpy|why|OK|FAILED|sum=|nowait_task:|session:|libgomp:)' <<< "$out" | head -8
      grep -E 'gomp-plugin-rs [0-9.]+ loaded by|launches take a session|device 0: ' <<< "$out" | head -3
      case $pl in
        ours*)
          ok=1
          [ "$rc" = 0 ] && grep -qE "$(want $p)" <<< "$out" || ok=0
          [ $p = saxpy ] && ! grep -q 'ran on the GPU' <<< "$out" && ok=0
          [ $pl = ours ] && ! grep -q 'loaded by libgomp 17 ' <<< "$out" && ok=0
          if [ $ok = 0 ]; then echo "BAD: $p with our plugin ($pl) did not run right on the GPU"; bad=1; fi ;;
      esac
    done
  done
  [ $bad = 0 ] && echo "snapshot: every program ran right on the GPU through our plugin under libgomp 17"
} 2>&1 | tee "$O/snapshot.txt"
! grep -q '^BAD' "$O/snapshot.txt"
