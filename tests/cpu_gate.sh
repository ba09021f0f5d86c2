#!/bin/bash
# cpu_gate.sh - scripts/test's cpu-gate stage: the host CPU work per target region of the
# tree's nvptx plugin against the release baseline's, without a GPU.
# Builds the release baseline's plugin (bench/results/release.txt; bench/build-before.sh
# --release into $WORK/cpu-gate/COMMIT-RUSTC/release, kept there: a later run with the
# same release commit and the same rustc builds nothing, in this checkout or any other
# that shares WORK) and the tree's (scripts/build), counts both with
# bench/cpu-count.sh (callgrind, the stand-in libcuda, libgomp 16 of the sid root; N
# regions per shape, the same N for both, default 2000) and judges the counts with
# bench/cpu-gate.py: a shape whose host instructions per region (the stand-in's own
# left out) rise more than 1 % over the release's, or whose driver calls per region
# change, fails unless a line of
# bench/cpu-allow.txt allows it (with its reason).
# usage: tests/cpu_gate.sh            (no arguments)
# env: WORK (default ./.toolchain; the sid root, made there with
#      scripts/toolchain/mkroot.sh sid when missing: root and network), N (default 2000).
# The counts run with the defaults (the tree's with syncwait=run, below): GOMP_*, OMP_*,
# CUDA_* and STUB_LIBCUDA_* variables of the caller are cleared. Each count takes $WORK/.lock (flock), as cpu-count.sh's callers
# on a shared WORK do: do not run this under that lock.
# Output: target/cpu-gate/counts-{release,tree}/ (counts.txt, callgrind's SHAPE.cg per shape).
# Needs git, cargo, cc, objcopy, valgrind, python3, flock, root (the sid root's chroot).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "cpu_gate.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 0 ] || { echo "cpu_gate.sh: takes no arguments, got '$*' (see $0 --help)" >&2; exit 2; }
set -euo pipefail
cd "$(dirname "$0")/.."
export WORK=${WORK:-$PWD/.toolchain}
N=${N:-2000}
G=target/cpu-gate
while read -r v; do unset "$v"; done < <(compgen -e | grep -E '^(GOMP_|OMP_|CUDA_|STUB_LIBCUDA_)' || true)
rel=$(awk '$1 == "release" {print $2; exit}' bench/results/release.txt)
[ -n "$rel" ] || { echo "cpu_gate.sh: bench/results/release.txt names no release" >&2; exit 1; }
# The release's plugin is a function of its commit and the compiler: built once per
# (commit, rustc) into WORK, under a lock (checkouts sharing WORK may run this at once).
R=$WORK/cpu-gate/$rel-$(rustc -vV | md5sum | cut -c1-8)
mkdir -p "$WORK/cpu-gate" "$G"
(
  flock 9
  if [ -f "$R/release/libgomp-plugin-nvptx.so.1" ] && [ "$(cat "$R/release/COMMIT" 2>/dev/null)" = "$rel" ]; then
    echo "cpu-gate: release $rel: plugin built before ($R/release)"
  else
    echo "cpu-gate: release $rel: building its plugin (bench/build-before.sh --release $R)"
    rm -rf "$R.tmp"
    BEFORE_TARGET=$WORK/cpu-gate/build bench/build-before.sh --release "$R.tmp"
    rm -rf "$R"; mv "$R.tmp" "$R"
  fi
) 9> "$WORK/cpu-gate/.lock"
echo "cpu-gate: the tree's plugin (scripts/build)"
scripts/build
mkdir -p "$WORK"
[ -x "$WORK/sid/usr/bin/gcc-16" ] || scripts/toolchain/mkroot.sh sid
# The tree's plugin is counted with GOMP_NVPTX_TUNE=syncwait=run: by default (auto) it
# measures at first use which way of waiting is faster on the host and keeps it, and on
# the stand-in that choice is arbitrary; `run` (launches waited for by the ring's flag,
# copies by synchronizing: bench/cpu-allow.txt's calls) is the way with the more host
# work of the two a host may choose. The release's plugin knows no such key.
for who in release tree; do
  so=$R/release/libgomp-plugin-nvptx.so.1 tune=
  [ $who = release ] || { so=target/plugin/nvptx/libgomp-plugin-nvptx.so.1; tune=syncwait=run; }
  echo "cpu-gate: counting the $who's plugin ($N regions per shape)"
  flock "$WORK/.lock" env N="$N" CPU_OUT="$G/counts-$who" ${tune:+GOMP_NVPTX_TUNE=$tune} bench/cpu-count.sh "$so"
done
python3 bench/cpu-gate.py "$G/counts-release/counts.txt" "$G/counts-tree/counts.txt" --allow bench/cpu-allow.txt
