#!/bin/bash
# device-run.sh - run the benchmarks on the GPU machine with the stock plugin and ours,
# alternating (stock, ours, stock, ours, ...) on the same binary in one call.
# usage: bench/device-run.sh CARRY_DIR [REPS]
# CARRY_DIR holds bundle-16.tar.xz (its libs and stock plugin), plugin/ (ours) and
# offload_bench, revoff_bench, acc_bench and cuda_floor (built by bench/build.sh).
# env BENCHES (default "floor omp revoff acc") picks which binaries run. Writes
# $OUT/bench-raw.txt: "plugin rep metric NAME VALUE UNIT" lines (or ERROR lines);
# the raw-driver floor's lines have "floor" in place of the plugin.
set -u
C=$(cd "${1:?usage: device-run.sh CARRY_DIR [REPS]}" && pwd); REPS=${2:-3}
O=${OUT:-/tmp/bench-out}; mkdir -p "$O"
T=/tmp/bench; mkdir -p "$T"
[ -d "$T/bundle-16" ] || tar -xJf "$C/bundle-16.tar.xz" -C "$T"
B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
declare -A DIR=([stock]=$B/plugin [ours]=$C/plugin)
MODES=("empty 2000" "nowait 1000" "nomap_worker" "threads 8 1 50" "alloc 1000 1048576"
       "alloc_cycles 100000"
       "bw 4096" "bw 67108864" "bw 1073741824"
       "pinned_alloc 1000 4096" "pinned_alloc 1000 1048576" "pinned_alloc 100 67108864"
       "pinned_alloc_mt 8 1000 4096")
# OMP_MODES="bw 67108864;bw 1073741824" runs only those offload_bench modes.
[ -n "${OMP_MODES:-}" ] && IFS=';' read -ra MODES <<< "$OMP_MODES"
ACC_MODES=("sync 2000" "async 500" "asyncdata 500")
BENCHES=${BENCHES:-floor omp revoff acc}
one() { # PLUGIN REP BINARY ARGS...
  local p=$1 rep=$2 bin=$3; shift 3
  timeout 120 "$B/lib/ld-linux-x86-64.so.2" --library-path "${DIR[$p]}:$B/lib:$CUDA_LIBDIR" \
    "$C/$bin" "$@" > "$T/one.txt" 2>&1
  local rc=$?
  sed "s/^/$p $rep /" "$T/one.txt" | grep -E "^$p $rep (metric|ERROR)" >> "$O/bench-raw.txt"
  [ $rc = 0 ] || echo "$p $rep ERROR $bin '$*' exit $rc: $(tail -c 300 "$T/one.txt" | tr '\n' ' ')" >> "$O/bench-raw.txt"
}
for rep in $(seq 1 "$REPS"); do
  if [[ " $BENCHES " == *" floor "* ]]; then
    timeout 120 "$C/cuda_floor" > "$T/one.txt" 2>&1 || echo "floor $rep ERROR cuda_floor exit $?" >> "$O/bench-raw.txt"
    sed "s/^/floor $rep /" "$T/one.txt" | grep -E "^floor $rep (metric|ERROR)" >> "$O/bench-raw.txt"
  fi
  for p in stock ours; do
    if [[ " $BENCHES " == *" acc "* ]]; then
      for m in "${ACC_MODES[@]}"; do
        # shellcheck disable=SC2086
        one "$p" "$rep" acc_bench $m
      done
    fi
    if [[ " $BENCHES " == *" omp "* ]]; then
      for m in "${MODES[@]}"; do
        # shellcheck disable=SC2086
        one "$p" "$rep" offload_bench $m
      done
    fi
    [[ " $BENCHES " == *" revoff "* ]] && one "$p" "$rep" revoff_bench 1000
  done
done
echo "bench: $(grep -c metric "$O/bench-raw.txt") metrics, $(grep -c ERROR "$O/bench-raw.txt") errors"
