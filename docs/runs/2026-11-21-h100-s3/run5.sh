#!/bin/bash
# session 3, device run 5: devtests + rechecks, the benchmark table, compat13 (libgomp 13)
O=/tmp/o; rm -rf $O; mkdir -p $O; S=$(date +%s)
TEST_TIMEOUT=20 tests/device/run.sh .carry > $O/devtests.txt 2>&1
B=/tmp/devtests/bundle-16; CL=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
GOMP_DEBUG=1 timeout 30 $B/lib/ld-linux-x86-64.so.2 --library-path .carry/plugin:$B/lib:$CL .carry/tests/revoff_device_heap > $O/debug-heap.log 2>&1; echo "exit $?" >> $O/debug-heap.log
GOMP_DEBUG=1 timeout 60 $B/lib/ld-linux-x86-64.so.2 --library-path .carry/plugin:$B/lib:$CL .carry/revoff_bench 20000 > $O/debug-revoff.log 2>&1; echo "exit $?" >> $O/debug-revoff.log
OUT=$O/recheck FILTER='target-exceptions-bad_cast-1|reverse-offload-5' JOBS=4 SUITE_TIMEOUT=100 scripts/device/suite.sh .carry > $O/recheck.log 2>&1
echo "after rechecks: $(( $(date +%s) - S )) s" > $O/times.txt
OUT=$O/bench WHEELS=.carry/whl SUITE_FILTER='^libgomp\.c/target-' bench/device-run.sh .carry 2 > $O/bench.log 2>&1
echo "after bench: $(( $(date +%s) - S )) s" >> $O/times.txt
CONFIGS=13 JOBS=14 OUT=$O/compat13 timeout $(( 575 - ($(date +%s) - S) )) scripts/compat13/run.sh .carry > $O/compat13.log 2>&1; echo "compat13 exit $?" >> $O/times.txt
echo "total: $(( $(date +%s) - S )) s" >> $O/times.txt
tar czf $OUT/all.tgz -C $O .
cat $O/times.txt $O/devtests.txt; grep -E "reverse offload|copy|OK|FAIL|exit" $O/debug-*.log | head; grep -E "^(PASS|FAIL|XFAIL|XPASS|TIMEOUT)" $O/recheck/results-*.txt; tail -2 $O/bench.log; grep -E "CHECK|passes with stock|^  " $O/compat13/compat13-results.txt | tail -25
