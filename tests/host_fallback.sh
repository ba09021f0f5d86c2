#!/bin/bash
# host_fallback.sh - GPU-less integration tests: the real libgomp 16 (Debian sid root,
# made by scripts/toolchain/mkroot.sh) loads our plugin, handshakes, finds no device and
# the offload program falls back to the host with a correct result; stand-in libcuda
# libraries exercise the driver table's failure paths; the prebuilt upstream bundles
# (../shared/bundles, when present) check version detection for libgomp 14 and 16 and
# run a slice of the upstream suite through our plugin on the host.
# usage: tests/host_fallback.sh        (after scripts/build; prints "N passed, M failed")
set -uo pipefail
cd "$(dirname "$0")/.."
export WORK=${WORK:-$PWD/.toolchain}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
pass=0 fail=0
check() {  # check NAME COMMAND... : run, count, show the output on failure
  local name=$1; shift
  if out=$("$@" 2>&1); then echo "PASS: $name"; pass=$((pass + 1))
  else echo "FAIL: $name"; echo "$out" | sed 's/^/    /' | tail -20; fail=$((fail + 1)); fi
}
has() { grep -qE -- "$1" <<< "$out" || { echo "missing: $1"; echo "$out"; return 1; }; }

# 1. The main job on a machine without GPU: host fallback through our plugin.
example() {
  out=$(env -u LD_LIBRARY_PATH GOMP_PLUGIN_RS_LIBCUDA=/nonexistent/libcuda.so.1 \
        EXTRA_ENV=GOMP_DEBUG=1 scripts/run-example 100000 2>&1) || { echo "$out"; return 1; }
  has "offload plugin: $PWD/target/plugin/libgomp-plugin-nvptx.so.1" &&
  has 'gomp-plugin-rs [0-9.]+ loaded by libgomp 16' &&
  has 'no CUDA devices: cannot load /nonexistent/libcuda.so.1' &&
  has 'ran on the host \(fallback\) \(0 offload device' && has '^OK: 0 of 100000 elements wrong'
}
check "example: libgomp 16 loads our plugin, 0 devices, host fallback, correct result" example

# 2. Stand-in libcuda libraries (the example binary built in step 1).
R=$WORK/sid
run_with_cuda() {  # run_with_cuda LIBCUDA
  GOMP_DEBUG=1 GOMP_PLUGIN_RS_LIBCUDA=$1 "$R/lib64/ld-linux-x86-64.so.2" --library-path \
    "$PWD/target/plugin:$R/usr/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu" "$WORK/examples/saxpy" 1000 2>&1
}
sed -n 's/^ *cu[A-Za-z0-9_]* = "\(cu[A-Za-z0-9_]*\)".*/\1/p' src/cuda/driver.rs |
  grep -vxE 'cuInit|cuDeviceGetCount|cuGetErrorString' | sed 's/.*/STUB(&)/' > "$T/stub_names.h"
cc -shared -fPIC -DPARTIAL -DSTUB_INIT_RESULT=0 tests/fallback/stub_libcuda.c -o "$T/partial.so"
cc -shared -fPIC -I"$T" -DSTUB_INIT_RESULT=100 tests/fallback/stub_libcuda.c -o "$T/nodev.so"
cc -shared -fPIC -I"$T" -DSTUB_INIT_RESULT=0 tests/fallback/stub_libcuda.c -o "$T/zero.so"
partial() { out=$(run_with_cuda "$T/partial.so") && has "'libcuda.so.1' is missing 'cuDriverGetVersion'" && has '^OK'; }
nodev() { out=$(run_with_cuda "$T/nodev.so") && has 'no CUDA devices: cuInit error: stub error text' && has '^OK'; }
zero() { out=$(run_with_cuda "$T/zero.so") && has 'CUDA driver 0.0, 0 device' && has 'host \(fallback\)' && has '^OK'; }
check "libcuda lacking required entry points: 0 devices, clear debug line" partial
check "cuInit says no device: 0 devices" nodev
check "driver with zero devices: 0 devices" zero

# 2b. The plugin's own API (gomp_nvptx_host_lock/unlock) without a GPU: clean errors.
cc -O1 tests/fallback/host_lock.c -o "$T/host_lock" -ldl
host_lock() {  # host_lock LIBCUDA
  GOMP_PLUGIN_RS_LIBCUDA=$1 "$T/host_lock" "$PWD/target/plugin/libgomp-plugin-nvptx.so.1" 2>&1
}
lock_nodriver() {
  out=$(host_lock /nonexistent/libcuda.so.1) && has '^lock=1 unlock=1 null=1$' &&
  has '^libgomp: gomp_nvptx_host_lock: no CUDA driver: cannot load /nonexistent' &&
  has '^libgomp: gomp_nvptx_host_unlock: no CUDA driver' &&
  has '^libgomp: gomp_nvptx_host_lock: nothing to lock'
}
lock_nodevice() {
  out=$(host_lock "$T/zero.so") && has '^lock=1 unlock=1 null=1$' &&
  has '^libgomp: gomp_nvptx_host_lock: no nvptx device 0 \(the driver reports 0\)'
}
check "gomp_nvptx_host_lock/unlock without a driver: nonzero, libgomp: message" lock_nodriver
check "gomp_nvptx_host_lock/unlock without a device: nonzero, libgomp: message" lock_nodevice

# 3. Upstream bundles: version detection and a slice of the suite, on the host.
B=${BUNDLES:-../shared/bundles}
for v in 16 14; do
  if [ ! -e "$B/bundle-$v.tar.xz" ]; then
    echo "NOT RUN: bundle-$v checks ($B/bundle-$v.tar.xz absent)"; continue
  fi
  tar -xJf "$B/bundle-$v.tar.xz" -C "$T" || { fail=$((fail + 1)); continue; }
  detect() {
    out=$(EXTRA_ENV=GOMP_DEBUG=1 KEEP=1 FILTER='^libgomp.c-c\+\+-common/target-1\.c$' \
          PLUGIN_DIR=target/plugin OUT=$T/res-$v "$T/bundle-$v/run-tests.sh" 2>&1 &&
          cat "$T/res-$v"/run/*/output.txt) && has "loaded by libgomp $v" && has 'no CUDA devices'
  }
  check "bundle-$v: our plugin detects libgomp $v" detect
  slice() {
    out=$(FILTER='^libgomp\.c-c\+\+-common/target-[0-9]+\.c$' JOBS=2 PLUGIN_DIR=target/plugin \
          OUT=$T/slice-$v "$T/bundle-$v/run-tests.sh" 2>&1) && has '^[1-9][0-9]* passed, 0 failed'
  }
  check "bundle-$v: upstream target-N.c tests pass on the host through our plugin" slice
  rm -rf "$T/bundle-$v"
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
