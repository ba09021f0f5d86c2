#!/bin/bash
# session 4, device run 8: the whole GCC 14 suite (libgomp 14 from Debian trixie) with ours
set -u
C=$PWD/.carry; W=/tmp/s4; rm -rf $W; mkdir -p $W/suite
t0=$(date +%s)
OUT=$W/suite BUNDLE=bundle-14 PLUGINS=ours JOBS=14 SUITE_TIMEOUT=480 scripts/device/suite.sh $C > $W/suite/log.txt 2>&1
echo "suite: $(( $(date +%s) - t0 )) s"; tail -3 $W/suite/log.txt
tar -czf $OUT/all.tgz -C $W .
