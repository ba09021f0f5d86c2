#!/bin/bash
# distro.sh - on a GPU machine: the example built by Debian 12's gcc-12 and Debian 13's
# gcc-14, each run with its own release's libgomp (12, 14), first with that release's
# stock plugin, then with ours; with GOMP_DEBUG=1 for ours (which libgomp loaded it),
# then once more under OMP_TARGET_OFFLOAD=mandatory.
#
# usage: scripts/device/distro.sh CARRY_DIR     (results in $OUT/distro.txt)
# CARRY_DIR holds distro/ROOT/ for each ROOT packed by 'tests/distro_gcc.sh --pack
# CARRY_DIR/distro' (saxpy, lib/, stock/) and plugin/libgomp-plugin-nvptx.so.1 (ours,
# scripts/build). env: N (floats, default 2^24), CUDA_LIBDIR (default: from ldconfig).
# Exit status 1 when a run with our plugin does not end with "OK" on the GPU.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "distro.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 1 ] || { echo "distro.sh: expects 1 argument, got $# (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "$1" && pwd) || exit 2
O=${OUT:-/tmp/distro-out}; mkdir -p "$O"
CUDA_LIBDIR=${CUDA_LIBDIR:-$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")}
bad=0
{
  nvidia-smi -L 2>&1 | head -1
  echo "driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null), libcuda in $CUDA_LIBDIR"
  for d in "$C"/distro/*/; do
    d=${d%/}; root=$(basename "$d")
    echo "=== $root"; cat "$d/VERSION"
    for p in stock ours; do
      dir=$d/stock; [ $p = ours ] && dir=$C/plugin
      for mode in plain mandatory; do
        envs=(); [ $p = ours ] && [ $mode = plain ] && envs+=(GOMP_DEBUG=1)
        [ $mode = mandatory ] && envs+=(OMP_TARGET_OFFLOAD=mandatory)
        out=$(env "${envs[@]}" "$d/lib/ld-linux-x86-64.so.2" --library-path "$dir:$d/lib:$CUDA_LIBDIR" \
              "$d/saxpy" "${N:-16777216}" 2>&1); rc=$?
        echo "--- $root, $p plugin, $mode: exit $rc"
        grep -E '^(offload plugin|saxpy|why|OK|FAILED|libgomp:)' <<< "$out"
        grep -E 'gomp-plugin-rs [0-9.]+ loaded by|device 0:.*(opened|GPU)' <<< "$out" | head -3
        if [ $p = ours ] && ! { [ "$rc" = 0 ] && grep -q '^OK' <<< "$out" && grep -q 'ran on the GPU' <<< "$out"; }; then
          echo "BAD: $root with our plugin ($mode) did not run right on the GPU"; bad=1
        fi
      done
    done
  done
  [ $bad = 0 ] && echo "distro: all runs with our plugin ran on the GPU and were right"
} 2>&1 | tee "$O/distro.txt"
! grep -q '^BAD' "$O/distro.txt"
