#!/bin/bash
# session 4, device run 2: reverse offload (grace merged) side by side, 1e5 requests,
# device tests (issue 12; ours all, stock the trap/stress/revoff ones), compute-sanitizer
set -u
C=$PWD/.carry; W=/tmp/s4; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
T=/tmp/b; mkdir -p $T; tar -xJf $C/bundle-16.tar.xz -C $T; B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
declare -A DIR=([stock]=$B/plugin [ours]=$C/plugin)
t0=$(date +%s)
for rep in 1 2 3 4 5; do for p in stock ours; do
  for cmd in "offload_bench empty 2000" "revoff_bench 1000"; do
    timeout 60 $B/lib/ld-linux-x86-64.so.2 --library-path ${DIR[$p]}:$B/lib:$CUDA_LIBDIR $C/$cmd 2>&1 | grep -E '^(metric|ERROR)' | sed "s/^/$p $rep /"
  done
done; done > $W/revoff-compare.txt
for p in stock ours; do
  s=$(date +%s%N)
  timeout 100 $B/lib/ld-linux-x86-64.so.2 --library-path ${DIR[$p]}:$B/lib:$CUDA_LIBDIR $C/revoff_bench 100000 > $W/one.txt 2>&1
  echo "$p 1e5 exit $? wall $(( ($(date +%s%N) - s) / 1000000 )) ms"; grep -E '^(metric|ERROR)' $W/one.txt | sed "s/^/$p 1e5 /"
done >> $W/revoff-compare.txt
echo "revoff: $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
OUT=$W PLUGINS=ours TEST_TIMEOUT=120 timeout 200 tests/device/run.sh $C > $W/devtests.txt 2>&1
OUT=$W PLUGINS=stock TESTS='^(trap_|stress|revoff_)' TEST_TIMEOUT=100 timeout 170 tests/device/run.sh $C >> $W/devtests.txt 2>&1
echo "devtests: $(( $(date +%s) - t0 )) s"; cat $W/devtests.txt
t0=$(date +%s)
OUT=$W SANITIZE_TIMEOUT=140 scripts/device/sanitize.sh $C > $W/sanitize-log.txt 2>&1
echo "sanitize: $(( $(date +%s) - t0 )) s"; tail -3 $W/sanitize-results.txt
tar -czf $OUT/all.tgz -C $W .
