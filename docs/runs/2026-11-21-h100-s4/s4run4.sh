#!/bin/bash
# session 4, device run 4: lib-81.c alone 20 times per plugin (a 100 us budget that failed
# once under 14 jobs in run 3), and the stock plugin on the trap and stress device tests
set -u
C=$PWD/.carry; W=${W4:-/tmp/s4}; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
T=/tmp/b; mkdir -p $T; tar -xJf $C/bundle-16.tar.xz -C $T; B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
declare -A DIR=([stock]=$B/plugin [ours]=$C/plugin)
X=$B/bin/libgomp.oacc-c-c++-common/lib-81.c.exe; cd $B/data
for p in stock ours; do
  pass=0 fail=0
  for i in $(seq 20); do
    if timeout 60 $B/lib/ld-linux-x86-64.so.2 --library-path ${DIR[$p]}:$B/lib:$CUDA_LIBDIR $X > $W/one.txt 2>&1; then pass=$((pass+1)); else fail=$((fail+1)); echo "$p run $i: $(head -c 200 $W/one.txt)"; fi
  done
  echo "$p lib-81.c alone: $pass passed, $fail failed of 20"
done | tee $W/lib81.txt
cd - >/dev/null; [ -n "${SKIP_DEVTESTS:-}" ] || OUT=$W PLUGINS=stock TESTS='^(trap_|stress)' TEST_TIMEOUT=120 timeout 300 tests/device/run.sh $C > $W/devtests-stock.txt 2>&1
cat $W/devtests-stock.txt
tar -czf $OUT/all.tgz -C $W .
