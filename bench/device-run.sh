#!/bin/bash
# device-run.sh - run the benchmarks on the GPU machine with the stock plugin and ours,
# alternating (stock, ours, stock, ours, ...) on the same binary in one call.
# usage: bench/device-run.sh CARRY_DIR [REPS]
# CARRY_DIR holds bundle-16.tar.xz (its libs and stock plugin), plugin/ (ours) and
# offload_bench and revoff_bench (built by bench/build.sh). Writes
# $OUT/bench-raw.txt: "plugin rep metric NAME VALUE UNIT" lines (or ERROR lines).
set -u
C=$(cd "${1:?usage: device-run.sh CARRY_DIR [REPS]}" && pwd); REPS=${2:-3}
O=${OUT:-/tmp/bench-out}; mkdir -p "$O"
T=/tmp/bench; mkdir -p "$T"
[ -d "$T/bundle-16" ] || tar -xJf "$C/bundle-16.tar.xz" -C "$T"
B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
declare -A DIR=([stock]=$B/plugin [ours]=$C/plugin)
MODES=("empty 2000" "nowait 1000" "nomap_worker" "threads 8 1 50" "alloc 1000 1048576"
       "bw 4096" "bw 67108864" "bw 1073741824")
for rep in $(seq 1 "$REPS"); do
  for p in stock ours; do
    for m in "${MODES[@]}"; do
      # shellcheck disable=SC2086
      timeout 120 "$B/lib/ld-linux-x86-64.so.2" --library-path "${DIR[$p]}:$B/lib:$CUDA_LIBDIR" \
        "$C/offload_bench" $m > "$T/one.txt" 2>&1
      rc=$?
      sed "s/^/$p $rep /" "$T/one.txt" | grep -E "^$p $rep (metric|ERROR)" >> "$O/bench-raw.txt"
      [ $rc = 0 ] || echo "$p $rep ERROR mode '$m' exit $rc: $(tail -c 300 "$T/one.txt" | tr '\n' ' ')" >> "$O/bench-raw.txt"
    done
    timeout 120 "$B/lib/ld-linux-x86-64.so.2" --library-path "${DIR[$p]}:$B/lib:$CUDA_LIBDIR" \
      "$C/revoff_bench" 1000 > "$T/one.txt" 2>&1
    rc=$?
    sed "s/^/$p $rep /" "$T/one.txt" | grep -E "^$p $rep (metric|ERROR)" >> "$O/bench-raw.txt"
    [ $rc = 0 ] || echo "$p $rep ERROR revoff_bench exit $rc: $(tail -c 300 "$T/one.txt" | tr '\n' ' ')" >> "$O/bench-raw.txt"
  done
done
echo "bench: $(grep -c metric "$O/bench-raw.txt") metrics, $(grep -c ERROR "$O/bench-raw.txt") errors"
