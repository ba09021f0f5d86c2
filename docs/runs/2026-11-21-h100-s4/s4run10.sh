#!/bin/bash
# session 4, device run 10: the final plugin: device tests (ours) and the reverse-offload /
# indirect-function upstream tests with both plugins
set -u
C=$PWD/.carry; W=/tmp/s4; rm -rf $W; mkdir -p $W/suite
OUT=$W PLUGINS=ours TEST_TIMEOUT=120 timeout 200 tests/device/run.sh $C > $W/devtests.txt 2>&1; cat $W/devtests.txt
OUT=$W/suite FILTER='reverse-offload|target-rev|indirect' JOBS=6 SUITE_TIMEOUT=200 scripts/device/suite.sh $C > $W/suite/log.txt 2>&1
grep -E "^== " $W/suite/log.txt; grep -hvE "^(PASS|XFAIL|UNSUPPORTED)" $W/suite/results-*.txt
tar -czf $OUT/all.tgz -C $W .
