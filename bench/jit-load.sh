#!/bin/bash
# jit-load.sh - on the GPU machine: the JIT under load as the upstream suite makes it:
# the 41 tests of bundle-16's manifest lines 505-545 (libgomp.c-c++-common/depend-* to
# imperfect*: the six large for-*.c images, the host-heavy for-14/for-15 and their
# neighbours, as they run together in the whole suite) at JOBS=14, MAX_TIMEOUT=90,
# once per configuration, one after the other. Each configuration starts from a CUDA
# cache that holds libgomp's own objects only (a small test run first with each
# plugin), as the suite's cache does by the time it reaches these tests.
# usage: bench/jit-load.sh CARRY_DIR
# CARRY_DIR holds bundle-16.tar.xz (.toolchain/bundles) and ours/libgomp-plugin-nvptx.so.1
# (scripts/build, stripped).
# env: CONFIGS (default "ours:ours:;stock:stock:"): LABEL:PLUGIN:EXTRA_ENV items split
#   by ';', PLUGIN stock (the bundle's) or ours, EXTRA_ENV as run-tests.sh takes it
#   (e.g. "GOMP_NVPTX_TUNE=jitthreads=1"); LINES (manifest lines, default 505,545);
#   DEADLINE (seconds: a configuration starts only before it, default 185).
# Writes to $OUT: summary.txt (per configuration: the sum of the tests' times, the
# counts, the batch's wall and CPU (children's user and system seconds), each large
# test's line) and results-LABEL.txt.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "jit-load.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 1 ] || { echo "jit-load.sh: expects CARRY_DIR (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "$1" && pwd); O=${OUT:-/tmp/jit-load-out}; mkdir -p "$O"
W=/tmp/jit-load; rm -rf "$W"; mkdir -p "$W"
S0=$(date +%s); el() { echo $(( $(date +%s) - S0 )); }
tar -xJf "$C/bundle-16.tar.xz" -C "$W"; B=$W/bundle-16
IFS=, read -r first last <<< "${LINES:-505,545}"
awk -v a="$first" -v b="$last" 'NR >= a && NR <= b' "$B/manifest.tsv" > "$B/load.tsv"
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
T=$O/summary.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "$(nproc) CPUs"
  echo "$(wc -l < "$B/load.tsv") tests; extracted in $(el) s"; } > "$T" 2>&1
pdir() { [ "$1" = stock ] && echo "$B/plugin" || echo "$C/$1"; }
L=$B/lib/ld-linux-x86-64.so.2
mkdir -p "$W/base"
for p in stock ours; do
  CUDA_CACHE_PATH=$W/base "$L" --library-path "$(pdir $p):$B/lib:$CUDA_LIBDIR" \
    "$B/bin/libgomp.c-c++-common/target-1.c.exe" > /dev/null 2>&1 &
done; wait
IFS=';' read -ra CS <<< "${CONFIGS:-ours:ours:;stock:stock:}"
for c in "${CS[@]}"; do
  IFS=: read -r label p extra <<< "$c"
  [ "$(el)" -lt "${DEADLINE:-185}" ] || { echo "$label: skipped (deadline, $(el) s)" >> "$T"; continue; }
  rm -rf "$W/cc-$label"; cp -a "$W/base" "$W/cc-$label"
  s=$(date +%s.%N)
  ( CUDA_CACHE_PATH=$W/cc-$label CUDA_LIBDIR=$CUDA_LIBDIR JOBS=14 MAX_TIMEOUT=90 PLUGIN_DIR=$(pdir "$p") \
      EXTRA_ENV=$extra OUT=$W/res-$label "$B/run-tests.sh" "$B/load.tsv" > "$W/log-$label.txt" 2>&1
    times > "$W/times-$label.txt"; tail -1 "$W/times-$label.txt" > "$W/cpu-$label.txt" )
  wall=$(echo "$s $(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')
  cp "$W/res-$label/results.txt" "$O/results-$label.txt"
  awk -v l="$label" '{t=$NF; gsub(/[()s]/,"",t); s+=t} END {printf "%s: sum of test times %.1f s over %d tests\n", l, s, NR}' \
    "$W/res-$label/results.txt" >> "$T"
  echo "$label: $(tail -1 "$W/log-$label.txt"); wall $wall s; CPU (user system) $(cat "$W/cpu-$label.txt")" >> "$T"
  grep -E "for-(3|5|6|9|11|12|14|15)\.c" "$W/res-$label/results.txt" | sed "s/^/$label /" >> "$T"
done
echo "end $(el) s" >> "$T"
