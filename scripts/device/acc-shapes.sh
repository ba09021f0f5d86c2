#!/bin/bash
# acc-shapes.sh - on the GPU machine (through the `device` tool): every OpenACC test of the
# upstream suite (libgomp.oacc-*) and tests/device's acc_* tests once per launch shape
# the plugin may choose, each configuration's results compared with the default's
# (issue 54: an OpenACC program must give the same results whatever the runtime picks).
#
# usage: scripts/device/acc-shapes.sh CARRY_DIR     (results under $OUT: shapes.txt, shapes.tgz)
# CARRY_DIR holds bundle-16.tar.xz, plugin/ (ours) and tests/ (tests/device/build.sh).
# Configurations (env SHAPES, space-separated; default all of these):
#   default        the plugin as it is (the tuner tries its gang counts on repeated launches)
#   accgangs=K     GOMP_NVPTX_TUNE=accgangs=K: the default gang count over K (1, 4, 16, 64)
#                  from the first launch, for every OpenACC launch whose gangs are open
#   workers=W      GOMP_OPENACC_DIM=:W: (the worker count of launches that leave it open;
#                  the rule gives 1 to 32 by the kernel's occupancy)
# The upstream runs of PARALLEL configurations go at once; tests/device's acc_* tests
# then run one configuration after the other, alone on the GPU (the free-memory tests
# read the device's free memory, which other processes change). Exit 77 with a "SKIP"
# line (e.g. acc_multi_device on one GPU) counts as SKIP.
# env JOBS (tests at once per configuration, default 8), PARALLEL (configurations at once,
#     default 2), FILTER (ERE on upstream test names, default 'oacc'), NAMES (a file of
#     upstream test names, one a line: only those, e.g. the ones a cut run left out), MAX_TIMEOUT (90),
#     SUITE_TIMEOUT (seconds for each configuration's upstream run, default 480: a run cut
#     short compares the tests it finished; the summary line then says "cut").
# A test whose status differs from the default's is listed "DIFF CONFIG: test default=S
# config=S". Tests whose outcome is known to vary between runs (timeouts) should be
# read with the failed outputs in shapes.tgz. Prints the counts per configuration and a
# last line "N configurations, M differing results".
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "acc-shapes.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 1 ] || { echo "acc-shapes.sh: expects 1 argument (CARRY_DIR), got $# (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "$1" && pwd); O=${OUT:-/tmp/acc-shapes-out}; mkdir -p "$O"
T=/tmp/acc-shapes; rm -rf "$T"; mkdir -p "$T"
tar -xJf "$C/bundle-16.tar.xz" -C "$T"; B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
SHAPES=${SHAPES:-default accgangs=1 accgangs=4 accgangs=16 accgangs=64 workers=1 workers=4}
envs() {  # the variables of configuration $1
  case $1 in
    default) ;;
    accgangs=*) echo "GOMP_NVPTX_TUNE=$1" ;;
    workers=*) echo "GOMP_OPENACC_DIM=:${1#workers=}:" ;;
    *) echo "acc-shapes.sh: unknown configuration '$1'" >&2; exit 2 ;;
  esac
}
filter() {  # the upstream tests' ERE: NAMES' lines, else FILTER
  if [ -n "${NAMES:-}" ]; then
    printf '^(%s)$' "$(sed 's/[.+]/\\&/g' "$NAMES" | paste -sd'|')"
  else echo "${FILTER:-oacc}"; fi
}
upstream() {  # upstream CONFIG: the upstream OpenACC tests
  local cfg=$1 e; e=$(envs "$cfg")
  local s0=$SECONDS
  CUDA_LIBDIR=$CUDA_LIBDIR JOBS=${JOBS:-8} MAX_TIMEOUT=${MAX_TIMEOUT:-90} PLUGIN_DIR=$C/plugin \
    FILTER="$(filter)" EXTRA_ENV="$e" OUT=$T/res-$cfg timeout "${SUITE_TIMEOUT:-480}" \
    "$B/run-tests.sh" > "$T/log-$cfg.txt" 2>&1 || echo "cut at ${SUITE_TIMEOUT:-480} s (or failed): $(ls "$T/res-$cfg"/run 2>/dev/null | wc -l) tests finished" >> "$T/log-$cfg.txt"
  sort -k2 "$T/res-$cfg"/run/*/result > "$T/upstream-$cfg.txt" 2>/dev/null
  echo "$cfg: upstream $(wc -l < "$T/upstream-$cfg.txt") results, $(grep -c '^PASS' "$T/upstream-$cfg.txt") PASS ($(tail -1 "$T/log-$cfg.txt"); wall $((SECONDS - s0)) s)"
}
device() {  # device CONFIG: tests/device's acc_* tests, alone on the GPU
  local cfg=$1 e t rc; e=$(envs "$cfg")
  for t in "$C"/tests/acc_*; do
    case $t in *.env|*.expect) continue ;; esac
    env $e timeout 120 "$B/lib/ld-linux-x86-64.so.2" --library-path "$C/plugin:$B/lib:$CUDA_LIBDIR" \
      "$t" > "$T/dev-$cfg-$(basename "$t").txt" 2>&1
    rc=$?
    if [ $rc = 0 ]; then echo "PASS: device/$(basename "$t")"
    elif [ $rc = 77 ] && grep -q '^SKIP' "$T/dev-$cfg-$(basename "$t").txt"; then echo "SKIP: device/$(basename "$t")"
    else echo "FAIL: device/$(basename "$t")"; fi
  done > "$T/device-$cfg.txt"
  echo "$cfg: device $(grep -c ^PASS "$T/device-$cfg.txt") passed, $(grep -c ^FAIL "$T/device-$cfg.txt") failed, $(grep -c ^SKIP "$T/device-$cfg.txt") skipped"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
n=0
for cfg in $SHAPES; do
  upstream "$cfg" > "$T/summary-$cfg.txt" &
  n=$((n + 1)); [ $((n % ${PARALLEL:-2})) = 0 ] && wait
done
wait
for cfg in $SHAPES; do device "$cfg" >> "$T/summary-$cfg.txt"; done
{
  for cfg in $SHAPES; do cat "$T/summary-$cfg.txt"; done
  base=$(echo $SHAPES | awk '{print $1}')
  diffs=0
  for cfg in $SHAPES; do
    [ "$cfg" = "$base" ] || while read -r name a b; do
      echo "DIFF $cfg: $name $base=$a $cfg=$b"; diffs=$((diffs + 1))
    done < <(join -1 2 -2 2 <(cat "$T/upstream-$base.txt" "$T/device-$base.txt" | awk '{sub(/:$/,"",$1); print $1, $2}' | sort -k2) \
                            <(cat "$T/upstream-$cfg.txt" "$T/device-$cfg.txt" | awk '{sub(/:$/,"",$1); print $1, $2}' | sort -k2) |
             awk '$2 != $3')
  done
  echo "$(echo $SHAPES | wc -w) configurations, $diffs differing results"
} | tee "$O/shapes.txt"
# The failed upstream tests' outputs too (run-tests.sh keeps them under OUT/failed-outputs).
tar -czf "$O/shapes.tgz" -C "$T" $(cd "$T" && ls -d upstream-* device-* log-* dev-* res-*/failed-outputs 2>/dev/null) 2>/dev/null
