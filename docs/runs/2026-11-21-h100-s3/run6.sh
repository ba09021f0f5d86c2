#!/bin/bash
# session 3, device run 6: compat13 (libgomp 13, rebuilt without stack protector) and repeats of two noisy metrics
O=/tmp/o; rm -rf $O; mkdir -p $O; S=$(date +%s)
OUT=$O/bench BENCHES="revoff omp" OMP_MODES="bw 1073741824" bench/device-run.sh .carry 3 > $O/bench.log 2>&1
echo "after bench: $(( $(date +%s) - S )) s" > $O/times.txt
CONFIGS=13 JOBS=14 OUT=$O/compat13 timeout $(( 560 - ($(date +%s) - S) )) scripts/compat13/run.sh .carry > $O/compat13.log 2>&1; echo "compat13 exit $?" >> $O/times.txt
echo "total: $(( $(date +%s) - S )) s" >> $O/times.txt
tar czf $OUT/all.tgz -C $O .
cat $O/times.txt; grep -E "empty_target_revoff|revoff_round_trip|pinned_1073741824B|pageable_1073741824B" $O/bench/bench-raw.txt; sed -n '/== summary/,$p' $O/compat13/compat13-results.txt; grep "CHECK" $O/compat13/compat13-results.txt
