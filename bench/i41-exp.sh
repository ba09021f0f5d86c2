#!/bin/bash
# i41-exp.sh - issue 41 item 2 on the GPU machine: the reverse-offload round trip against
# its bare-protocol floors, and the first target region with a cold and a warm JIT cache,
# for stock (bundle-16's plugin), ours before the change and ours after, alternating.
# usage: bash CARRY/run.sh [REPS]     (CARRY: the folder holding this script as run.sh,
#        prepared by bench/i41-prepare.sh; REPS default 5)
# CARRY holds bundle-16.tar.xz, revoff_bench, offload_bench, cuda_floor, cutrace.so,
# before/ and ours/ (each a libgomp-plugin-nvptx.so.1 and its COMMIT).
# Each repetition: cuda_floor's revoff_* rows (FLOOR_ONLY=revoff; label floor);
# `revoff_bench 1000` with stock, before, ours and ours+gccspin (ours with
# GOMP_NVPTX_TUNE=revspin=0: GCC's device-side wait as it is); on a host with several
# NUMA nodes also floor and ours pinned (taskset) to the CPUs of GPU 0's node (@near)
# and of another node (@far); `offload_bench empty 10` with a fresh CUDA_CACHE_PATH
# (cold: driver JIT cache and ours' linked-image cache empty) and again with it filled
# (warm) for stock, before, ours, ours+poolwarm0 (GOMP_NVPTX_TUNE=poolwarm=0: the pool
# made by the first allocation that needs it, no warm-up thread) and ours+later
# (poolwarm=later: the warm-up thread started only after a kernel has completed).
# Then once: GOMP_DEBUG=1 `revoff_bench 1000 seq` per configuration of ours (the service
# thread's split of each request: host time from request seen to answered, device time
# from an answer to the next request) into revoff-split.txt, and traces of every driver
# call of the first region (bench/cutrace.c) for stock, before and ours, cold and warm,
# into traces/.
# Writes to $OUT (default /tmp/i41-out): raw.txt ("LABEL REP METRIC VALUE"), summary.txt
# (medians, also printed), revoff-split.txt, traces/, env.txt.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "i41-exp.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -le 1 ] || { echo "i41-exp.sh: at most one argument (REPS) (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "$(dirname "$0")" && pwd)
REPS=${1:-5}
O=${OUT:-/tmp/i41-out}; mkdir -p "$O/traces"
T=/tmp/i41-exp; mkdir -p "$T"
[ -d "$T/bundle-16" ] || tar -xJf "$C/bundle-16.tar.xz" -C "$T"
B=$T/bundle-16
CUDA_LIBDIR=${CUDA_LIBDIR:-$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")}
declare -A DIR=([stock]=$B/plugin [before]=$C/before [ours]=$C/ours)
RAW=$O/raw.txt; : > "$RAW"

# GPU 0's NUMA node and the CPUs of it and of another node (none: no pinned variants).
bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 2>/dev/null | head -1 | tr 'A-F' 'a-f')
bus=${bus#0000}    # nvidia-smi: 00000000:19:00.0; sysfs: 0000:19:00.0
node=-1 near= far=
if [ -n "$bus" ] && [ -r "/sys/bus/pci/devices/$bus/numa_node" ]; then
  node=$(cat "/sys/bus/pci/devices/$bus/numa_node")
  near=$(cat "/sys/bus/pci/devices/$bus/local_cpulist")
fi
if [ "$node" -ge 0 ] 2>/dev/null; then
  for d in /sys/devices/system/node/node[0-9]*; do
    [ "${d##*node}" = "$node" ] && continue
    far=$(cat "$d/cpulist"); [ -n "$far" ] && break
  done
fi
{ nvidia-smi -L 2>/dev/null; echo "GPU 0 bus $bus numa node $node near CPUs '$near' far CPUs '$far'"
  nproc; lscpu 2>/dev/null | grep -E 'Model name|NUMA'; for p in before ours; do echo "$p $(cat "$C/$p/COMMIT" 2>/dev/null)"; done
} > "$O/env.txt"
cat "$O/env.txt"

# LABEL REP CPUS ENV BINARY ARGS...: runs BINARY with plugin LABEL's plugin (the label's
# part before '+' or '@'), records its metric lines as "LABEL REP METRIC VALUE" (env
# KEEP: only metrics matching this ERE; SFX: appended to their names).
run() {
  local l=$1 rep=$2 cpus=$3 env=$4 bin=$5; shift 5
  local p=${l%%[+@]*} pre=()
  [ -n "$cpus" ] && pre=(taskset -c "$cpus")
  # shellcheck disable=SC2086
  env $env timeout 120 ${pre[@]+"${pre[@]}"} "$B/lib/ld-linux-x86-64.so.2" \
    --library-path "${DIR[$p]}:$B/lib:$CUDA_LIBDIR" "$C/$bin" "$@" > "$T/one.txt" 2>&1
  local rc=$?
  awk -v l="$l" -v r="$rep" -v keep="${KEEP:-.}" -v sfx="${SFX:-}" \
    '/^metric / && $2 ~ keep {print l, r, $2 sfx, $3} /^ERROR/{print l, r, "ERROR", $0}' "$T/one.txt" >> "$RAW"
  [ $rc = 0 ] || echo "$l $rep ERROR exit $rc: $(tail -c 300 "$T/one.txt" | tr '\n' ' ')" >> "$RAW"
}
floor() { # LABEL REP CPUS
  local pre=()
  [ -n "$3" ] && pre=(taskset -c "$3")
  FLOOR_ONLY=revoff timeout 120 ${pre[@]+"${pre[@]}"} "$C/cuda_floor" > "$T/one.txt" 2>&1 \
    || echo "$1 $2 ERROR cuda_floor exit $?: $(tail -c 300 "$T/one.txt" | tr '\n' ' ')" >> "$RAW"
  awk -v l="$1" -v r="$2" '/^metric /{print l, r, $2, $3}' "$T/one.txt" >> "$RAW"
}
for rep in $(seq 1 "$REPS"); do
  echo "== repetition $rep"
  floor floor "$rep" ""
  for c in stock before ours "ours+gccspin"; do
    env=; [ "$c" = ours+gccspin ] && env=GOMP_NVPTX_TUNE=revspin=0
    run "$c" "$rep" "" "$env" revoff_bench 1000
  done
  if [ -n "$near" ] && [ -n "$far" ]; then
    floor floor@near "$rep" "$near"; floor floor@far "$rep" "$far"
    run ours@near "$rep" "$near" "" revoff_bench 1000
    run ours@far "$rep" "$far" "" revoff_bench 1000
  fi
  for c in stock before ours "ours+poolwarm0" "ours+later"; do
    env=
    case $c in
      ours+poolwarm0) env=GOMP_NVPTX_TUNE=poolwarm=0 ;;
      ours+later) env=GOMP_NVPTX_TUNE=poolwarm=later ;;
    esac
    cache=$T/jit-cache; rm -rf "$cache"
    for phase in cold warm; do
      KEEP=^first_target_region$ SFX=_$phase run "$c" "$rep" "" "CUDA_CACHE_PATH=$cache $env" offload_bench empty 10
    done
  done
done
rm -rf "$T/jit-cache"

# The service thread's split of a request (GOMP_DEBUG's reverse-offload line).
: > "$O/revoff-split.txt"
for c in before ours "ours+gccspin"; do
  env=GOMP_DEBUG=1; [ "$c" = ours+gccspin ] && env="GOMP_DEBUG=1 GOMP_NVPTX_TUNE=revspin=0"
  p=${c%%+*}
  # shellcheck disable=SC2086
  env $env timeout 120 "$B/lib/ld-linux-x86-64.so.2" --library-path "${DIR[$p]}:$B/lib:$CUDA_LIBDIR" \
    "$C/revoff_bench" 1000 seq > "$T/one.txt" 2>&1
  { echo "== $c"; grep -E "reverse offload|GOMP_target_ext|revoff_round_trip" "$T/one.txt"; } >> "$O/revoff-split.txt"
done

# Traces of the first region (cold, then warm).
if [ -f "$C/cutrace.so" ]; then
  for c in stock before ours; do
    cache=$T/jit-cache; rm -rf "$cache"
    for phase in cold warm; do
      CUDA_CACHE_PATH=$cache LD_PRELOAD=$C/cutrace.so CUTRACE_OUT=$O/traces/$c-$phase.txt \
        timeout 120 "$B/lib/ld-linux-x86-64.so.2" --library-path "${DIR[$c]}:$B/lib:$CUDA_LIBDIR" \
        "$C/offload_bench" empty 10 > "$O/traces/$c-$phase.out" 2>&1
    done
  done
  rm -rf "$T/jit-cache"
fi

# Medians per label and metric.
awk '$3 != "ERROR" { k = $3 " " $1; v[k] = v[k] " " $4; n[k]++ }
     $3 == "ERROR" { print "ERROR:", $0 }
     END {
       for (k in v) {
         m = split(substr(v[k], 2), a, " ")
         for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
         med = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
         split(k, kk, " ")
         printf "%-34s %-16s %10.2f  n=%d  [%s]\n", kk[1], kk[2], med, m, substr(v[k], 2)
       }
     }' "$RAW" | sort > "$O/summary.txt"
cat "$O/summary.txt"
echo "== revoff split"; cat "$O/revoff-split.txt"
