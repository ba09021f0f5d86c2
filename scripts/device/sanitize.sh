#!/bin/bash
# sanitize.sh - on the GPU machine: upstream libgomp tests under compute-sanitizer's
# memcheck with our plugin. The tests run as in scripts/device/suite.sh, each
# inside `compute-sanitizer --tool memcheck --error-exitcode 97`, through the current
# scripts/toolchain/run-tests.sh (its RUN_WRAPPER), copied over the bundle's.
#
# usage: scripts/device/sanitize.sh CARRY_DIR        (results under $OUT)
# CARRY_DIR holds bundle-16.tar.xz and plugin/ (as for suite.sh), and sanitizer.tar.xz
# when the machine has no compute-sanitizer: the bin/ and lib/ folders of PyPI's
# nvidia-cuda-sanitizer-api wheel (nvidia/cu13/; scripts/device/fetch-sanitizer makes it).
# env: FILTER (ERE on test names; default a mixed subset of OpenMP and OpenACC tests),
#      TOOL (memcheck; also racecheck, initcheck, synccheck), JOBS (default 8),
#      MAX_TIMEOUT (default 300: the tools slow kernels down a lot),
#      SANITIZE_TIMEOUT (default 420: seconds for the whole run; tests not finished by
#      then are listed as not run).
# Writes $OUT/sanitize-results.txt (the runner's verdicts) and $OUT/sanitize-errors.txt
# (each test whose sanitizer summary reports errors, with the summary and first report).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "sanitize.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 1 ] || { echo "sanitize.sh: expects 1 argument(s), got $# (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "${1:?usage: sanitize.sh CARRY_DIR}" && pwd); O=${OUT:-/tmp/sanitize-out}; mkdir -p "$O"
R=$(cd "$(dirname "$0")/../.." && pwd)
T=/tmp/sanitize; rm -rf "$T"; mkdir -p "$T"
tar -xJf "$C/bundle-16.tar.xz" -C "$T"; B=$T/bundle-16
cp "$R/scripts/toolchain/run-tests.sh" "$B/run-tests.sh"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ ! -x "$CS" ] && [ -f "$C/sanitizer.tar.xz" ]; then
  mkdir -p "$T/cs" && tar -xJf "$C/sanitizer.tar.xz" -C "$T/cs" && CS=$T/cs/bin/compute-sanitizer
fi
[ -x "$CS" ] || { echo "sanitize.sh: no compute-sanitizer on this machine" | tee "$O/sanitize-results.txt"; exit 2; }
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
DEF='^libgomp\.c/(target-[0-9]+|alloc-pinned-[0-9]+|reverse-offload-1|interop-[a-z0-9-]+|omp_target_.*)\.c$|^libgomp\.c-c\+\+-common/(target-[0-9]+|declare-target-indirect-[0-9]+|omp_target_memset-[0-9]+|target-nowait-[0-9]+|target-memcpy-[a-z0-9-]+|requires-[0-9]+)\.c$|^libgomp\.oacc-c-c\+\+-common/(data-[0-9]+|async_queue-1|lib-8[0-9]|asyncwait-[0-9]+|acc_prof-[a-z0-9-]+|host_data-[0-9]+)\.c$|^libgomp\.fortran/reverse-offload-[0-9]+\.f90$'
CUDA_LIBDIR=$CUDA_LIBDIR JOBS=${JOBS:-8} MAX_TIMEOUT=${MAX_TIMEOUT:-300} PLUGIN_DIR=$C/plugin KEEP=1 \
  OUT=$T/res FILTER=${FILTER:-$DEF} \
  RUN_WRAPPER="$CS --tool ${TOOL:-memcheck} --error-exitcode 97 --print-limit 10" \
  timeout "${SANITIZE_TIMEOUT:-420}" "$B/run-tests.sh" > "$T/log.txt" 2>&1
"$CS" --version | tail -1 > "$O/sanitize-version.txt" 2>&1
sort -k2 "$T/res"/run/*/result > "$O/sanitize-results.txt" 2>/dev/null
tail -1 "$T/log.txt" >> "$O/sanitize-results.txt"
: > "$O/sanitize-errors.txt"; clean=0; dirty=0; idle=0
for d in "$T/res"/run/*/; do
  s=$(grep -m1 'ERROR SUMMARY:' "$d/output.txt" 2>/dev/null)
  if [ -z "$s" ] && grep -q 'terminated before first instrumented API call' "$d/output.txt" 2>/dev/null; then
    idle=$((idle + 1)); echo "== $(basename "$d"): no CUDA work to check (the program made no instrumented CUDA call)" >> "$O/sanitize-errors.txt"; continue
  fi
  case $s in
    *"ERROR SUMMARY: 0 errors"*) clean=$((clean + 1)) ;;
    "") { echo "== $(basename "$d"): no sanitizer summary ($(cat "$d/result"))"; head -c 1500 "$d/output.txt"; } >> "$O/sanitize-errors.txt" ;;
    *) dirty=$((dirty + 1))
       { echo "== $(basename "$d"): $s"; grep '^========= ' "$d/output.txt" | grep -v 'COMPUTE-SANITIZER' | head -24; } >> "$O/sanitize-errors.txt" ;;
  esac
done
echo "sanitize: $clean test(s) clean, $dirty with errors, $idle without CUDA work (tool ${TOOL:-memcheck})" | tee -a "$O/sanitize-results.txt"
