#!/bin/bash
# session 4, device run 6: after queue serialize skips idle queues: lib-81.c alone 20x per
# plugin, and both OpenACC directories of the GCC 16 suite with ours (regression check)
set -u
C=$PWD/.carry; W=/tmp/s4; rm -rf $W; mkdir -p $W
W4=/tmp/s4b SKIP_DEVTESTS=1 bash $C/s4run4.sh 2>&1 | grep -v Aborted > $W/lib81.txt; tail -1 $W/lib81.txt; grep "alone" $W/lib81.txt
mkdir -p $W/suite
OUT=$W/suite PLUGINS=ours JOBS=14 FILTER='^libgomp\.oacc-' SUITE_TIMEOUT=300 scripts/device/suite.sh $C > $W/suite/log.txt 2>&1
tail -2 $W/suite/log.txt
tar -czf $OUT/all.tgz -C $W .
