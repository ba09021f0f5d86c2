#!/bin/bash
# session 4, device run 9: the benchmark table with the final plugin, side by side
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; S=$(date +%s)
OUT=$O/bench WHEELS=.carry/whl SUITE_FILTER='^libgomp\.c/target-' timeout 540 bench/device-run.sh .carry 2 > $O/bench.log 2>&1
echo "bench: $(( $(date +%s) - S )) s"; tail -2 $O/bench.log
tar czf $OUT/all.tgz -C $O .
