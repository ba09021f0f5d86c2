#!/bin/bash
# device-run.sh - run the benchmarks on the GPU machine with the stock plugin and ours,
# alternating (stock, ours, stock, ours, ...) on the same binary in one call.
# usage: bench/device-run.sh CARRY_DIR [REPS]
# CARRY_DIR holds bundle-16.tar.xz (its libs and stock plugin), plugin/ (ours; before/ from
# bench/build-before.sh for PLUGINS="stock before ours", the regression gate; release/ from
# bench/build-before.sh --release for PLUGINS="stock release ours", the release baseline
# of bench/results/release.txt) and
# offload_bench, region_bench, revoff_bench, acc_bench, kernel_bench, kernel_bench_f,
# cuda_floor and gcc_empty.ptx (built by bench/build.sh).
# env BENCHES (default "floor omp region revoff acc acck jit stress suite") picks what runs:
#   floor   bench/cuda_floor.c (raw driver costs, no plugin; with CARRY_DIR/gcc_empty.ptx
#           also GCC's own kernel of an empty region and the region floors built on it)
#   omp     offload_bench modes (OMP_MODES="a;b" picks some)
#   region  region_bench modes, real region shapes (REGION_MODES="a;b" picks some);
#           "multi 64" (default) is the several-GPU row: the same work on one device and
#           on all visible devices, one host thread each (no row with one GPU)
#   revoff  revoff_bench 1000;  acc  acc_bench modes (ACC_MODES="a;b" picks some)
#   acck    acc_kernel_bench (ACCK_ARGS, default all its kernels): OpenACC compute
#           kernels of real codes' shapes, median us per launch (acc_kernel_NAME rows);
#           then once per plugin a GOMP_DEBUG=1 pass (-n 20) whose launch lines go to
#           $OUT/acc-launches.txt (the dimensions each plugin chose, per kernel)
#   jit     first target region with an empty CUDA JIT cache and again with it filled
#   stress  revoff_bench 100000 once per plugin (1e5 reverse-offload requests)
#   suite   wall time of the upstream suite's SUITE_FILTER tests (default the
#           libgomp.c directory; 14 jobs) once per plugin, from bundle-16's runner
#   kernels (not in the default list) kernel_bench (KERNEL_ARGS, default all kernels)
#           and kernel_bench_f (KERNEL_F_ARGS) per plugin and per KNOBS entry, each
#           repetition; then once per configuration a GOMP_DEBUG=1 pass (-r 1) whose
#           launch lines go to $OUT/kernel-geometry.txt per kernel (KERNEL_GEOMETRY=0
#           skips it) and, for every plugin but stock, a GOMP_NVPTX_PROFILE=1 pass whose
#           table goes to $OUT/kernel-profile-LABEL-BINARY.txt (a + in LABEL written _;
#           KERNEL_PROFILE=0 skips it); $OUT/kernels.md has all configurations side by
#           side (bench/kernel_report.py). These passes' numbers are not recorded.
# KNOBS="PLUGIN:VAR=VAL [VAR=VAL...];..." adds configurations to the kernels step: each
#   entry runs PLUGIN with those variables set, labelled PLUGIN+kN (N from 1, in order;
#   the legend is in $OUT/kernel-knobs.txt and kernels.md). Values hold no spaces or ';'.
#   e.g. KNOBS="ours:GOMP_NVPTX_JIT=-O3;ours:GOMP_NVPTX_LOWLAT_POOL=0;stock:OMP_NUM_TEAMS_ALL=1056"
# Each mode list's entries are the program's arguments, e.g. REGION_MODES="map 4096;jacobi
#   2048 10"; an entry may start with --allow-host (off the GPU: checks the plumbing).
# BENCH_TMP (default /tmp/bench): the scratch folder (the unpacked bundle, run output).
# Writes $OUT/bench-raw.txt: "# plugin NAME commit HASH" per plugin (its COMMIT file), then
# "plugin rep metric NAME VALUE UNIT" lines (or ERROR lines; the raw-driver floor's lines
# have "floor" in place of the plugin), then, through
# bench/report.py, $OUT/bench.md (the table) and $OUT/bench.png (the plot; needs
# matplotlib: WHEELS=DIR installs it from wheels carried there, see bench/README.md).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "device-run.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -ge 1 ] || { echo "device-run.sh: missing argument (see $0 --help)" >&2; exit 2; }
[ $# -le 2 ] || { echo "device-run.sh: too many arguments (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "${1:?usage: device-run.sh CARRY_DIR [REPS]}" && pwd); REPS=${2:-3}
O=${OUT:-/tmp/bench-out}; mkdir -p "$O"
T=${BENCH_TMP:-/tmp/bench}; mkdir -p "$T"   # scratch (BENCH_TMP: another place)
[ -d "$T/bundle-16" ] || tar -xJf "$C/bundle-16.tar.xz" -C "$T"
B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
declare -A DIR=([stock]=$B/plugin [ours]=$C/plugin [before]=$C/before)
# PLUGINS: which plugins, in this order each repetition (default "stock ours"; any other
# name is the plugin in CARRY_DIR/NAME/, e.g. "before" for ours as it was before a change).
# A plugin folder may hold an ENV file: one line of VAR=VAL words set for its runs, so
# that a folder holding the same plugin with e.g. GOMP_NVPTX_TUNE=syncwait=sync is one
# more column (a variant).
PLUGINS=${PLUGINS:-stock ours}
for p in $PLUGINS; do [ -n "${DIR[$p]:-}" ] || DIR[$p]=$C/$p; done   # any other name: CARRY_DIR/NAME/
# Which build each plugin is, first in bench-raw.txt ("# plugin NAME commit HASH", from
# the COMMIT file bench/build.sh and bench/build-before.sh leave beside the plugin).
for p in $PLUGINS; do
  if [ "$p" = stock ]; then echo "# plugin stock bundle-16.tar.xz"
  elif [ -s "${DIR[$p]}/COMMIT" ]; then echo "# plugin $p commit $(head -1 "${DIR[$p]}/COMMIT")"
  else echo "# plugin $p commit unknown (no ${DIR[$p]}/COMMIT)"; fi
done >> "$O/bench-raw.txt"
MODES=("empty 2000" "nowait 1000" "nomap_worker" "threads 8 1 50" "alloc 1000 1048576"
       "alloc_cycles 100000"
       "bw 4096" "bw 67108864" "bw 1073741824"
       "pinned_alloc 1000 4096" "pinned_alloc 1000 1048576" "pinned_alloc 100 67108864"
       "pinned_alloc_mt 8 1000 4096")
# OMP_MODES="bw 67108864;bw 1073741824" runs only those offload_bench modes.
[ -n "${OMP_MODES:-}" ] && IFS=';' read -ra MODES <<< "$OMP_MODES"
AMODES=("sync 2000" "async 500" "asyncdata 500"
        "copy 8 100" "copy 4096 100" "copy_async 8 100" "copy_async 4096 100"
        "async_bw 67108864" "async_bw 1073741824")
[ -n "${ACC_MODES:-}" ] && IFS=';' read -ra AMODES <<< "$ACC_MODES"
RMODES=("map 8" "map 4096" "map 65536" "map 1048576 20" "tofrom" "copy8" "update 4096"
        "teams 5" "jacobi 1024 10" "threads 8 500" "multi 64")
[ -n "${REGION_MODES:-}" ] && IFS=';' read -ra RMODES <<< "$REGION_MODES"
BENCHES=${BENCHES:-floor omp region revoff acc acck jit stress suite}
has() { [[ " $BENCHES " == *" $1 "* ]]; }
RUN_ENV=()   # extra VAR=VAL for run_bin (the kernels step's KNOBS)
run_bin() { # PLUGIN BINARY ARGS... -> $T/one.txt; returns the exit status
  local p=$1 bin=$2; shift 2
  local penv=()   # the plugin folder's ENV file: VAR=VAL words for its runs (a variant)
  [ -f "${DIR[$p]}/ENV" ] && read -ra penv < "${DIR[$p]}/ENV"
  env ${penv[@]+"${penv[@]}"} ${RUN_ENV[@]+"${RUN_ENV[@]}"} timeout 120 "$B/lib/ld-linux-x86-64.so.2" --library-path "${DIR[$p]}:$B/lib:$CUDA_LIBDIR" \
    "$C/$bin" "$@" > "$T/one.txt" 2>&1
}
# PLUGIN REP BINARY ARGS...: records the run's metric and ERROR lines (env KEEP: only
# the metrics named by this ERE; SUFFIX: appended to their names; LABEL: the name in
# place of PLUGIN in the first column)
one() {
  local p=$1 rep=$2 bin=$3; shift 3
  local l=${LABEL:-$p}
  run_bin "$p" "$bin" "$@"
  local rc=$?
  grep -E "^(metric ${KEEP:-[^ ]+} |ERROR)" "$T/one.txt" | sed "s/^metric \([^ ]*\)/metric \1${SUFFIX:-}/; s/^/$l $rep /" >> "$O/bench-raw.txt"
  [ $rc = 0 ] || echo "$l $rep ERROR $bin '$*' exit $rc: $(tail -c 300 "$T/one.txt" | tr '\n' ' ')" >> "$O/bench-raw.txt"
}
# The kernels step's configurations, "LABEL|PLUGIN|VAR=VAL ...": each plugin, then KNOBS.
KCONF=()
if has kernels; then
  for p in $PLUGINS; do KCONF+=("$p|$p|"); done
  rm -f "$O/kernel-knobs.txt" "$O/kernel-geometry.txt" "$O"/kernel-profile-*.txt
  IFS=';' read -ra KN <<< "${KNOBS:-}"
  i=0
  for k in ${KN[@]+"${KN[@]}"}; do
    [ -n "${k// /}" ] || continue
    p=${k%%:*} e=${k#*:}
    if [ "$p" = "$k" ] || [ -z "$p" ] || [[ ! " $e " =~ ^(\ +[A-Za-z_][A-Za-z0-9_]*=[^ ]*)+\ +$ ]]; then
      echo "device-run.sh: bad KNOBS entry '$k' (PLUGIN:VAR=VAL [VAR=VAL...]; see $0 --help)" >&2; exit 2
    fi
    [ -n "${DIR[$p]:-}" ] || DIR[$p]=$C/$p
    i=$((i + 1)); KCONF+=("$p+k$i|$p|$e"); echo "$p+k$i $e" >> "$O/kernel-knobs.txt"
  done
fi
# CONF REP: kernel_bench and kernel_bench_f under one configuration of KCONF.
kernels_run() {
  local label p e
  IFS='|' read -r label p e <<< "$1"
  read -ra RUN_ENV <<< "$e"
  # shellcheck disable=SC2086
  LABEL=$label one "$p" "$2" kernel_bench ${KERNEL_ARGS:-}
  # shellcheck disable=SC2086
  LABEL=$label one "$p" "$2" kernel_bench_f ${KERNEL_F_ARGS:-}
  RUN_ENV=()
}
# CONF: the extra passes of the kernels step (launch geometry, profile table).
kernels_extra() {
  local label p e bin args
  IFS='|' read -r label p e <<< "$1"
  for bin in kernel_bench kernel_bench_f; do
    [ $bin = kernel_bench ] && args=${KERNEL_ARGS:-} || args=${KERNEL_F_ARGS:-}
    if [ "${KERNEL_GEOMETRY:-1}" = 1 ]; then
      # GOMP_DEBUG=1: the plugins log each launch's geometry on stderr ("kernel NAME:
      # launch ..."); the programs' "# kernel NAME" lines say which kernel ran them.
      read -ra RUN_ENV <<< "$e GOMP_DEBUG=1 GFORTRAN_UNBUFFERED_PRECONNECTED=y"
      # shellcheck disable=SC2086
      run_bin "$p" $bin $args -r 1
      local rc=$?
      { echo "== $label $bin${e:+ ($e)}: launches (count) per kernel, from GOMP_DEBUG=1 =="
        [ $rc = 0 ] || echo "ERROR exit $rc: $(tail -c 300 "$T/one.txt" | tr '\n' ' ')"
        awk 'BEGIN{k="(setup)"} /^# kernel /{k=$3; next}
             /kernel [^ ]+: launch/{sub(/.*kernel /, "kernel "); n[k "  " $0]++; if (!((k "  " $0) in o)) o[k "  " $0]=++m}
             END{for (x in o) r[o[x]]=x; for (i=1;i<=m;i++) printf "%s  (%d)\n", r[i], n[r[i]]}' "$T/one.txt"
      } >> "$O/kernel-geometry.txt"
    fi
    if [ "${KERNEL_PROFILE:-1}" = 1 ] && [ "$p" != stock ]; then
      read -ra RUN_ENV <<< "$e GOMP_NVPTX_PROFILE=1"
      # shellcheck disable=SC2086
      run_bin "$p" $bin $args || echo "ERROR $bin GOMP_NVPTX_PROFILE pass exit $?" >> "$O/kernel-profile-${label//+/_}-$bin.txt"
      grep 'nvptx profile' "$T/one.txt" >> "$O/kernel-profile-${label//+/_}-$bin.txt"
    fi
  done
  RUN_ENV=()
}
for rep in $(seq 1 "$REPS"); do
  if has floor; then
    GCC_PTX=(); [ -f "$C/gcc_empty.ptx" ] && GCC_PTX=(500 "$C/gcc_empty.ptx")
    REV_PTX=(); [ -f "$C/gcc_revoff.ptx" ] && REV_PTX+=("GCC_REV_PTX=$C/gcc_revoff.ptx")
    [ -f "$C/gcc_revoff_vspin.ptx" ] && REV_PTX+=("GCC_REV_VSPIN_PTX=$C/gcc_revoff_vspin.ptx")
    [ -f "$C/gcc_revoff_acqrel.ptx" ] && REV_PTX+=("GCC_REV_ACQREL_PTX=$C/gcc_revoff_acqrel.ptx")
    env ${REV_PTX[@]+"${REV_PTX[@]}"} timeout 120 "$C/cuda_floor" ${GCC_PTX[@]+"${GCC_PTX[@]}"} > "$T/one.txt" 2>&1 || echo "floor $rep ERROR cuda_floor exit $?" >> "$O/bench-raw.txt"
    sed "s/^/floor $rep /" "$T/one.txt" | grep -E "^floor $rep (metric|ERROR)" >> "$O/bench-raw.txt"
  fi
  for p in $PLUGINS; do
    if has acc; then
      for m in "${AMODES[@]}"; do
        # shellcheck disable=SC2086
        one "$p" "$rep" acc_bench $m
      done
    fi
    if has acck; then
      # shellcheck disable=SC2086
      one "$p" "$rep" acc_kernel_bench ${ACCK_ARGS:-}
    fi
    if has omp; then
      for m in "${MODES[@]}"; do
        # shellcheck disable=SC2086
        one "$p" "$rep" offload_bench $m
      done
    fi
    if has region; then
      for m in "${RMODES[@]}"; do
        # shellcheck disable=SC2086
        one "$p" "$rep" region_bench $m
      done
    fi
    has revoff && one "$p" "$rep" revoff_bench 1000
    if has jit; then
      rm -rf "$T/jit-cache"
      for phase in cold warm; do
        CUDA_CACHE_PATH=$T/jit-cache KEEP=first_target_region SUFFIX=_${phase}_jit \
          one "$p" "$rep" offload_bench empty 10
      done
    fi
  done
  for c in ${KCONF[@]+"${KCONF[@]}"}; do kernels_run "$c" "$rep"; done
done
for c in ${KCONF[@]+"${KCONF[@]}"}; do kernels_extra "$c"; done
if has acck; then
  rm -f "$O/acc-launches.txt"
  for p in $PLUGINS; do
    RUN_ENV=(GOMP_DEBUG=1)
    # shellcheck disable=SC2086
    run_bin "$p" acc_kernel_bench -n 20 ${ACCK_ARGS:-}
    rc=$?
    RUN_ENV=()
    { echo "== $p: OpenACC launches (count), from GOMP_DEBUG=1 =="
      [ $rc = 0 ] || echo "ERROR exit $rc: $(tail -c 300 "$T/one.txt" | tr '\n' ' ')"
      grep -E 'nvptx_exec: kernel [^ ]+: launch|autotune: (chose|kept)' "$T/one.txt" |
        sed 's/^.*\(nvptx_exec: \|kernel \)/\1/' | sort | uniq -c
    } >> "$O/acc-launches.txt"
  done
fi
for p in $PLUGINS; do
  if has stress; then
    s0=$(date +%s.%N)
    KEEP=revoff_round_trip SUFFIX=_1e5 one "$p" 1 revoff_bench 100000
    awk -v p="$p" -v s0="$s0" -v s1="$(date +%s.%N)" \
      'END { printf "%s 1 metric revoff_stress_1e5_wall %.2f s\n", p, s1 - s0 }' /dev/null >> "$O/bench-raw.txt"
  fi
  if has suite; then
    s0=$(date +%s.%N)
    CUDA_LIBDIR=$CUDA_LIBDIR JOBS=14 MAX_TIMEOUT=90 PLUGIN_DIR=${DIR[$p]} OUT=$T/suite-$p \
      FILTER=${SUITE_FILTER:-'^libgomp\.c/'} timeout 300 "$B/run-tests.sh" > "$T/suite-$p.log" 2>&1
    awk -v p="$p" -v s0="$s0" -v s1="$(date +%s.%N)" \
      'END { printf "%s 1 metric suite_wall %.1f s\n", p, s1 - s0 }' /dev/null >> "$O/bench-raw.txt"
    echo "$p 1 metric suite_passed $(cat "$T/suite-$p"/run/*/result 2>/dev/null | grep -c '^PASS') count" >> "$O/bench-raw.txt"
    echo "suite ($p): $(tail -1 "$T/suite-$p.log")"
  fi
done
echo "bench: $(grep -c metric "$O/bench-raw.txt") metrics, $(grep -c ERROR "$O/bench-raw.txt") errors"
if [ -n "${WHEELS:-}" ] && [ -d "$WHEELS" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$WHEELS"/*.whl > /dev/null 2>&1 && export PYTHONPATH=/tmp/site
fi
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 | sed 's/, / (driver /; s/$/)/')
python3 "$(dirname "$0")/report.py" "$O/bench-raw.txt" "$O/bench" --device "${GPU:-GPU}" \
  --plugins "$PLUGINS" --note "\`bench/device-run.sh CARRY_DIR $REPS\` (BENCHES=\"$BENCHES\", PLUGINS=\"$PLUGINS\"\
${OMP_MODES:+, OMP_MODES=\"$OMP_MODES\"}${REGION_MODES:+, REGION_MODES=\"$REGION_MODES\"}${ACC_MODES:+, ACC_MODES=\"$ACC_MODES\"}), $(date -u +%Y-%m-%d)."
if has kernels; then
  python3 "$(dirname "$0")/kernel_report.py" "$O/bench-raw.txt" "$O/kernels" --device "${GPU:-GPU}" \
    --knobs "$O/kernel-knobs.txt" --note "\`bench/device-run.sh CARRY_DIR $REPS\` (BENCHES=\"$BENCHES\", \
KERNEL_ARGS=\"${KERNEL_ARGS:-}\", KERNEL_F_ARGS=\"${KERNEL_F_ARGS:-}\"), $(date -u +%Y-%m-%d)."
fi

