#!/bin/bash
# session 4, device run 3: where a reverse-offload round trip goes (GOMP_DEBUG split),
# the raw protocol floor, two sanitizer reports in full, the whole GCC 16 suite with ours
set -u
C=$PWD/.carry; W=/tmp/s4; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
T=/tmp/b; mkdir -p $T; tar -xJf $C/bundle-16.tar.xz -C $T; B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
for i in 1 2 3; do
  GOMP_DEBUG=1 timeout 60 $B/lib/ld-linux-x86-64.so.2 --library-path $C/plugin:$B/lib:$CUDA_LIBDIR $C/revoff_bench 20000 seq 2>&1 | grep -E 'reverse offload: [0-9]+ request|^metric revoff_round_trip'
done > $W/revoff-split.txt
for i in 1 2 3; do timeout 60 $C/cuda_floor 2>&1 | grep -E 'floor_revoff|launch'; done > $W/floor.txt
cat $W/revoff-split.txt $W/floor.txt
mkdir -p $W/san
OUT=$W/san FILTER='^libgomp\.c/target-52\.c$|^libgomp\.fortran/reverse-offload-1\.f90$' SANITIZE_TIMEOUT=60 scripts/device/sanitize.sh $C > $W/san/log.txt 2>&1
tail -2 $W/san/sanitize-results.txt
mkdir -p $W/suite
t0=$(date +%s)
OUT=$W/suite PLUGINS=ours JOBS=14 SUITE_TIMEOUT=430 scripts/device/suite.sh $C > $W/suite/log.txt 2>&1
echo "suite: $(( $(date +%s) - t0 )) s"; tail -5 $W/suite/log.txt
tar -czf $OUT/all.tgz -C $W .
