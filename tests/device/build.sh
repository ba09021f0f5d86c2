#!/bin/sh
# build.sh - compile the GPU-only tests of tests/device/ with the sid root's gcc-16
# and gfortran-16 (nvptx offload) into .carry/tests/, for tests/device/run.sh on the GPU machine.
# Tests named acc_* are OpenACC programs (-fopenacc), the others OpenMP (-fopenmp);
# tests/device/TEST.cflags, if any, adds compiler flags (nvtx_ranges: -g). Also builds
# the NVTX test tool (tests/fixtures/nvtx/inject.c) into .carry/nvtx/libnvtx-inject.so
# (tests/device/nvtx_ranges.c names it).
# With GCC=snapshot: Debian's gcc-snapshot (GCC 17, libgomp 17) of the snapshot root
# compiles them into .carry/tests17/ (run them with LIBGOMP=17 tests/device/run.sh, which
# takes libgomp 17 and its stock plugin from .carry/snapshot/: tests/snapshot_gcc.sh --pack).
# usage: tests/device/build.sh      (env WORK, default ./.toolchain; makes the root if missing)
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
[ $# -eq 0 ] || { echo "tests/device/build.sh: takes no arguments, got '$*' (see $0 --help)" >&2; exit 2; }
set -eu
cd "$(dirname "$0")/../.."
export WORK=${WORK:-$PWD/.toolchain}
case ${GCC:-16} in
  16) root=sid cc_c=gcc-16 cc_f=gfortran-16 dest=.carry/tests
      [ -x "$WORK/sid/usr/bin/gcc-16" ] || scripts/toolchain/mkroot.sh sid ;;
  snapshot) root=snapshot cc_c=/usr/lib/gcc-snapshot/bin/gcc cc_f=/usr/lib/gcc-snapshot/bin/gfortran dest=.carry/tests17
      [ -x "$WORK/snapshot$cc_c" ] || scripts/toolchain/mkroot.sh snapshot ;;
  *) echo "tests/device/build.sh: GCC must be 16 or snapshot, not '$GCC'" >&2; exit 2 ;;
esac
rm -rf "$dest"; mkdir -p "$WORK/devtests" "$dest"
for src in tests/device/*.c tests/device/*.f90; do
  f=$(basename "$src"); b=${f%.*}
  case $f in *.f90) cc=$cc_f ;; *) cc=$cc_c ;; esac
  case $f in acc_*) model=-fopenacc ;; *) model=-fopenmp ;; esac
  cp "$src" tests/device/gpu_probe.h "$WORK/devtests/"
  extra=$(cat "tests/device/$b.cflags" 2>/dev/null || true)
  scripts/toolchain/inroot.sh $root sh -c "cd /w/devtests && $cc -O2 $extra $model -foffload=nvptx-none $f -o $b"
  cp "$WORK/devtests/$b" "$dest/"
  for x in env expect; do [ ! -f "tests/device/$b.$x" ] || cp "tests/device/$b.$x" "$dest/$b.$x"; done
done
rm -rf "$WORK/devtests/nvtx" .carry/nvtx; mkdir -p .carry/nvtx
cp -r tests/fixtures/nvtx "$WORK/devtests/nvtx"
scripts/toolchain/inroot.sh $root sh -c "cd /w/devtests/nvtx && $cc_c -O2 -shared -fPIC -pthread -Wall -I. inject.c -o libnvtx-inject.so"
cp "$WORK/devtests/nvtx/libnvtx-inject.so" .carry/nvtx/
echo "tests/device: built $(ls "$dest" | grep -vcE '\.(env|expect)$') test(s) into $dest"
