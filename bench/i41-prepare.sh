#!/bin/bash
# i41-prepare.sh - fill CARRY (default .carry-revoff, git-ignored through the repository's
# info/exclude) for bench/i41-exp.sh, which it copies there as run.sh: bundle-16.tar.xz,
# revoff_bench and offload_bench (gcc-16 of the sid root under WORK), cuda_floor and
# cutrace.so (the host's cc), ours/ (this checkout's plugin, scripts/build) and before/
# (the plugin file BEFORE, both stripped of debug information, each with a COMMIT file).
# usage: bench/i41-prepare.sh BEFORE [CARRY]
#   BEFORE  a libgomp-plugin-nvptx.so.1 of the commit to compare with (e.g. from
#           bench/build-before.sh, or main's target/plugin/nvptx/ of that commit)
# env: WORK (default ./.toolchain), BUNDLE (default /work/shared/bundles/bundle-16.tar.xz),
#      BEFORE_COMMIT (what before/COMMIT says; default "unknown").
# On the GPU machine: bash CARRY/run.sh (see bench/i41-exp.sh --help), carry [CARRY].
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "i41-prepare.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "i41-prepare.sh: expects BEFORE [CARRY] (see $0 --help)" >&2; exit 2; }
set -euo pipefail
before=$(realpath "$1")
cd "$(dirname "$0")/.."
C=${2:-.carry-revoff}
export WORK=${WORK:-$PWD/.toolchain}
[ -f "$before" ] || { echo "i41-prepare.sh: no plugin $before" >&2; exit 1; }
exclude=$(git rev-parse --git-common-dir)/info/exclude
mkdir -p "$(dirname "$exclude")" "$C/ours" "$C/before"
grep -qx "/${C#./}/" "$exclude" 2>/dev/null || echo "/${C#./}/" >> "$exclude"
cp "${BUNDLE:-/work/shared/bundles/bundle-16.tar.xz}" "$C/bundle-16.tar.xz"
for b in revoff_bench offload_bench; do
  if ! { [ -x "$WORK/bench/$b" ] && cmp -s "bench/$b.c" "$WORK/bench/$b.c" && cmp -s bench/median.h "$WORK/bench/median.h" \
         && cmp -s tests/device/gpu_probe.h "$WORK/bench/gpu_probe.h"; }; then
    mkdir -p "$WORK/bench"
    cp "bench/$b.c" bench/median.h tests/device/gpu_probe.h "$WORK/bench/"
    scripts/toolchain/inroot.sh sid sh -c "cd /w/bench && gcc-16 -O2 -fopenmp -foffload=nvptx-none $b.c -o $b"
  fi
  cp "$WORK/bench/$b" "$C/"
done
cc -O2 -Wall -Wextra bench/cuda_floor.c -o "$C/cuda_floor" -ldl -lpthread
cc -O2 -shared -fPIC -Wall -Wextra bench/cutrace.c -o "$C/cutrace.so" -ldl -lpthread
scripts/build >/dev/null
objcopy --strip-debug target/plugin/nvptx/libgomp-plugin-nvptx.so.1 "$C/ours/libgomp-plugin-nvptx.so.1"
{ git rev-parse HEAD | tr -d '\n'; git diff --quiet HEAD -- 2>/dev/null || printf -- -dirty; echo; } > "$C/ours/COMMIT"
objcopy --strip-debug "$before" "$C/before/libgomp-plugin-nvptx.so.1"
echo "${BEFORE_COMMIT:-unknown}" > "$C/before/COMMIT"
cp bench/i41-exp.sh "$C/run.sh"
du -sh "$C"
