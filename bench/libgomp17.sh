#!/bin/bash
# libgomp17.sh - the region rows under libgomp 17 (issue: GCC 17's session contract):
# bench/region_bench.c built by Debian's gcc-snapshot and run with its libgomp 17, with
# the snapshot's stock plugin (stock17) and ours (ours17), beside bundle-16's build run
# with libgomp 16 and GCC 16's stock plugin (stock16) and ours (ours16); the four
# alternate in every repetition.
#
# usage: bench/libgomp17.sh build [CARRY_DIR]      here: CARRY_DIR/snapshot/region_bench17
#        bench/libgomp17.sh run CARRY_DIR [REPS]   on the GPU machine (REPS default 5)
# build needs CARRY_DIR/snapshot from 'tests/snapshot_gcc.sh --pack CARRY_DIR/snapshot'
# (the snapshot root, its libgomp 17 and stock plugin); run needs that, CARRY_DIR/plugin
# (ours), CARRY_DIR/region_bench and CARRY_DIR/bundle-16.tar.xz (bench/build.sh).
# run writes $OUT/libgomp17-raw.txt ("CONFIG REP metric NAME VALUE UNIT" lines, ERROR
# lines) and prints per row the medians of the four and the ratios ours17/stock17,
# ours17/ours16 and stock17/stock16 (libgomp's own change between the releases).
# env REGION17_MODES: region_bench modes separated by ';' (default: the region rows).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in build|run) ;; *) echo "libgomp17.sh: first argument must be build or run, not '${1:-}' (see $0 --help)" >&2; exit 2 ;; esac
set -u
cmd=$1; shift
case "${1:-}" in -?*) echo "libgomp17.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
C=$(cd "${1:-.carry}" && pwd) || exit 2
S=$C/snapshot
[ -f "$S/VERSION" ] || { echo "libgomp17.sh: no $S/VERSION (tests/snapshot_gcc.sh --pack $S)" >&2; exit 2; }
if [ "$cmd" = build ]; then
  cd "$(dirname "$0")/.." || exit 2
  export WORK=${WORK:-$PWD/.toolchain}
  mkdir -p "$WORK/bench17"
  cp bench/region_bench.c bench/median.h tests/device/gpu_probe.h "$WORK/bench17/" || exit 1
  scripts/toolchain/inroot.sh snapshot sh -c \
    "cd /w/bench17 && /usr/lib/gcc-snapshot/bin/gcc -O2 -fopenmp -foffload=nvptx-none region_bench.c -o region_bench17" || exit 1
  cp "$WORK/bench17/region_bench17" "$S/" && strip -g "$S/region_bench17"
  echo "libgomp17.sh: $S/region_bench17 built by $(head -1 "$S/VERSION")"
  exit 0
fi
REPS=${2:-5}
O=${OUT:-/tmp/bench-out}; mkdir -p "$O"
T=${BENCH_TMP:-/tmp/bench}; mkdir -p "$T"
[ -d "$T/bundle-16" ] || tar -xJf "$C/bundle-16.tar.xz" -C "$T"
B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
IFS=';' read -r -a M <<< "${REGION17_MODES:-map 8;map 4096;map 65536;map 1048576 20;tofrom;update 4096;teams 5;jacobi 1024 10;threads 8 500}"
R=$O/libgomp17-raw.txt; : > "$R"
for rep in $(seq 1 "$REPS"); do
  for p in stock16 ours16 stock17 ours17; do
    case $p in
      stock16) lib=$B/lib dir=$B/plugin prog=$C/region_bench ;;
      ours16) lib=$B/lib dir=$C/plugin prog=$C/region_bench ;;
      stock17) lib=$S/lib dir=$S/stock prog=$S/region_bench17 ;;
      ours17) lib=$S/lib dir=$C/plugin prog=$S/region_bench17 ;;
    esac
    for m in "${M[@]}"; do
      # shellcheck disable=SC2086  # a mode is the program's arguments
      out=$(timeout 120 "$lib/ld-linux-x86-64.so.2" --library-path "$dir:$lib:$CUDA_LIBDIR" "$prog" $m 2>&1)
      rc=$?
      grep -E '^(metric|ERROR)' <<< "$out" | sed "s/^/$p $rep /" >> "$R"
      [ $rc = 0 ] || echo "$p $rep ERROR region_bench '$m' exit $rc: $(tail -c 200 <<< "$out" | tr '\n' ' ')" >> "$R"
    done
  done
done
awk '
  $3 == "metric" { v[$4, $1] = v[$4, $1] " " $5; unit[$4] = $6; if (!($4 in seen)) { seen[$4] = 1; order[n++] = $4 } }
  $3 == "ERROR" { errors++ }
  function med(s,   a, k, i, j, t) {
    k = split(s, a, " "); if (k == 0) return ""
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
  function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.3f", a / b) }
  END {
    print "| row | unit | stock16 | ours16 | stock17 | ours17 | ours17/stock17 | ours17/ours16 | stock17/stock16 |"
    print "|---|---|---|---|---|---|---|---|---|"
    for (i = 0; i < n; i++) { r = order[i]
      s16 = med(v[r, "stock16"]); o16 = med(v[r, "ours16"]); s17 = med(v[r, "stock17"]); o17 = med(v[r, "ours17"])
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r, unit[r], s16, o16, s17, o17, ratio(o17, s17), ratio(o17, o16), ratio(s17, s16) }
    printf "%d error line(s)\n", errors }' "$R" | tee "$O/libgomp17.md"
