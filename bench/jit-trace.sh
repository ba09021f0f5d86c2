#!/bin/bash
# jit-trace.sh - on the GPU machine: the time before the first target region, stock
# plugin and ours side by side (alternating), with the CUDA JIT cache empty (cold) and
# filled, and for ours the linked-image cache empty (miss) and filled (hit); traces of
# every CUDA driver call and GOMP_OFFLOAD_* entry point (bench/cutrace.c, preloaded);
# ours' load_image time from GOMP_NVPTX_PROFILE; the wall time of a program with a
# large image.
# usage: bench/jit-trace.sh CARRY_DIR
# CARRY_DIR holds bundle-16.tar.xz, offload_bench (bench/build.sh), cutrace.so
# (cc -O2 -shared -fPIC bench/cutrace.c -o cutrace.so -ldl -lpthread) and one folder per
# plugin of ours named in PLUGINS (default "ours": CARRY_DIR/ours/libgomp-plugin-nvptx.so.1);
# "stock" is the bundle's plugin.
# Each repetition, per plugin: an empty CUDA cache (phase cold; it fills both caches),
# then the linked-image cache emptied (phase miss: the driver's cache filled), then both
# filled (phase warm); for stock, miss and warm are two runs with a filled driver cache.
# Variants run miss and warm only (their caches filled once, unrecorded).
# env: REPS (default 5), TRACE_REPS (traced miss and warm runs per plugin, default 1),
#   PROFILE_REPS (GOMP_NVPTX_PROFILE miss and hit runs per plugin of ours, default 5),
#   PLUGINS, VARIANTS ("PLUGIN:VAR=VAL[ VAR=VAL...];...": labelled PLUGIN+vN),
#   BIG (a program of the bundle with a large image, default
#   bin/libgomp.c-c++-common/for-3.c.exe; "" skips it) run BIG_REPS times (default 3)
#   per plugin after one cold run that fills a CUDA cache all plugins share, each run
#   limited to BIG_TIMEOUT seconds (default 90); DEADLINE (seconds: later steps are
#   skipped, default 200) and BIG_DEADLINE (the large image starts only before it,
#   default 120).
# Writes to $OUT: times.txt ("LABEL PHASE REP metric first_target_region_ms VALUE",
# "LABEL profile_PHASE REP load_image_ms VALUE module_ms VALUE HOW...",
# "LABEL big_PHASE REP wall_s VALUE"), traces.tar.gz (the traces, GOMP_DEBUG and
# GOMP_NVPTX_PROFILE logs), env.txt (driver, GPU). bench/jit-report.py makes the table.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "jit-trace.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 1 ] || { echo "jit-trace.sh: expects CARRY_DIR (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "$1" && pwd)
O=${OUT:-/tmp/jit-out}; mkdir -p "$O"
T=/tmp/jit-trace; mkdir -p "$T/logs"
[ -d "$T/bundle-16" ] || tar -xJf "$C/bundle-16.tar.xz" -C "$T"
B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
PLUGINS=${PLUGINS:-ours}; REPS=${REPS:-5}; TRACE_REPS=${TRACE_REPS:-1}; PROFILE_REPS=${PROFILE_REPS:-5}
BIG=${BIG-bin/libgomp.c-c++-common/for-3.c.exe}; BIG_REPS=${BIG_REPS:-3}
DEADLINE=${DEADLINE:-200}; BIG_DEADLINE=${BIG_DEADLINE:-120}
START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
late() { [ "$(elapsed)" -ge "${2:-$DEADLINE}" ] && { echo "deadline: skipping $1" | tee -a "$O/times.txt"; return 0; }; return 1; }
dir() { [ "$1" = stock ] && echo "$B/plugin" || echo "$C/$1"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; head -1 /proc/driver/nvidia/version
  echo "CUDA_LIBDIR=$CUDA_LIBDIR"; nproc; } > "$O/env.txt" 2>&1
# LABEL PLUGIN CACHE_DIR OUTFILE ENV... -- PROGRAM ARGS...: one run, stdout+stderr to
# OUTFILE. ENV "PRELOAD=LIB" preloads LIB into the program (ld.so --preload, so that the
# timeout process does not load it).
run() {
  local label=$1 p=$2 cache=$3 out=$4; shift 4
  local env=() pre=(); while [ "$1" != -- ]; do
    case $1 in PRELOAD=*) pre=(--preload "${1#PRELOAD=}") ;; *) env+=("$1") ;; esac; shift; done; shift
  local prog=$1; shift
  env CUDA_CACHE_PATH="$cache" ${env[@]+"${env[@]}"} timeout "${LIMIT:-120}" "$B/lib/ld-linux-x86-64.so.2" \
    ${pre[@]+"${pre[@]}"} --library-path "$(dir "$p"):$B/lib:$CUDA_LIBDIR" "$prog" "$@" > "$out" 2>&1
  local rc=$?; [ $rc = 0 ] || echo "$label ERROR $prog exit $rc: $(tail -c 300 "$out" | tr '\n' ' ')" >> "$O/times.txt"
}
first() { awk -v l="$1" -v ph="$2" -v r="$3" '/^metric first_target_region /{print l, ph, r, "metric first_target_region_ms", $3}' "$4" >> "$O/times.txt"; }
# LABEL PLUGIN CACHE REP ENV...: the three phases (cold only when COLD=1).
phases() {
  local label=$1 p=$2 cc=$3 rep=$4; shift 4
  if [ "${COLD:-1}" = 1 ]; then
    rm -rf "$cc"
    run "$label" "$p" "$cc" "$T/one.txt" "$@" -- "$C/offload_bench" empty 10
    first "$label" cold "$rep" "$T/one.txt"
  fi
  rm -rf "$cc/gomp-plugin-rs"
  for ph in miss warm; do
    run "$label" "$p" "$cc" "$T/one.txt" "$@" -- "$C/offload_bench" empty 10
    first "$label" "$ph" "$rep" "$T/one.txt"
  done
}
# 1. Traces of the miss and warm phases (after an untraced cold run).
for rep in $(seq 1 "$TRACE_REPS"); do
  for p in stock $PLUGINS; do
    late traces && break 2
    rm -rf "$T/cc-$p"
    run "$p" "$p" "$T/cc-$p" "$T/one.txt" -- "$C/offload_bench" empty 10
    rm -rf "$T/cc-$p/gomp-plugin-rs"
    for ph in miss warm; do
      run "$p" "$p" "$T/cc-$p" "$T/one.txt" PRELOAD="$C/cutrace.so" CUTRACE_OUT="$T/logs/trace-$p-$ph-$rep.txt" \
        -- "$C/offload_bench" empty 10
      first "$p" "traced_$ph" "$rep" "$T/one.txt"
    done
  done
done
# 2. The first region, alternating; then the variants.
IFS=';' read -ra VS <<< "${VARIANTS:-}"
for rep in $(seq 1 "$REPS"); do
  for p in stock $PLUGINS; do
    late timing && break 2
    phases "$p" "$p" "$T/cc-$p" "$rep"
  done
  i=0
  for v in ${VS[@]+"${VS[@]}"}; do
    i=$((i + 1)); p=${v%%:*}; read -ra e <<< "${v#*:}"
    late variants && break 2
    [ -d "$T/cc-v$i" ] || run "$p+v$i" "$p" "$T/cc-v$i" "$T/one.txt" "${e[@]}" -- "$C/offload_bench" empty 10
    COLD=0 phases "$p+v$i" "$p" "$T/cc-v$i" "$rep" "${e[@]}"
  done
done
i=0; for v in ${VS[@]+"${VS[@]}"}; do i=$((i + 1)); echo "legend $v = ${v%%:*}+v$i" >> "$O/times.txt"; done
# 3. Ours' load_image (GOMP_NVPTX_PROFILE's JIT line), linked-image cache empty and filled.
for rep in $(seq 1 "$PROFILE_REPS"); do
  for p in $PLUGINS; do
    late profiles && break 2
    rm -rf "$T/cc-$p/gomp-plugin-rs"
    for ph in miss hit; do
      f=$T/logs/profile-$p-$ph-$rep.txt
      run "$p" "$p" "$T/cc-$p" "$f" GOMP_NVPTX_PROFILE=1 GOMP_NVPTX_INFO=1 -- "$C/offload_bench" empty 10
      sed -n 's/.*JIT link: image [^:]*: .*kernel(s), \([0-9.]*\) ms (\(.*\)); load_image \([0-9.]*\) ms/\3 \1 \2/p' "$f" |
        awk -v l="$p" -v ph="$ph" -v r="$rep" '{how=$3; for (i=4;i<=NF;i++) how=how " " $i; print l, "profile_" ph, r, "load_image_ms", $1, "module_ms", $2, how}' >> "$O/times.txt"
    done
  done
done
# 4. GOMP_DEBUG=1 logs, filled caches.
for p in stock $PLUGINS; do
  late logs && break
  run "$p" "$p" "$T/cc-$p" "$T/logs/debug-$p.txt" GOMP_DEBUG=1 -- "$C/offload_bench" empty 10
done
tar -czf "$O/traces.tar.gz" -C "$T" logs
# 5. A large image: one cold run fills a shared CUDA cache; then alternating runs: with
# a linked-image cache, the first is big_miss and the later ones big_hit (plugins of
# ours share that cache), as the plugin's GOMP_NVPTX_INFO line says; without, big_warm.
if [ -n "$BIG" ] && ! late big "$BIG_DEADLINE"; then
  export LIMIT=${BIG_TIMEOUT:-90}
  wall() { awk -v l="$1" -v ph="$2" -v r="$3" -v s0="$4" -v s1="$(date +%s.%N)" 'END{printf "%s big_%s %s wall_s %.3f\n", l, ph, r, s1 - s0}' /dev/null >> "$O/times.txt"; }
  rm -rf "$T/ccb"
  s0=$(date +%s.%N); run stock stock "$T/ccb" "$T/logs/big-stock-cold.txt" -- "$B/$BIG"; wall stock cold 1 "$s0"
  for rep in $(seq 1 "$BIG_REPS"); do
    for p in stock $PLUGINS; do
      late "big rep $rep" && break 2
      f=$T/logs/big-$p-$rep.txt
      s0=$(date +%s.%N)
      run "$p" "$p" "$T/ccb" "$f" GOMP_NVPTX_INFO=1 -- "$B/$BIG"
      # The phase as the plugin's info line says it (no line: no linked-image cache).
      ph=warm; grep -q "linked-image cache hit" "$f" && ph=hit; grep -q "linked-image cache miss" "$f" && ph=miss
      wall "$p" "$ph" "$rep" "$s0"
      grep -h "nvptx info: device 0: image" "$f" | sed "s/^/$p big_$ph $rep info /" >> "$O/times.txt"
    done
  done
  unset LIMIT
  tar -czf "$O/traces.tar.gz" -C "$T" logs
fi
echo "jit-trace: $(grep -c metric "$O/times.txt") first-region times, $(grep -c ERROR "$O/times.txt") errors, $(elapsed) s"
