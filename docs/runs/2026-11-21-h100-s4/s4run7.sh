#!/bin/bash
# session 4, device run 7: the OpenACC timing tests lib-74/78/81 alone, 10x each, with
# stock, ours before and ours after "serialize skips idle queues"
set -u
C=$PWD/.carry; W=/tmp/s4; rm -rf $W; mkdir -p $W
T=/tmp/b; mkdir -p $T; [ -d $T/bundle-16 ] || tar -xJf $C/bundle-16.tar.xz -C $T; B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
declare -A DIR=([stock]=$B/plugin [new]=$C/plugin [old]=$C/plugin-old)
cd $B/data
for t in lib-74 lib-78 lib-81; do
  for p in stock old new; do
    pass=0; why=""
    for i in $(seq 10); do
      if timeout 60 $B/lib/ld-linux-x86-64.so.2 --library-path ${DIR[$p]}:$B/lib:$CUDA_LIBDIR $B/bin/libgomp.oacc-c-c++-common/$t.c.exe > $W/one.txt 2>&1; then pass=$((pass+1)); else why="$why|$(head -c 60 $W/one.txt | tr '\n' ' ')"; fi
    done
    echo "$t $p: $pass/10 passed ${why:0:200}"
  done
done 2>&1 | grep -v Aborted | tee $W/timing-tests.txt
