#!/bin/sh
# build.sh - compile the GPU-only tests of tests/device/ with the sid root's gcc-16
# and gfortran-16 (nvptx offload) into .carry/tests/, for tests/device/run.sh on the GPU machine.
# Tests named acc_* are OpenACC programs (-fopenacc), the others OpenMP (-fopenmp).
# usage: tests/device/build.sh      (env WORK, default ./.toolchain; makes the sid root if missing)
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
[ $# -eq 0 ] || { echo "tests/device/build.sh: takes no arguments, got '$*' (see $0 --help)" >&2; exit 2; }
set -eu
cd "$(dirname "$0")/../.."
export WORK=${WORK:-$PWD/.toolchain}
[ -x "$WORK/sid/usr/bin/gcc-16" ] || scripts/toolchain/mkroot.sh sid
rm -rf .carry/tests; mkdir -p "$WORK/devtests" .carry/tests
for src in tests/device/*.c tests/device/*.f90; do
  f=$(basename "$src"); b=${f%.*}
  case $f in *.f90) cc=gfortran-16 ;; *) cc=gcc-16 ;; esac
  case $f in acc_*) model=-fopenacc ;; *) model=-fopenmp ;; esac
  cp "$src" tests/device/gpu_probe.h "$WORK/devtests/"
  scripts/toolchain/inroot.sh sid sh -c "cd /w/devtests && $cc -O2 $model -foffload=nvptx-none $f -o $b"
  cp "$WORK/devtests/$b" .carry/tests/
  for x in env expect; do [ ! -f "tests/device/$b.$x" ] || cp "tests/device/$b.$x" ".carry/tests/$b.$x"; done
done
echo "tests/device: built $(ls .carry/tests | grep -vcE '\.(env|expect)$') test(s) into .carry/tests"
