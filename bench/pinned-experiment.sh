#!/bin/bash
# pinned-experiment.sh - the page-locked (pinned) memory rows of offload_bench on a GPU
# machine: stock, `main` (our plugin before the change) and `ours` (after) with knob
# variants of ours, alternating, REPS repetitions (default 5) of
#   offload_bench "pinned_alloc_mt 8 1000 4096"   (8 threads alloc/free 4 KiB)
#   offload_bench "pinned_alloc 1000 4096"        (first and steady alloc/free)
#   offload_bench "bw 67108864"                   (64 MiB copies, pageable and pinned)
# then, with GOMP_DEBUG=1, where ours put its page-locked memory (NUMA node of each
# chunk), and, on a host of several NUMA nodes, the 64 MiB copies with the process
# held on the CPUs of a node that is not the GPU's (taskset): the placement a migrated
# thread gives, for stock, main, ours and ours with pinnednuma=0.
# usage: bash bench/pinned-experiment.sh [CARRY_DIR [REPS]]   (CARRY_DIR default .carry-pinned)
# CARRY_DIR holds bundle-16.tar.xz (libgomp 16, the stock plugin), offload_bench, and
# main/ and ours/ with libgomp-plugin-nvptx.so.1 (and COMMIT), and optionally before/ (an
# earlier commit's plugin, bench/build-before.sh COMMIT CARRY_DIR). Configurations:
#   stock, before (if there), main, ours, ours-1shard (GOMP_NVPTX_TUNE=pinnedshards=1),
#   ours-4m (pinnedchunk=4m: every pool chunk 4 MiB), ours-nonuma (pinnednuma=0)
# Writes $OUT (default /tmp/pinned-out): raw.txt ("CONFIG REP metric NAME VALUE UNIT" and
# ERROR lines), summary.txt (median, min and max per configuration and metric),
# topology.txt, numa-debug.txt.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "pinned-experiment.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -le 2 ] || { echo "pinned-experiment.sh: too many arguments (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "${1:-.carry-pinned}" && pwd) || exit 2
REPS=${2:-5}
O=${OUT:-/tmp/pinned-out}; mkdir -p "$O"
T=${BENCH_TMP:-/tmp/pinned-bench}; mkdir -p "$T"
[ -d "$T/bundle-16" ] || tar -xJf "$C/bundle-16.tar.xz" -C "$T" || exit 1
B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
declare -A DIR=([stock]=$B/plugin [main]=$C/main [ours]=$C/ours)
declare -A PLUG=([stock]=stock [main]=main [ours]=ours [ours-1shard]=ours [ours-4m]=ours [ours-nonuma]=ours)
declare -A TUNE=([ours-1shard]=pinnedshards=1 [ours-4m]=pinnedchunk=4m [ours-nonuma]=pinnednuma=0)
# CARRY_DIR/before/ (bench/build-before.sh COMMIT CARRY_DIR), when there: one more column.
if [ -f "$C/before/libgomp-plugin-nvptx.so.1" ]; then DIR[before]=$C/before PLUG[before]=before; fi
CONFIGS=${CONFIGS:-stock ${PLUG[before]:+before} main ours ours-1shard ours-4m ours-nonuma}
MODES=("pinned_alloc_mt 8 1000 4096" "pinned_alloc 1000 4096" "bw 67108864")
R=$O/raw.txt; : > "$R"
for p in ${PLUG[before]:+before} main ours; do echo "# plugin $p commit $(head -1 "${DIR[$p]}/COMMIT" 2>/dev/null || echo unknown)" >> "$R"; done
# CONFIG [PREFIX...] -- ARGS: offload_bench under CONFIG's plugin and knobs (PREFIX: a
# command such as taskset put before the loader), output on stdout and stderr.
rb() {
  local c=$1; shift; local pre=(); while [ "$1" != -- ]; do pre+=("$1"); shift; done; shift
  local p=${PLUG[$c]}
  env ${TUNE[$c]:+GOMP_NVPTX_TUNE=${TUNE[$c]}} ${EXTRA_ENV:-} timeout 120 ${pre[@]+"${pre[@]}"} \
    "$B/lib/ld-linux-x86-64.so.2" --library-path "${DIR[$p]}:$B/lib:$CUDA_LIBDIR" "$C/offload_bench" "$@"
}
{
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv,noheader
  nvidia-smi topo -m 2>/dev/null
  echo "NUMA nodes online: $(cat /sys/devices/system/node/online 2>/dev/null || echo unknown)"
  for n in /sys/devices/system/node/node[0-9]*; do
    [ -d "$n" ] && echo "$(basename "$n"): cpus $(cat "$n/cpulist")"
  done
  for d in /sys/bus/pci/drivers/nvidia/0000:*; do
    [ -e "$d/numa_node" ] && echo "GPU $(basename "$d"): numa_node $(cat "$d/numa_node")"
  done
  lscpu 2>/dev/null | grep -E '^(Model name|Socket|NUMA node|CPU\(s\))'
} > "$O/topology.txt" 2>&1
# 1. The rows, alternating configurations.
for rep in $(seq 1 "$REPS"); do
  for c in $CONFIGS; do
    for m in "${MODES[@]}"; do
      # shellcheck disable=SC2086
      rb "$c" -- $m > "$T/one.txt" 2>&1
      rc=$?
      grep -E "^(metric|ERROR)" "$T/one.txt" | sed "s/^/$c $rep /" >> "$R"
      [ $rc = 0 ] || echo "$c $rep ERROR '$m' exit $rc: $(tail -c 300 "$T/one.txt" | tr '\n' ' ')" >> "$R"
    done
  done
done
# 2. Where ours put its page-locked memory (the plugin's GOMP_DEBUG lines).
for c in ours ours-nonuma; do
  echo "== $c: bw 67108864, GOMP_DEBUG=1" >> "$O/numa-debug.txt"
  EXTRA_ENV=GOMP_DEBUG=1 rb "$c" -- bw 67108864 2>&1 |
    grep -E "NUMA|page-locked|^metric (h2d|d2h)_pinned" >> "$O/numa-debug.txt"
done
# 3. On a host of several nodes: the process held on a node that is not GPU 0's.
gpu_node=$(cat /sys/bus/pci/drivers/nvidia/0000:*/numa_node 2>/dev/null | head -1)
far=""
for n in /sys/devices/system/node/node[0-9]*; do
  [ -d "$n" ] || continue
  [ "${n##*node}" = "${gpu_node:--1}" ] || { far=$(cat "$n/cpulist"); break; }
done
if [ -n "$far" ] && [ "${gpu_node:--1}" != -1 ] && command -v taskset > /dev/null; then
  echo "# far-node runs: GPU 0 on node $gpu_node, process on cpus $far" >> "$R"
  for rep in 1 2 3; do
    for c in stock main ours ours-nonuma; do
      rb "$c" taskset -c "$far" -- bw 67108864 2>&1 | grep -E "^(metric|ERROR)" |
        sed "s/^metric \([^ ]*\)/metric \1_farcpu/; s/^/$c $rep /" >> "$R"
    done
  done
else
  echo "# no far-node runs (one NUMA node, GPU node unknown, or no taskset)" >> "$R"
fi
# Medians (min, max) per configuration and metric.
python3 - "$R" > "$O/summary.txt" <<'PY'
import statistics, sys
v, u = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 6 and f[2] == "metric":
        v.setdefault((f[3], f[0]), []).append(float(f[4]))
        u[f[3]] = f[5]
for (m, c), xs in sorted(v.items()):
    print(f"{c:14s} {m:40s} median {statistics.median(xs):12.2f}  min {min(xs):12.2f}  "
          f"max {max(xs):12.2f} {u[m]} (n={len(xs)})")
PY
cat "$O/summary.txt"
grep ERROR "$R" | head -20
