#!/bin/bash
# suite-pair.sh - on the GPU machine: upstream-suite tests of bundle-16 run with the stock
# plugin and ours, alternating, one at a time and under load, with wall and CPU time per
# run; and the first target region of offload_bench with each plugin (caches warm).
# usage: bench/suite-pair.sh CARRY_DIR
# CARRY_DIR holds bundle-16.tar.xz and one folder per plugin of ours named in PLUGINS
# (CARRY_DIR/NAME/libgomp-plugin-nvptx.so.1; "stock" is the bundle's plugin); optional
# offload_bench (bench/build.sh) and cutrace.so (bench/cutrace.c) for the first-region step.
# env:
#   TESTS      file of test names (manifest.tsv's first column), one a line (required)
#   PLUGINS    default "stock ours"; VARIANTS "PLUGIN:VAR=VAL[,VAR=VAL];..." adds
#              configurations labelled PLUGIN+vN (N from 1)
#   SEQ_REPS   rounds of the one-at-a-time step (default 1): per test, every configuration
#              in turn (the order rotates each round)
#   LOAD_ROUNDS, LOAD_COPIES, JOBS  the loaded step (defaults 2, 3, 14): per round, per
#              configuration, every test LOAD_COPIES times, JOBS at once
#   LOAD_LABELS the configurations of the loaded step (default: all)
#   LOAD_TRACE=1 every loaded run under cutrace.so (traces in traces.tar.gz)
#   FIRST_REPS first-region runs per plugin, alternating (default 7; 0 skips it)
#   SEQ_LABELS the configurations of the one-at-a-time step (default: all)
#   TRACE_TESTS the first N tests (default 0) also run once per configuration under
#              cutrace.so (CARRY_DIR/cutrace.so), their traces in traces.tar.gz
#   STEPS      default "first trace seq load"; DEADLINE seconds (default 270): later
#              steps are skipped
# Every run gets a CUDA cache of its own, copied from one its configuration filled by
# running TEMPLATE_TEST (default libgomp.c/target-1.c) once: libgomp's own objects are in
# the driver's cache (and ours' linked-image store has that test's entry), the test's
# own code is compiled cold, as in the whole suite after its first tests.
# Writes to $OUT: runs.txt ("STEP ROUND LABEL TEST rc WALL_S USER_S SYS_S" per run),
# info.txt (ours' GOMP_NVPTX_INFO lines of the one-at-a-time step), first.txt
# (offload_bench's first_target_region per run and ours' info lines), traces.tar.gz.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "suite-pair.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 1 ] || { echo "suite-pair.sh: expects CARRY_DIR (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "$1" && pwd)
O=${OUT:-/tmp/suite-pair-out}; mkdir -p "$O"
T=/tmp/suite-pair; mkdir -p "$T"
[ -d "$T/bundle-16" ] || tar -xJf "$C/bundle-16.tar.xz" -C "$T"
B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
START=$(date +%s); DEADLINE=${DEADLINE:-270}
late() { [ $(( $(date +%s) - START )) -ge "$DEADLINE" ] && { echo "deadline: skipping $1" | tee -a "$O/runs.txt"; return 0; }; return 1; }
: "${TESTS:?TESTS: a file of test names}"
PLUGINS=${PLUGINS:-stock ours}
declare -A DIR ENVS
LABELS=()
for p in $PLUGINS; do
  LABELS+=("$p"); ENVS[$p]=""
  [ "$p" = stock ] && DIR[$p]=$B/plugin || DIR[$p]=$C/$p
done
n=0
if [ -n "${VARIANTS:-}" ]; then
  IFS=';' read -ra vs <<< "$VARIANTS"
  for v in "${vs[@]}"; do
    n=$((n + 1)); p=${v%%:*}; l="$p+v$n"
    LABELS+=("$l"); ENVS[$l]=${v#*:}
    [ "$p" = stock ] && DIR[$l]=$B/plugin || DIR[$l]=$C/$p
    echo "$l = $p with ${ENVS[$l]}" >> "$O/runs.txt"
  done
fi
# The runner: rusage of the child (python3 is on the GPU machine).
cat > "$T/rus.py" <<'EOF'
import os, resource, subprocess, sys, time
t = time.time()
rc = subprocess.call(sys.argv[1:], stdin=subprocess.DEVNULL)
w = time.time() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%d %.3f %.3f %.3f" % (rc, w, r.ru_utime, r.ru_stime))
EOF
line() { awk -F'\t' -v n="$1" '$1 == n { print; exit }' "$B/manifest.tsv"; }
# TEST CACHE OUTFILE: one run of TEST with the plugin in $RUN_DIR and the variables of
# $RUN_ENV (comma-separated); prints "rc wall user sys".
run_test() {
  local name=$1 cache=$2 out=$3 bin tmo envs
  IFS=$'\t' read -r _ bin _ _ tmo envs _ <<< "$(line "$name")"
  local envv=(LC_ALL=C CUDA_CACHE_PATH="$cache")
  if [ "$envs" != - ]; then IFS=';' read -ra kv <<< "$envs"; for e in "${kv[@]}"; do envv+=("$(printf '%b' "${e//%/\\x}")"); done; fi
  if [ -n "${RUN_ENV:-}" ]; then IFS=',' read -ra kv <<< "$RUN_ENV"; envv+=("${kv[@]}"); fi
  local d; d=$(mktemp -d "$T/work/XXXXXX")
  for f in "$B"/data/*; do [ -e "$f" ] && ln -s "$f" "$d/"; done
  local pre=(); [ -n "${RUN_PRELOAD:-}" ] && pre=(--preload "$RUN_PRELOAD")
  (cd "$d" && env "${envv[@]}" python3 "$T/rus.py" timeout -k 5 90 "$B/lib/ld-linux-x86-64.so.2" \
     ${pre[@]+"${pre[@]}"} --library-path "$RUN_DIR:$B/lib:$CUDA_LIBDIR" "$B/$bin" > "$out" 2>&1)
  tail -1 "$out"; rm -rf "$d"
}
# LABEL: sets RUN_DIR and RUN_ENV for it.
use() { RUN_DIR=${DIR[$1]}; RUN_ENV=${ENVS[$1]}; export RUN_DIR RUN_ENV; }
fresh() { local c; c=$(mktemp -d "$T/cache/$1-XXXXXX"); rmdir "$c"; cp -a "$T/tmpl/$1" "$c"; echo "$c"; }
export -f run_test line fresh; export B T CUDA_LIBDIR
# Templates: each configuration's cache after one run of TEMPLATE_TEST.
mkdir -p "$T/tmpl" "$T/work" "$T/logs" "$T/cache"
for l in "${LABELS[@]}"; do
  rm -rf "$T/tmpl/$l"; mkdir -p "$T/tmpl/$l"; chmod 700 "$T/tmpl/$l"
  use "$l"; run_test "${TEMPLATE_TEST:-libgomp.c/target-1.c}" "$T/tmpl/$l" "$T/logs/tmpl-$l.txt" > /dev/null
  echo "template $l: $(du -sk "$T/tmpl/$l" | cut -f1) KiB" >> "$O/runs.txt"
done
STEPS=${STEPS:-first trace seq load}
has() { [[ " $STEPS " == *" $1 "* ]]; }
mapfile -t NAMES < <(grep -v '^\s*$' "$TESTS")
if has first && [ -x "$C/offload_bench" ] && [ "${FIRST_REPS:-7}" -gt 0 ]; then
  for l in "${LABELS[@]}"; do
    fc=$T/first-$l; rm -rf "$fc"; mkdir -p "$fc"; chmod 700 "$fc"
    CUDA_CACHE_PATH=$fc "$B/lib/ld-linux-x86-64.so.2" --library-path "${DIR[$l]}:$B/lib:$CUDA_LIBDIR" \
      "$C/offload_bench" empty 10 > /dev/null 2>&1   # fills both caches
  done
  for r in $(seq "${FIRST_REPS:-7}"); do
    for l in "${LABELS[@]}"; do
      v=$(env CUDA_CACHE_PATH=$T/first-$l GOMP_NVPTX_INFO=1 ${ENVS[$l]//,/ } "$B/lib/ld-linux-x86-64.so.2" \
        --library-path "${DIR[$l]}:$B/lib:$CUDA_LIBDIR" "$C/offload_bench" empty 10 2>&1 |
        grep -E 'first_target_region|load_image' | tr '\n' ' ')
      echo "first $r $l $v" >> "$O/first.txt"
    done
  done
  if [ -f "$C/cutrace.so" ]; then
    for l in "${LABELS[@]}"; do
      env CUDA_CACHE_PATH=$T/first-$l CUTRACE_OUT=$T/logs/trace-$l.txt ${ENVS[$l]//,/ } \
        "$B/lib/ld-linux-x86-64.so.2" --preload "$C/cutrace.so" \
        --library-path "${DIR[$l]}:$B/lib:$CUDA_LIBDIR" "$C/offload_bench" empty 10 > "$T/logs/trace-$l.out" 2>&1
    done
  fi
fi
if has trace && [ -f "$C/cutrace.so" ] && [ "${TRACE_TESTS:-0}" -gt 0 ]; then
  for name in "${NAMES[@]:0:${TRACE_TESTS:-0}}"; do
    late "trace $name" && break
    for l in "${LABELS[@]}"; do
      c=$(fresh "$l"); use "$l"; tf=$T/logs/ttrace-$l-${name//\//__}
      RUN_ENV="${RUN_ENV:+$RUN_ENV,}CUTRACE_OUT=$tf.txt"
      echo "trace 1 $l $name $(RUN_PRELOAD=$C/cutrace.so run_test "$name" "$c" "$tf.out")" >> "$O/runs.txt"
      rm -rf "$c"
    done
  done
fi
if has seq && ! late seq; then
  SL=(${SEQ_LABELS:-${LABELS[@]}})
  for r in $(seq "${SEQ_REPS:-1}"); do
    for name in "${NAMES[@]}"; do
      late "seq $r $name" && break 2
      k=$(( r - 1 )); order=("${SL[@]:k % ${#SL[@]}}" "${SL[@]:0:k % ${#SL[@]}}")
      for l in "${order[@]}"; do
        c=$(fresh "$l"); use "$l"
        [ "$l" != stock ] && RUN_ENV="${RUN_ENV:+$RUN_ENV,}GOMP_NVPTX_INFO=1"
        res=$(run_test "$name" "$c" "$T/logs/seq-$l-${name//\//__}-$r.txt")
        echo "seq $r $l $name $res" >> "$O/runs.txt"
        [ "$l" != stock ] && grep -h 'nvptx info' "$T/logs/seq-$l-${name//\//__}-$r.txt" | sed "s|^|$l $name: |" >> "$O/info.txt"
        rm -rf "$c"
      done
    done
  done
fi
if has load; then
  LL=(${LOAD_LABELS:-${LABELS[@]}})
  export C LOAD_TRACE=${LOAD_TRACE:-0}
  for r in $(seq "${LOAD_ROUNDS:-2}"); do
    for l in "${LL[@]}"; do
      late "load $r $l" && break 2
      for k in $(seq "${LOAD_COPIES:-3}"); do printf '%s\n' "${NAMES[@]}"; done > "$T/batch"
      s0=$(date +%s.%N)
      export l r; use "$l"
      xargs -a "$T/batch" -P "${JOBS:-14}" -I{} bash -c \
        'c=$(fresh "$l"); o=$(mktemp "$T/work/out-XXXXXX")
         if [ "$LOAD_TRACE" = 1 ]; then tf=$(mktemp "$T/logs/ltrace-$l-r$r-${1//\//__}-XXXX"); RUN_ENV="${RUN_ENV:+$RUN_ENV,}CUTRACE_OUT=$tf"; export RUN_PRELOAD=$C/cutrace.so; fi
         echo "$1 $(run_test "$1" "$c" "$o")"; rm -rf "$c" "$o"' _ {} \
        > "$T/load-$l-$r.txt" 2>/dev/null
      s1=$(date +%s.%N)
      sed "s|^|load $r $l |" "$T/load-$l-$r.txt" >> "$O/runs.txt"
      echo "batch $r $l wall $(awk -v a="$s0" -v b="$s1" 'BEGIN{printf "%.1f", b-a}')" >> "$O/runs.txt"
    done
  done
fi
tar -czf "$O/traces.tar.gz" -C "$T" logs 2>/dev/null
echo "suite-pair: done in $(( $(date +%s) - START )) s"
