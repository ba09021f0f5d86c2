#!/bin/sh
# cpu-count.sh - the host CPU work per target region of the nvptx plugin, without a GPU:
# bench/region_cpu.c (built by the sid root's gcc-16) runs N regions of each shape with
# the sid root's libgomp 16, the given plugin and the stand-in libcuda of
# tests/fallback/stub_libcuda_2dev.c (its calls return at once), under valgrind's
# callgrind; bench/cg_split.py prints per region the instructions in all, the plugin's
# entry points, the stand-in driver's part of them, the plugin's own ("ours") and the
# driver calls made. Instruction counts are exact and repeatable (no timing): compare
# two plugins by running this once with each, with the same N (the stand-in's queued
# work that the loop's last regions leave runs after it, and call counts include the
# program's start-up and warm-up regions: per-region numbers settle as N grows).
# usage: bench/cpu-count.sh [PLUGIN]   (PLUGIN: a libgomp-plugin-nvptx.so.1, default
#        target/plugin/nvptx/libgomp-plugin-nvptx.so.1 from scripts/build)
# env: WORK (default ./.toolchain; the sid root must exist: scripts/toolchain/mkroot.sh
#      sid), N (regions per shape, default 2000), MODES (default "map tofrom from to"),
#      CPU_OUT (default $WORK/bench-cpu: where SHAPE.cg, callgrind's output per shape,
#      and counts.txt, the numbers per region as bench/cg_split.py writes them for
#      bench/cpu-gate.py, go; made if missing, its counts.txt replaced).
# Runs inside the sid root (the compile): with a shared WORK, under its lock
# (flock "$WORK/.lock" bench/cpu-count.sh). Needs cc, valgrind and python3 on the host.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "cpu-count.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -le 1 ] || { echo "cpu-count.sh: at most one argument (PLUGIN), got '$*' (see $0 --help)" >&2; exit 2; }
set -eu
case ${CPU_OUT:-/} in /*) ;; *) CPU_OUT=$PWD/$CPU_OUT ;; esac   # relative: to the caller's directory
cd "$(dirname "$0")/.."
export WORK=${WORK:-$PWD/.toolchain}
plugin=$(realpath "${1:-target/plugin/nvptx/libgomp-plugin-nvptx.so.1}")
N=${N:-2000} MODES=${MODES:-map tofrom from to}
case $N in ''|*[!0-9]*|0) echo "cpu-count.sh: N must be a positive number, got '$N'" >&2; exit 2 ;; esac
R=$WORK/sid
[ -x "$R/usr/bin/gcc-16" ] || { echo "cpu-count.sh: no sid root under $WORK (scripts/toolchain/mkroot.sh sid)" >&2; exit 1; }
[ -f "$plugin" ] || { echo "cpu-count.sh: no plugin $plugin (scripts/build)" >&2; exit 1; }
for t in cc valgrind callgrind_annotate python3; do
  command -v $t >/dev/null || { echo "cpu-count.sh: $t is not installed" >&2; exit 1; }
done
D=$WORK/bench-cpu
rm -rf "$D" && mkdir -p "$D/lib" "$D/plugin"
# The stand-in libcuda: its own entries plus "not supported" ones for the rest of the table.
sed -n 's/^ *cu[A-Za-z0-9_]* = "\(cu[A-Za-z0-9_]*\)".*/STUB(\1)/p' nvptx/src/cuda/table.rs > "$D/stub_names.h"
cc -O2 -shared -fPIC -pthread -I"$D" tests/fallback/stub_libcuda_2dev.c tests/fallback/stub_libcuda_rest.c -o "$D/libcuda.so.1"
cp bench/region_cpu.c /usr/include/valgrind/callgrind.h /usr/include/valgrind/valgrind.h "$D/"
scripts/toolchain/inroot.sh sid sh -c "cd /w/bench-cpu && gcc-16 -O2 -fopenmp -foffload=nvptx-none region_cpu.c -o region_cpu"
# libgomp 16 and the C libraries of the root, without the root's gcn plugin (its
# runtime fails hard without an AMD GPU).
for l in libgomp.so.1 libc.so.6 libm.so.6 libgcc_s.so.1; do ln -s "$R/usr/lib/x86_64-linux-gnu/$l" "$D/lib/$l"; done
# Without debug info callgrind names each function once (not once per inlined file).
objcopy --strip-debug "$plugin" "$D/plugin/libgomp-plugin-nvptx.so.1"
O=${CPU_OUT:-$D}
mkdir -p "$O" && O=$(cd "$O" && pwd) && : > "$O/counts.txt"
echo "plugin: $plugin ($N regions per shape)"
# The program runs with a fixed environment (the stand-in's cuLaunchKernel reads
# variables, and the environment's size moves the stack): the counts do not depend on
# the caller's shell. The plugin's, libgomp's and the stand-in's own variables
# (GOMP_*, OMP_*, CUDA_*, STUB_LIBCUDA_*) pass through. STUB_LIBCUDA_MMAP=1: the
# stand-in maps device and page-locked memory with mmap, as a real driver does, not
# from the malloc heap libgomp shares: otherwise where the plugin's page-locked blocks
# (ring, shadow, kept block) landed in that heap decided whether libgomp's per-region
# malloc of its 4 KiB copy buffer split the top chunk or searched the free lists
# (~225 instructions per map region, one way for one plugin, the other for another).
# STUB_LIBCUDA_EAGER=1: queued work runs as it is queued (a device never behind the
# host), so the counts are the host's work per region and not its waiting: otherwise a
# wait that polls (the flag wait polls a word 64 times before asking the stream, which
# then runs the work) counts polls that a real GPU's kernel time pays for, and a wait
# in cuStreamSynchronize counts none. STUB_LIBCUDA_EAGER=0 in the caller's environment
# counts the other way.
keep=$(env | grep -E '^(GOMP_|OMP_|CUDA_|STUB_LIBCUDA_)[A-Za-z0-9_]*=' | grep -v '^GOMP_PLUGIN_RS_LIBCUDA=' || true)
for m in $MODES; do
  (IFS='
'; set -f; exec env -i PATH=/usr/bin:/bin STUB_LIBCUDA_MMAP=1 STUB_LIBCUDA_EAGER=1 $keep CUDA_CACHE_PATH=$D/cache GOMP_PLUGIN_RS_LIBCUDA=$D/libcuda.so.1 valgrind -q --tool=callgrind \
    --collect-atstart=no --callgrind-out-file="$O/$m.cg" "$R/lib64/ld-linux-x86-64.so.2" \
    --library-path "$D/plugin:$D/lib" "$D/region_cpu" "$m" "$N") >/dev/null
  echo "== $m"
  python3 bench/cg_split.py "$O/$m.cg" "$N" "$m" "$O/counts.txt"
done
