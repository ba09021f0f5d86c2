#!/bin/bash
# session 4, device run 11: after the clean-up (device tests and benchmarks share
# tests/device/gpu_probe.h): device tests with ours, the changed benchmarks with both
set -u
C=$PWD/.carry; W=/tmp/s4; rm -rf $W; mkdir -p $W
OUT=$W PLUGINS=ours TEST_TIMEOUT=120 timeout 200 tests/device/run.sh $C > $W/devtests.txt 2>&1; cat $W/devtests.txt
T=/tmp/devtests; B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
declare -A DIR=([stock]=$B/plugin [ours]=$C/plugin)
for p in stock ours; do
  for cmd in "offload_bench empty 2000" "offload_bench alloc_cycles 20000" "revoff_bench 1000"; do
    timeout 100 $B/lib/ld-linux-x86-64.so.2 --library-path ${DIR[$p]}:$B/lib:$CUDA_LIBDIR $C/$cmd 2>&1 | grep -E '^(metric|ERROR)' | sed "s/^/$p /"
  done
done | tee $W/bench.txt
tar -czf $OUT/all.tgz -C $W .
