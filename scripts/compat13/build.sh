#!/bin/bash
# build.sh - GCC 13 programs on a real libgomp 13, for scripts/compat13/run.sh on the GPU
# machine: proves the plugin's libgomp 13 paths (version() 2, 5-argument load_image,
# 9-argument GOMP_PLUGIN_target_rev with copy callbacks) against the stock GCC 13 plugin.
#
# Ubuntu 24.04 (noble) has gcc-13 and gcc-13-offload-nvptx, but its libgomp1 and
# libgomp-plugin-nvptx1 are GCC 14's (libgomp 14, GOMP_VERSION 3); no reachable archive
# still ships an x86-64 libgomp 13 built for offloading. So libgomp.so.1 13 and the stock
# GCC 13 plugin are built here from Ubuntu's gcc-13 source (13.3.0, `apt-get source` in
# the noble root), configured as Debian/Ubuntu do (--enable-offload-targets=nvptx-none
# --enable-offload-defaulted --without-cuda-driver), with the root's gcc-13.
#
# Programs (gcc-13/gfortran-13 -O2 -foffload=nvptx-none, linked against that libgomp 13):
# examples/saxpy.c, bench/{offload,revoff,acc}_bench.c, tests/device/*.c, every GCC 13
# reverse-offload test (libgomp.c*/reverse-offload-*.c, libgomp.fortran/reverse-offload-*.f90,
# with their dg-additional-options/-sources), and the GCC 13 upstream tests that use
# target/OpenACC constructs and need no special options, environment, expected output or
# extra sources (libgomp.c, libgomp.c-c++-common as C, libgomp.fortran,
# libgomp.oacc-c-c++-common with libgomp's -DACC_DEVICE_TYPE_nvidia=1 -DACC_MEM_SHARED=0).
# Programs that say `requires reverse_offload` get -foffload-options=nvptx-none=-march=sm_35
# (GCC 13 defaults to sm_30 and drops their offload code otherwise). Ubuntu's gcc-13 needs
# -foffload-options=-fcf-protection=none (its default -fcf-protection=full breaks nvptx lto1)
# and -fno-stack-protector (its default -fstack-protector-strong, recorded in the LTO code, leaves
# references to __stack_chk_guard in the PTX, which the JIT rejects).
# Flags as libgomp's own harness adds them: see compile1.sh below.
# A program gcc-13 cannot compile is skipped (compat13/skipped.txt).
#
# Output: $CARRY/compat13.tar.xz (CARRY default .carry): compat13/{bin,lib,lib14,stock13,
# stock14}, programs.tsv, skipped.txt, VERSIONS. lib/ holds the noble root's ld-linux, libc,
# libm, libgcc_s, libgfortran, libquadmath and the libgomp 13; lib14/ noble's own libgomp 14
# and stock14/ its GCC 14 plugin (a second configuration: GCC 13 images on libgomp 14).
# usage: scripts/compat13/build.sh
# env: WORK (default $PWD/.toolchain; the noble root is $WORK/noble), CARRY, JOBS (2).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "compat13/build.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 0 ] || { echo "compat13/build.sh: takes no arguments, got '$*' (see $0 --help)" >&2; exit 2; }
set -u
cd "$(dirname "$0")/../.."
export WORK=${WORK:-$PWD/.toolchain}; CARRY=${CARRY:-$PWD/.carry}; JOBS=${JOBS:-2}
IN() { scripts/toolchain/inroot.sh noble "$@"; }
[ -x "$WORK/noble/usr/bin/gcc-13" ] && [ -d "$WORK/noble/usr/lib/gcc/x86_64-linux-gnu/13/accel" ] ||
  scripts/toolchain/mkroot.sh noble || exit 1

# 1. GCC 13 source: libgomp (+ its testsuite) and the top-level autoconf/libtool helpers.
S=$WORK/src-13
if [ ! -f "$S/libgomp/configure" ]; then
  mkdir -p "$WORK/srcpkg" "$S"
  ls "$WORK"/srcpkg/gcc-13_*.orig.tar.gz > /dev/null 2>&1 ||
    IN sh -c "cd /w/srcpkg && apt-get source --download-only gcc-13" || exit 1
  orig=$(ls "$WORK"/srcpkg/gcc-13_*.orig.tar.gz | tail -1)
  inner=$(tar -tzf "$orig" | grep -E '/gcc-13[0-9.]*\.tar\.xz$')
  top=$(basename "$inner" .tar.xz)
  # the top-level files (configure's aux dir), then the directories libgomp needs
  tar -xzOf "$orig" "$inner" | tar -xJ -C "$S" --strip-components=1 --exclude="$top/*/*" &&
  tar -xzOf "$orig" "$inner" | tar -xJ -C "$S" --strip-components=1 "$top/config" \
    "$top/include" "$top/libgomp" "$top/gcc/BASE-VER" "$top/gcc/DATESTAMP" "$top/gcc/DEV-PHASE" || exit 1
  # Ubuntu's own testsuite changes (git-updates.diff backports), as get-sources.sh does.
  deb=$(ls "$WORK"/srcpkg/gcc-13_*.debian.tar.xz | tail -1)
  tar -xJOf "$deb" debian/patches/git-updates.diff | filterdiff -p2 -i 'libgomp/testsuite/*' |
    (cd "$S" && patch -p2 --forward -s) || true
fi

# 2. libgomp 13 and the stock GCC 13 plugin, built with the root's gcc-13.
G=$WORK/libgomp13
if [ ! -f "$G/build/.libs/libgomp-plugin-nvptx.so.1.0.0" ]; then
  IN sh -c 'rm -rf /w/libgomp13/build && mkdir -p /w/libgomp13/build && cd /w/libgomp13/build &&
    CC=gcc-13 CFLAGS="-O2 -g" /w/src-13/libgomp/configure --build=x86_64-linux-gnu \
      --host=x86_64-linux-gnu --target=x86_64-linux-gnu --prefix=/usr --disable-multilib \
      --enable-offload-targets=nvptx-none --enable-offload-defaulted --without-cuda-driver \
      --enable-linux-futex --enable-tls --enable-cet > configure.log 2>&1 &&
    nice make -j2 > make.log 2>&1' || { echo "libgomp 13 build failed: $G/build/*.log" >&2; exit 1; }
fi
grep -q '"nvptx"' "$G/build/config.h" || { echo "libgomp 13 built without nvptx offloading" >&2; exit 1; }

# 3. The programs: NAME LANG FLAGS SOURCES (tab-separated) in programs.tsv.
W=$WORK/compat13; rm -rf "$W"; mkdir -p "$W/bin" "$W/lib" "$W/lib14" "$W/stock13" "$W/stock14" "$W/tmp"
T=libgomp/testsuite
plan() {  # plan NAME SRC... : one line of programs.tsv
  local n=$1 lang=c flags="" s; shift
  case $1 in *.f90|*.F90) lang=fortran ;; esac
  case $1 in *oacc*|*acc_bench*) flags="-fopenacc -DACC_DEVICE_TYPE_nvidia=1 -DACC_MEM_SHARED=0" ;;
             *) flags=-fopenmp ;; esac
  s=$1; [ -f "$s" ] || s=$S/$1
  grep -qiE 'requires[ ]+reverse_offload' "$s" &&
    flags="$flags -foffload-options=nvptx-none=-march=sm_35"
  printf '%s\t%s\t%s\t%s\n' "$n" "$lang" "$flags" "$*" >> "$W/programs.tsv"
}
: > "$W/programs.tsv"
for f in examples/saxpy.c bench/offload_bench.c bench/revoff_bench.c bench/acc_bench.c tests/device/*.c; do
  mkdir -p "$W/src/$(dirname "$f")"; cp "$f" "$W/src/$f"
  plan "$(basename "$f" .c)" "$f"
  [ -f "${f%.c}.env" ] && cp "${f%.c}.env" "$W/bin/$(basename "$f" .c).env"
done
cp bench/median.h tests/device/gpu_probe.h "$W/src/bench/"
cp tests/device/gpu_probe.h "$W/src/tests/device/"
# Reverse offload: all of them (the sm30 one is link-only; it checks the sm_35 warning).
for f in "$S/$T"/libgomp.c/reverse-offload-*.c "$S/$T"/libgomp.c-c++-common/reverse-offload-*.c \
         "$S/$T"/libgomp.fortran/reverse-offload-*.f90; do
  grep -q 'skip-all-targets\|dg-do link' "$f" && continue
  aux=$(sed -n 's/.*dg-additional-sources[ "]*\([^ "}]*\).*/\1/p' "$f")
  d=$(basename "$(dirname "$f")"); b=$(basename "$f"); b=${b%.*}
  plan "$d--$b" "$T/$d/$(basename "$f")" ${aux:+"$T/$d/$aux"}
done
# The rest of the upstream suite: offload tests that need nothing special.
skip_re='dg-shouldfail|dg-output|dg-additional-sources|dg-do (compile|link|preprocess|assemble)|dg-do run \{|dg-require|dg-additional-options|dg-options|dg-set-target-env|dg-xfail|dg-skip-if|skip-all-targets|dg-additional-files|dg-timeout'
use_re='omp[ ]+target|omp[ ]+requires|pragma[ ]+acc|!\$acc|omp_target_|omp_get_num_devices|omp_get_default_device|acc_[a-z_]+[ ]*\('
for d in libgomp.c libgomp.c-c++-common libgomp.fortran libgomp.oacc-c-c++-common; do
  for f in "$S/$T/$d"/*.c "$S/$T/$d"/*.f90 "$S/$T/$d"/*.F90; do
    [ -f "$f" ] || continue
    case $(basename "$f") in reverse-offload-*) continue ;; esac
    grep -qiE "$use_re" "$f" && ! grep -qE "$skip_re" "$f" || continue
    b=$(basename "$f"); plan "$d--${b%.*}" "$T/$d/$b"
  done
done
cat > "$W/compile1.sh" <<'EOF'
#!/bin/sh
# compile1.sh NAME LANG FLAGS SOURCES (inside the noble root; sources under /w/src-13 or /w/compat13/src)
# As libgomp's harness: -I for gomp-constants.h and libgomp's headers (upstream tests) and,
# for Fortran, the device-side libgfortran; --no-as-needed, as Ubuntu's default --as-needed
# drops libgomp from programs whose only use of it is the offload image's registration.
n=$1 lang=$2 flags=$3 srcs=$4
cc=gcc-13 libs=-lm; [ "$lang" = fortran ] && cc=gfortran-13 libs=-foffload-options=-lgfortran
set --; for s in $srcs; do
  if [ -f "/w/compat13/src/$s" ]; then set -- "$@" "/w/compat13/src/$s"
  else set -- -I/w/src-13/include -I/w/src-13/libgomp "$@" "/w/src-13/$s"; fi
done
mkdir -p "/w/compat13/tmp/$n" && cd "/w/compat13/tmp/$n" &&
if timeout 300 "$cc" -O2 $flags -foffload=nvptx-none -foffload-options=-fcf-protection=none -fno-stack-protector \
     -L/w/libgomp13/build/.libs -Wl,--no-as-needed "$@" -o "/w/compat13/bin/$n" $libs > log.txt 2>&1; then
  echo "ok $n"
else
  echo "$n" >> /w/compat13/skipped.txt; rm -f "/w/compat13/bin/$n"; echo "SKIP $n"
fi
EOF
: > "$W/skipped.txt"
echo "compiling $(wc -l < "$W/programs.tsv") programs with gcc-13 ($JOBS at a time)"
IN sh -c "cd /w/compat13 && tr '\t' '\n' < programs.tsv | nice xargs -d '\n' -n 4 -P $JOBS sh /w/compat13/compile1.sh" |
  grep -c '^ok' | sed 's/^/compiled: /'
awk -F'\t' 'NR==FNR {s[$1]; next} !($1 in s)' "$W/skipped.txt" "$W/programs.tsv" > "$W/tmp/p" &&
  mv "$W/tmp/p" "$W/programs.tsv"

# 4. Libraries: the root's loader and libc family, libgomp 13 + stock 13 plugin, and
# noble's libgomp 14 + stock 14 plugin; stripped.
R=$WORK/noble; RL=$R/usr/lib/x86_64-linux-gnu
for l in libc.so.6 libm.so.6 libgcc_s.so.1 libgfortran.so.5 libquadmath.so.0; do
  cp -L "$RL/$l" "$W/lib/"
done
cp -L "$R/usr/lib64/ld-linux-x86-64.so.2" "$W/lib/"
cp -L "$G/build/.libs/libgomp.so.1" "$W/lib/libgomp.so.1"
cp -L "$G/build/.libs/libgomp-plugin-nvptx.so.1" "$W/stock13/libgomp-plugin-nvptx.so.1"
cp -L "$RL/libgomp.so.1" "$W/lib14/libgomp.so.1"
cp -L "$RL/libgomp-plugin-nvptx.so.1" "$W/stock14/libgomp-plugin-nvptx.so.1"
strip --strip-unneeded "$W"/lib/libgomp.so.1 "$W"/stock13/*.so.1
strip --strip-debug "$W"/bin/* 2> /dev/null
{
  echo "gcc-13: $(IN gcc-13 --version | head -1)"
  echo "gfortran-13: $(IN gfortran-13 --version | head -1)"
  echo "lib/libgomp.so.1 + stock13/: GCC $(cat "$S/gcc/BASE-VER") libgomp built from $(basename "$(ls "$WORK"/srcpkg/gcc-13_*.dsc | tail -1)" .dsc) (Ubuntu noble), GOMP_VERSION $(sed -n 's/^#define GOMP_VERSION\t*[ ]*\([0-9]*\).*/\1/p' "$S/include/gomp-constants.h")"
  echo "lib14/libgomp.so.1 + stock14/: noble $(IN dpkg-query -W -f '${Package} ${Version}\n' libgomp1 libgomp-plugin-nvptx1 | tr '\n' ' ')"
  echo "lib/libc.so.6: noble $(IN dpkg-query -W -f '${Package} ${Version}' libc6)"
} > "$W/VERSIONS"
mkdir -p "$CARRY"
tar -cJf "$CARRY/compat13.tar.xz" -C "$WORK" compat13/bin compat13/lib compat13/lib14 compat13/stock13 \
  compat13/stock14 compat13/programs.tsv compat13/skipped.txt compat13/VERSIONS
echo "compat13: $(ls "$W"/bin | grep -vc '\.env$') programs ($(wc -l < "$W/skipped.txt") skipped)" \
     "in $CARRY/compat13.tar.xz ($(du -h "$CARRY/compat13.tar.xz" | cut -f1))"
