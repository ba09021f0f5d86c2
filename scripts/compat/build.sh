#!/bin/bash
# build.sh - compile programs with older GCCs (gcc-14, gcc-15 from Debian sid, with nvptx
# offloading) into .carry/compat.tar.xz, to run them on libgomp 16 with the stock plugin
# and ours (scripts/compat/run.sh on the GPU machine).
#
# The programs: the project's own (examples/saxpy.c, bench/*.c, tests/device/*.c) and the
# upstream libgomp tests of libgomp.c/target-N.c and a few OpenACC families that need no
# special options, environment, expected output or extra sources. A program an older GCC
# cannot compile is skipped (listed in .carry/compat/skipped.txt).
# Installs gcc-14/gcc-15 and their offload packages into the sid root if missing.
# usage: scripts/compat/build.sh     (env WORK, default ./.toolchain; SRC, the upstream testsuite)
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "compat/build.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 0 ] || { echo "compat/build.sh: takes no arguments, got '$*' (see $0 --help)" >&2; exit 2; }
set -u
cd "$(dirname "$0")/../.."
export WORK=${WORK:-$PWD/.toolchain}
[ -x "$WORK/sid/usr/bin/gcc-16" ] || scripts/toolchain/mkroot.sh sid
for v in 14 15; do
  [ -x "$WORK/sid/usr/bin/gcc-$v" ] && [ -d "$WORK/sid/usr/lib/gcc/x86_64-linux-gnu/$v/accel" ] && continue
  scripts/toolchain/inroot.sh sid sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends gcc-$v gcc-$v-offload-nvptx" > /dev/null || exit 1
done
SRC=${SRC:-$WORK/src-16/libgomp/testsuite}
W=$WORK/compat; rm -rf "$W"; mkdir -p "$W/src"
list=()
for f in examples/saxpy.c bench/offload_bench.c bench/revoff_bench.c bench/acc_bench.c tests/device/alloc_during_kernel.c; do
  list+=("$f")
done
for f in "$SRC"/libgomp.c/target-[0-9]*.c "$SRC"/libgomp.oacc-c-c++-common/{data,reduction,parallel-loop,kernels-loop,loop-red}-*.c; do
  grep -qE 'dg-shouldfail|dg-output|dg-additional-sources|dg-do compile|dg-require|dg-additional-options|dg-set-target-env|dg-xfail' "$f" || list+=("$f")
done
for f in "${list[@]}"; do
  d=$(basename "$(dirname "$f")"); case $d in libgomp.*) n="$d--$(basename "$f" .c)";; *) n=$(basename "$f" .c);; esac
  cp "$f" "$W/src/$n.c"
done
# Test-local headers the upstream tests and the benchmarks include.
cp "$SRC"/libgomp.oacc-c-c++-common/*.h "$W/src/" 2>/dev/null
cp bench/median.h tests/device/gpu_probe.h "$W/src/"
: > "$W/skipped.txt"
for v in 14 15; do
  mkdir -p "$W/gcc-$v"
  for s in "$W"/src/*.c; do
    n=$(basename "$s" .c)
    case $n in *oacc*|acc_bench) lang=-fopenacc ;; *) lang=-fopenmp ;; esac
    if ! timeout 120 scripts/toolchain/inroot.sh sid sh -c \
        "cd /w/compat/src && gcc-$v -O2 $lang -foffload=nvptx-none $n.c -o ../gcc-$v/$n -lm" > "$W/gcc-$v/$n.log" 2>&1; then
      echo "gcc-$v $n" >> "$W/skipped.txt"
    fi
    rm -f "$W/gcc-$v/$n.log"
  done
done
mkdir -p .carry
tar -cJf .carry/compat.tar.xz -C "$WORK" compat/gcc-14 compat/gcc-15 compat/skipped.txt
echo "compat: $(ls "$W"/gcc-14 | wc -l) gcc-14 and $(ls "$W"/gcc-15 | wc -l) gcc-15 programs" \
     "($(wc -l < "$W/skipped.txt") skipped) in .carry/compat.tar.xz ($(du -h .carry/compat.tar.xz | cut -f1))"
