#!/bin/bash
# distro_gcc.sh - the example built by a Debian release's own GCC runs through our
# plugin with that release's own libgomp: Debian 12 (bookworm: gcc-12, libgomp 12) and
# Debian 13 (trixie: gcc-14, libgomp 14), in build roots under $WORK made by
# scripts/toolchain/mkroot.sh on first use. Without a GPU each run falls back to the
# host: the checks are that libgomp loads our plugin, the plugin names the libgomp
# release, the result is right, and what OMP_TARGET_OFFLOAD=mandatory does without a
# device (libgomp 14: an error; libgomp 12: still a fallback). Then `target nowait` in
# task contexts (tests/fallback/nowait_task.c, the shapes of GCC 12's task-7.c and
# task-8.c) on the two-device stand-in libcuda (tests/fallback/stub_libcuda_2dev.c):
# every region launched on the stand-in device and the program ends normally; under
# libgomp 12 through run only (async_run resolves to NULL there, docs/plugin-abi.md
# §4.1), under libgomp 14 through async_run too. With OMP_TARGET_OFFLOAD=disabled the
# same program shows libgomp 12's own defect (it aborts; libgomp 14 does not).
#
# usage: tests/distro_gcc.sh [ROOT...]          (ROOT: bookworm, trixie; default both)
#        tests/distro_gcc.sh --pack DIR [ROOT...]
#   --pack DIR  instead of testing, write what a GPU machine needs to run the same
#               programs into DIR/ROOT/: saxpy (built by that root's GCC), lib/ (the
#               root's loader, glibc, libm, libgomp), stock/ (the root's own
#               libgomp-plugin-nvptx.so.1); scripts/device/distro.sh runs them.
# env: WORK (default ./.toolchain). Needs root (the roots use unshare and chroot) and,
# on first use, network for debootstrap. Run after scripts/build. Prints
# "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; }
pack= roots=()
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --pack) [ $# -ge 2 ] || { echo "distro_gcc.sh: --pack needs a directory" >&2; exit 2; }
            pack=$2; shift ;;
    bookworm|trixie) roots+=("$1") ;;
    *) echo "distro_gcc.sh: unknown argument '$1' (see $0 --help)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#roots[@]} -gt 0 ] || roots=(bookworm trixie)
export WORK=${WORK:-$PWD/.toolchain}
PLUGIN=$PWD/target/plugin/nvptx/libgomp-plugin-nvptx.so.1
[ -f "$PLUGIN" ] || { echo "distro_gcc.sh: $PLUGIN missing (run scripts/build)" >&2; exit 2; }
MA=usr/lib/x86_64-linux-gnu
pass=0 fail=0
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
# The stand-in libcuda with two devices: every driver entry point the plugin binds.
grep -rh --include=*.rs -o '^ *cu[A-Za-z0-9_]* = "cu[A-Za-z0-9_]*"' nvptx/src | sed 's/.*"\(.*\)"/STUB(\1)/' | sort -u > "$T/stub_names.h"
STANDIN=$T/libcuda-2dev.so
cc -shared -fPIC -pthread -I"$T" tests/fallback/stub_libcuda_2dev.c tests/fallback/stub_libcuda_rest.c \
  -o "$STANDIN" || { echo "distro_gcc.sh: building the stand-in libcuda failed" >&2; exit 1; }
ok() { echo "PASS: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; shift; printf '%s\n' "$@" | sed 's/^/    /' | tail -25; fail=$((fail + 1)); }

for root in "${roots[@]}"; do
  case $root in bookworm) V=12 ;; trixie) V=14 ;; esac
  R=$WORK/$root
  if [ ! -x "$R/usr/bin/gcc-$V" ]; then
    log=$WORK/logs/mkroot-$root.log; mkdir -p "$WORK/logs"
    scripts/toolchain/mkroot.sh "$root" > "$log" 2>&1 ||
      { bad "$root: making the root (log: $log)" "$(tail -5 "$log")"; continue; }
  fi
  mkdir -p "$WORK/distro-$root"
  cp examples/saxpy.c tests/fallback/nowait_task.c "$WORK/distro-$root/"
  # As a user of that release would: its gcc-N and gcc-N-offload-nvptx, nothing else.
  if ! out=$(scripts/toolchain/inroot.sh "$root" sh -c \
       "cd /w/distro-$root && gcc-$V -O2 -fopenmp -foffload=nvptx-none saxpy.c -o saxpy -lm &&
        gcc-$V -O2 -fopenmp -foffload=nvptx-none nowait_task.c -o nowait_task" 2>&1); then
    bad "$root: gcc-$V -fopenmp -foffload=nvptx-none saxpy.c nowait_task.c" "$out"; continue
  fi
  if [ -n "$pack" ]; then
    D=$pack/$root; rm -rf "$D"; mkdir -p "$D/lib" "$D/stock"
    cp "$WORK/distro-$root/saxpy" "$D/"
    cp -L "$R/lib64/ld-linux-x86-64.so.2" "$D/lib/"
    for l in libc.so.6 libm.so.6 libgomp.so.1 libdl.so.2 libpthread.so.0 librt.so.1; do
      f=$(ls "$R/$MA/$l" "$R/lib/x86_64-linux-gnu/$l" 2>/dev/null | head -1)
      [ -n "$f" ] && cp -L "$f" "$D/lib/"
    done
    cp -L "$R/$MA/libgomp-plugin-nvptx.so.1" "$D/stock/"
    inner=$(scripts/toolchain/inroot.sh "$root" dpkg-query -W -f '${Package} ${Version}\n' gcc-$V gcc-$V-offload-nvptx libgomp1 libc6)
    printf 'Debian %s: saxpy built with gcc-%s -O2 -fopenmp -foffload=nvptx-none\n%s\n' "$root" "$V" "$inner" > "$D/VERSION"
    ok "$root: packed into $D ($(du -sh "$D" | cut -f1))"
    continue
  fi
  run() {  # run ENV...: the program with the root's loader and libraries, our plugin first
    env GOMP_PLUGIN_RS_LIBCUDA=/nonexistent/libcuda.so.1 "$@" "$R/lib64/ld-linux-x86-64.so.2" \
      --library-path "$(dirname "$PLUGIN"):$R/$MA:$R/lib/x86_64-linux-gnu" "$WORK/distro-$root/saxpy" 1000 2>&1
  }
  out=$(run GOMP_DEBUG=1)
  if grep -q "^offload plugin: $PLUGIN" <<< "$out" &&
     grep -qE "gomp-plugin-rs [0-9.]+ loaded by libgomp $V " <<< "$out" &&
     grep -q 'ran on the host (fallback)' <<< "$out" && grep -q '^OK: 0 of 1000 elements wrong' <<< "$out"; then
    ok "$root: gcc-$V's program, libgomp $V loads our plugin, host fallback, right result"
  else
    bad "$root: gcc-$V's program through our plugin with libgomp $V" "$out"
  fi
  # OMP_TARGET_OFFLOAD=mandatory: from libgomp 13 on, no device is an error instead of a
  # silent fallback. libgomp 12 still runs on the host when there is no device at all
  # (its device 0 is then the host; its check covers only a device that exists but
  # cannot be used): the README says so.
  out=$(run OMP_TARGET_OFFLOAD=mandatory); rc=$?
  if [ "$V" -ge 13 ]; then
    if [ "$rc" != 0 ] && grep -q '^libgomp: OMP_TARGET_OFFLOAD is set to MANDATORY' <<< "$out" &&
       ! grep -q '^OK' <<< "$out"; then
      ok "$root: OMP_TARGET_OFFLOAD=mandatory without a device ends with libgomp's error (exit $rc)"
    else
      bad "$root: OMP_TARGET_OFFLOAD=mandatory (exit $rc)" "$out"
    fi
  elif [ "$rc" = 0 ] && grep -q 'ran on the host (fallback)' <<< "$out"; then
    ok "$root: OMP_TARGET_OFFLOAD=mandatory without any device: libgomp $V still falls back (as documented)"
  else
    bad "$root: OMP_TARGET_OFFLOAD=mandatory under libgomp $V (exit $rc)" "$out"
  fi
  # target nowait in tasks, on the stand-in device; the trace's host spans tell run
  # from async_run.
  nowait() {  # nowait ENV...: nowait_task with the root's loader and libraries
    env "$@" "$R/lib64/ld-linux-x86-64.so.2" --library-path \
      "$(dirname "$PLUGIN"):$R/$MA:$R/lib/x86_64-linux-gnu" "$WORK/distro-$root/nowait_task" 2>&1
  }
  rm -f "$T/trace.json"
  out=$(nowait GOMP_DEBUG=1 GOMP_PLUGIN_RS_LIBCUDA="$STANDIN" GOMP_NVPTX_TRACE="$T/trace.json"); rc=$?
  launches=$(grep -c 'kernel [^ ]*_omp_fn[^ ]*: launch ' <<< "$out")
  runs=$(grep -o '"name":"run"' "$T/trace.json" 2>/dev/null | wc -l)
  asyncs=$(grep -o '"name":"async_run"' "$T/trace.json" 2>/dev/null | wc -l)
  what="exit $rc, $launches launch(es), trace: $runs run, $asyncs async_run"
  if [ "$rc" = 0 ] && grep -q '^nowait_task: 4 regions done$' <<< "$out" && [ "$launches" = 4 ] &&
     [ $((runs + asyncs)) = 4 ] &&
     if [ "$V" = 12 ]; then [ "$asyncs" = 0 ] && grep -q 'libgomp 12: async_run not offered' <<< "$out"
     else [ "$asyncs" -ge 1 ] && ! grep -q 'async_run not offered' <<< "$out"; fi; then
    ok "$root: target nowait in tasks outside parallel (task-7/task-8 shapes), 4 regions on the stand-in device ($what)"
  else
    bad "$root: target nowait in tasks on the stand-in device ($what)" "$out"
  fi
  out=$(nowait OMP_TARGET_OFFLOAD=disabled); rc=$?
  if { [ "$V" = 12 ] && [ "$rc" = 134 ]; } || { [ "$V" != 12 ] && [ "$rc" = 0 ]; }; then
    ok "$root: the same program on the host without any plugin: libgomp $V's own behaviour (exit $rc)"
  else
    bad "$root: nowait_task with OMP_TARGET_OFFLOAD=disabled under libgomp $V (exit $rc)" "$out"
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
