#!/bin/bash
# suite.sh - run on the GPU machine (through the `device` tool): the example and the
# upstream libgomp suite with the stock plugin and ours, side by side, in one call.
#
# usage: scripts/device/suite.sh CARRY_DIR       (results under $OUT, at most 8 files)
# CARRY_DIR holds bundle-16.tar.xz (.toolchain/bundles), plugin/libgomp-plugin-nvptx.so.1
# (ours, from scripts/build) and saxpy (examples/saxpy.c built by scripts/run-example;
# a bundle's own example/saxpy, built by its compiler, is used instead where it has one).
# env: BUNDLE (default bundle-16: CARRY_DIR/$BUNDLE.tar.xz, e.g. bundle-14 for the
#      GCC 14 suite, bundle-s17 for GCC 16's tests built by gcc-snapshot with libgomp 17;
#      16, 14, 12 or s17 alone name bundle-N), JOBS (per plugin, default 8), MAX_TIMEOUT
#      (default 90), FILTER (ERE on test names), SUITE_TIMEOUT (seconds for each suite
#      run, default 520), PLUGINS (default "stock ours"), SEQUENTIAL=1 (one plugin
#      after the other, each with all JOBS, instead of both at once: fairer timings,
#      fewer load-induced timeouts),
#      SPLIT_GPUS (default 1 when the machine has two GPUs or more: each plugin's run
#      gets a GPU of its own through CUDA_VISIBLE_DEVICES, both at once; 0: share GPU 0).
# The summary (example.txt) gives each plugin's run-tests.sh totals and wall time.
# The whole GCC 16 suite with both plugins needs two calls (PLUGINS=stock, PLUGINS=ours;
# about 350 s each on the H100 at JOBS=14); the OpenMP directories with both plugins fit
# one call on nvidia-h200-x2 (JOBS=14 each): docs/testsuite.md.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "suite.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 1 ] || { echo "suite.sh: expects 1 argument(s), got $# (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "${1:?usage: suite.sh CARRY_DIR}" && pwd); O=${OUT:-/tmp/suite-out}; mkdir -p "$O"
T=/tmp/suite; rm -rf "$T"; mkdir -p "$T"
BUNDLE=${BUNDLE:-bundle-16}
[ -e "$C/$BUNDLE.tar.xz" ] || [ ! -e "$C/bundle-$BUNDLE.tar.xz" ] || BUNDLE=bundle-$BUNDLE
[ -e "$C/$BUNDLE.tar.xz" ] || { echo "suite.sh: no $C/$BUNDLE.tar.xz" >&2; exit 2; }
tar -xJf "$C/$BUNDLE.tar.xz" -C "$T"; B=$T/$BUNDLE
X=$C/saxpy; [ -x "$B/example/saxpy" ] && X=$B/example/saxpy
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
nvidia-smi -L 2>&1 | head -2
echo "libcuda in $CUDA_LIBDIR; driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null)"
declare -A DIR=([stock]=$B/plugin [ours]=$C/plugin)
{
  echo "== $BUNDLE: $(head -1 "$B/VERSION"); example $X"
  for p in ${PLUGINS:-stock ours}; do
    echo "== example with $p plugin"
    GOMP_DEBUG=1 "$B/lib/ld-linux-x86-64.so.2" --library-path "${DIR[$p]}:$B/lib:$CUDA_LIBDIR" \
      "$X" > "$T/debug-$p.txt" 2>&1; echo "exit $?"
    grep -E '^(offload plugin|saxpy|OK|FAILED)' "$T/debug-$p.txt"
  done
} 2>&1 | tee "$O/example.txt"
grep -m12 'gomp-plugin-rs' "$T/debug-ours.txt" >> "$O/example.txt"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
SPLIT=${SPLIT_GPUS:-$([ "$NGPU" -ge 2 ] && echo 1 || echo 0)}
i=0
for p in ${PLUGINS:-stock ours}; do
  vis=${CUDA_VISIBLE_DEVICES:-}
  [ "$SPLIT" = 1 ] && vis=$((i % NGPU)) && echo "== $p on GPU $vis" | tee -a "$O/example.txt"
  i=$((i + 1))
  ( [ -n "$vis" ] && export CUDA_VISIBLE_DEVICES=$vis
    s0=$(date +%s.%N)
    CUDA_LIBDIR=$CUDA_LIBDIR JOBS=${JOBS:-8} MAX_TIMEOUT=${MAX_TIMEOUT:-90} PLUGIN_DIR=${DIR[$p]} \
      OUT=$T/res-$p timeout "${SUITE_TIMEOUT:-520}" "$B/run-tests.sh" > "$T/log-$p.txt" 2>&1
    echo "$s0 $(date +%s.%N)" | awk '{printf "%.0f\n", $2 - $1}' > "$T/wall-$p" ) &
  [ "${SEQUENTIAL:-0}" = 1 ] && wait
done
wait
for p in ${PLUGINS:-stock ours}; do
  echo "== $p: $(tail -1 "$T/log-$p.txt") (wall $(cat "$T/wall-$p") s)"
  sort -k2 "$T/res-$p"/run/*/result > "$O/results-$p.txt" 2>/dev/null
  tar -czf "$O/failed-$p.tgz" -C "$T/res-$p" failed-outputs 2>/dev/null
done | tee -a "$O/example.txt"
