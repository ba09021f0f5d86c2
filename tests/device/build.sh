#!/bin/sh
# build.sh - compile the GPU-only tests of tests/device/ with the sid root's gcc-16
# (nvptx offload) into .carry/tests/, for tests/device/run.sh on the GPU machine.
set -eu
cd "$(dirname "$0")/../.."
export WORK=${WORK:-$PWD/.toolchain}
[ -x "$WORK/sid/usr/bin/gcc-16" ] || scripts/toolchain/mkroot.sh sid
mkdir -p "$WORK/devtests" .carry/tests
for src in tests/device/*.c; do
  b=$(basename "$src" .c)
  cp "$src" "$WORK/devtests/"
  scripts/toolchain/inroot.sh sid sh -c "cd /w/devtests && gcc-16 -O2 -fopenmp -foffload=nvptx-none $b.c -o $b"
  cp "$WORK/devtests/$b" .carry/tests/
  if [ -f "tests/device/$b.env" ]; then cp "tests/device/$b.env" ".carry/tests/$b.env"; fi
done
echo "tests/device: built $(ls .carry/tests | grep -vc '\.env$') test(s) into .carry/tests"
