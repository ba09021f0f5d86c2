#!/bin/bash
# host_fallback.sh - GPU-less integration tests: the real libgomp 16 (Debian sid root,
# made by scripts/toolchain/mkroot.sh) loads our plugin, handshakes, finds no device and
# the offload program falls back to the host with a correct result; stand-in libcuda
# libraries exercise the driver table's failure paths; the prebuilt upstream bundles
# ($BUNDLES, default $WORK/bundles, when present: scripts/setup --bundles DIR links a
# directory of them there) check version detection for libgomp 14 and 16 and
# run a slice of the upstream suite through our plugin on the host; the experimental
# gcn plugin is loaded beside it by real libgomp 16 and driven against stand-in HSA
# runtimes (section 2c; a stand-in is not an AMD GPU: nothing here ran on one).
# usage: tests/host_fallback.sh        (after scripts/build; prints "N passed, M failed,
#        K skipped"; a check that cannot run says so on a line "SKIPPED N: ...")
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "host_fallback.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 0 ] || { echo "host_fallback.sh: takes no arguments, got '$*' (see $0 --help)" >&2; exit 2; }
set -uo pipefail
cd "$(dirname "$0")/.."
export WORK=${WORK:-$PWD/.toolchain}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
pass=0 fail=0 skip=0
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
  has "offload plugin: $PWD/target/plugin/nvptx/libgomp-plugin-nvptx.so.1" &&
  has 'gomp-plugin-rs [0-9.]+ loaded by libgomp 16' &&
  has 'no CUDA devices: cannot load /nonexistent/libcuda.so.1' &&
  has 'ran on the host \(fallback\) \(0 offload device' && has '^OK: 0 of 100000 elements wrong' &&
  has '^why: no CUDA driver loaded'
}
check "example: libgomp 16 loads our plugin, 0 devices, host fallback, correct result" example

# 2. Stand-in libcuda libraries (the example binary built in step 1).
R=$WORK/sid
# Our gcn plugin's directory too: once section 2c has added Debian's gcn plugin and HSA
# runtime to the root, that plugin's failing hsa_init (no AMD GPU) would be fatal.
run_with_cuda() {  # run_with_cuda LIBCUDA
  GOMP_DEBUG=1 GOMP_PLUGIN_RS_LIBCUDA=$1 "$R/lib64/ld-linux-x86-64.so.2" --library-path \
    "$PWD/target/plugin/nvptx:$PWD/target/plugin/gcn:$R/usr/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu" "$WORK/examples/saxpy" 1000 2>&1
}
sed -n 's/^ *cu[A-Za-z0-9_]* = "\(cu[A-Za-z0-9_]*\)".*/\1/p' nvptx/src/cuda/table.rs |
  grep -vxE 'cuInit|cuDeviceGetCount|cuGetErrorString' | sed 's/.*/STUB(&)/' > "$T/stub_names.h"
cc -shared -fPIC -DPARTIAL -DSTUB_INIT_RESULT=0 tests/fallback/stub_libcuda.c -o "$T/partial.so"
cc -shared -fPIC -I"$T" -DSTUB_INIT_RESULT=100 tests/fallback/stub_libcuda.c -o "$T/nodev.so"
cc -shared -fPIC -I"$T" -DSTUB_INIT_RESULT=0 tests/fallback/stub_libcuda.c -o "$T/zero.so"
partial() { out=$(run_with_cuda "$T/partial.so") && has "'libcuda.so.1' is missing 'cuDriverGetVersion'" && has '^OK'; }
nodev() { out=$(run_with_cuda "$T/nodev.so") && has 'no CUDA devices: cuInit error: stub error text' && has '^OK' &&
  has '^why: the CUDA driver is loaded but offers no usable device'; }
zero() { out=$(run_with_cuda "$T/zero.so") && has 'CUDA driver 0.0, 0 device' && has 'host \(fallback\)' && has '^OK'; }
check "libcuda lacking required entry points: 0 devices, clear debug line" partial
check "cuInit says no device: 0 devices" nodev
check "driver with zero devices: 0 devices" zero

# 2b. The plugin's own API (gomp_nvptx_host_lock/unlock) without a GPU: clean errors.
cc -O1 tests/fallback/host_lock.c -o "$T/host_lock" -ldl
host_lock() {  # host_lock LIBCUDA
  GOMP_PLUGIN_RS_LIBCUDA=$1 "$T/host_lock" "$PWD/target/plugin/nvptx/libgomp-plugin-nvptx.so.1" 2>&1
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

# 2c. The experimental gcn plugin (target/plugin/gcn/libgomp-plugin-gcn.so.1) beside ours:
# real libgomp 16 loads both, each reports 0 devices, and programs built with
# -foffload=amdgcn-amdhsa (and with nvptx-none,amdgcn-amdhsa) run on the host. The
# amdgcn offload compiler is added to the sid root on first use.
[ -x "$R/usr/bin/x86_64-linux-gnu-accel-amdgcn-amdhsa-gcc-16" ] ||
  scripts/toolchain/inroot.sh sid sh -c \
    'apt-get install -y -qq --no-install-recommends gcc-16-offload-amdgcn || { apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc-16-offload-amdgcn; }' >/dev/null
mkdir -p "$WORK/examples" && cp examples/saxpy.c "$WORK/examples/saxpy-gcn.c"
scripts/toolchain/inroot.sh sid sh -c "cd /w/examples &&
  gcc-16 -O2 -fopenmp -foffload=amdgcn-amdhsa -foffload-options=-lm saxpy-gcn.c -o saxpy-gcn -lm &&
  gcc-16 -O2 -fopenmp -foffload=nvptx-none,amdgcn-amdhsa -foffload-options=-lm saxpy-gcn.c -o saxpy-both -lm" ||
  echo "amdgcn example build failed"
run_gcn() {  # run_gcn PROGRAM LIBHSA
  GOMP_DEBUG=1 HSA_RUNTIME_LIB=$2 GOMP_PLUGIN_RS_LIBCUDA=/nonexistent/libcuda.so.1 \
    "$R/lib64/ld-linux-x86-64.so.2" --library-path \
    "$PWD/target/plugin/nvptx:$PWD/target/plugin/gcn:$R/usr/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu" "$WORK/examples/$1" 1000 2>&1
}
both_loaded() {
  has "offload plugin: $PWD/target/plugin/nvptx/libgomp-plugin-nvptx.so.1" &&
  has "offload plugin: $PWD/target/plugin/gcn/libgomp-plugin-gcn.so.1" &&
  has '^gcn \(gomp-plugin-rs\): gomp-plugin-rs [0-9.]+ \(gcn, experimental\) loaded by libgomp 16' &&
  has 'ran on the host \(fallback\) \(0 offload device' && has '^OK: 0 of 1000 elements wrong'
}
gcn_example() {
  out=$(run_gcn saxpy-gcn /nonexistent/libhsa-runtime64.so.1) && both_loaded &&
  has '^gcn \(gomp-plugin-rs\): no HSA devices: cannot load /nonexistent/libhsa-runtime64.so.1'
}
gcn_both() {
  out=$(run_gcn saxpy-both /nonexistent/libhsa-runtime64.so.1) && both_loaded &&
  has 'no CUDA devices: cannot load' && has 'no HSA devices: cannot load'
}
check "gcn: -foffload=amdgcn-amdhsa program, libgomp 16 loads both our plugins, 0 devices, host fallback" gcn_example
check "gcn: -foffload=nvptx-none,amdgcn-amdhsa program, both plugins 0 devices, host fallback" gcn_both
sed -n 's/^ *\(hsa_[a-z0-9_]*\) = "hsa_.*/\1/p' gcn/src/hsa/table.rs |
  grep -vxE 'hsa_init|hsa_status_string|hsa_iterate_agents' | sed 's/.*/STUB(&)/' > "$T/stub_names.h"
cc -shared -fPIC -DPARTIAL -DINIT_RESULT=0 tests/fallback/stub_libhsa.c -o "$T/hsa_partial.so"
cc -shared -fPIC -I"$T" -DINIT_RESULT=0x1000 tests/fallback/stub_libhsa.c -o "$T/hsa_initfail.so"
cc -shared -fPIC -I"$T" -DINIT_RESULT=0 tests/fallback/stub_libhsa.c -o "$T/hsa_noagent.so"
hsa_partial() { out=$(run_gcn saxpy-gcn "$T/hsa_partial.so") && has "is missing 'hsa_shut_down'" && has '^OK'; }
hsa_initfail() { out=$(run_gcn saxpy-gcn "$T/hsa_initfail.so") && has 'no HSA devices: hsa_init error: stub error text' && has '^OK'; }
hsa_noagent() { out=$(run_gcn saxpy-gcn "$T/hsa_noagent.so") && has 'HSA runtime loaded, but no GPU agent: 0 devices' && has '^OK'; }
check "gcn: libhsa lacking required entry points: 0 devices, clear debug line" hsa_partial
check "gcn: hsa_init fails: 0 devices" hsa_initfail
check "gcn: runtime with no GPU agent: 0 devices" hsa_noagent
# A stand-in runtime with one GPU agent (gfx90a) serving memory from host memory and
# loading code objects into it (tests/fallback/stub_libhsa.c, which defines every entry
# point itself): our gcn entry points driven directly (tests/fallback/gcn_calls.c) with
# real GCC 16 images. This checks the plugin's HSA call sequence and bookkeeping
# against a stand-in, not behaviour on an AMD GPU.
cc -shared -fPIC -DINIT_RESULT=0 '-DONE_GPU="gfx90a"' tests/fallback/stub_libhsa.c -o "$T/hsa_gpu.so"
cc -O1 tests/fallback/gcn_calls.c -o "$T/gcn_calls" -ldl
for f in vadd-gfx90a vadd-gfx908 vars-gfx90a; do xz -dc "tests/fixtures/gcn/$f.hsaco.xz" > "$T/$f.hsaco"; done
gcn_calls() {
  out=$(GOMP_DEBUG=1 HSA_RUNTIME_LIB=$T/hsa_gpu.so \
        "$R/lib64/ld-linux-x86-64.so.2" --library-path "$R/usr/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu" \
        "$T/gcn_calls" "$PWD/target/plugin/gcn/libgomp-plugin-gcn.so.1" "$T/hsa_gpu.so" \
        "$T/vadd-gfx90a.hsaco" "$T/vadd-gfx908.hsaco" "$T/vars-gfx90a.hsaco" 2>&1) &&
  ! grep -q '^WRONG' <<< "$out" && [ "$(grep -c '^ok:' <<< "$out")" -ge 50 ] &&
  has 'device 0: gfx90a opened \(base profile' &&
  has '^libgomp: gcn device 0 is already open' && has '^libgomp: invalid device address 0x' &&
  has '^libgomp: invalid size' &&
  has 'loaded image .* \(4 kernel\(s\) of which 2 offload function\(s\), 2 variable\(s\)\); table of 5 entries' &&
  has 'kernel main._omp_fn.0: object 0x[0-9a-f]+, kernargs 8 bytes \(align 8\), group 1536 bytes' &&
  has '^libgomp: gcn image is for gfx908, the device is gfx90a' &&
  has "kernel 'nosuch._omp_fn.9' has no kernel descriptor 'nosuch._omp_fn.9.kd': loaded, not launchable" &&
  has '^libgomp: GOMP_OFFLOAD_load_image: an image with 1 indirect function' &&
  has 'Offload data incompatible with GCN plugin \(expected 3, received 4\)' && has '^libgomp: unload_image: image 0x[0-9a-f]+ is not loaded' &&
  has 'device 0: closed \(1 image\(s\) unloaded, 1 block\(s\) freed\)'
}
# Real libgomp 16 runs a real amdgcn program (tests/fallback/gcn_target.c) through our
# plugin on the stand-in's device, whose script reproduces the target region's
# host-visible effects (its printf line, its store to x, its exit status); the stand-in
# checks every packet and kernarg block against docs/gcn-launch.md ("stub-hsa: BAD").
cp tests/fallback/gcn_target.c "$WORK/examples/gcn_target.c"
scripts/toolchain/inroot.sh sid sh -c "cd /w/examples && gcc-16 -O2 -fopenmp -foffload=amdgcn-amdhsa gcn_target.c -o gcn_target" ||
  echo "amdgcn gcn_target build failed"
# And an OpenACC program (tests/fallback/gcn_acc.c): a parallel region with 3 gangs x 5
# workers, then one on async queue 1 and acc wait; the stand-in expects OpenACC
# launches (STUB_HSA_OPENACC: no team arena) and stores 42 through devaddrs[0].
cp tests/fallback/gcn_acc.c "$WORK/examples/gcn_acc.c"
scripts/toolchain/inroot.sh sid sh -c "cd /w/examples && gcc-16 -O2 -fopenacc -foffload=amdgcn-amdhsa gcn_acc.c -o gcn_acc" ||
  echo "amdgcn gcn_acc build failed"
gcn_target_run() {
  out=$(STUB_HSA_SCRIPT=text:hello_from_the_device,store:1:42 STUB_HSA_EXPECT_GRID=1,16 \
        run_gcn gcn_target "$T/hsa_gpu.so") &&
  has 'device 0: loaded image .* \(3 kernel\(s\) of which 1 offload function\(s\), 0 variable\(s\)\); table of 2 entries' &&
  has '^stub-hsa: packet _init_array grid=1,64,1 wg=1,64,1 lds=65536$' &&
  has '^stub-hsa: packet main._omp_fn.0 grid=1,64,16 wg=1,64,16 lds=65536$' &&
  has '^hello from the device$' && has '^x=42$' &&
  has '^stub-hsa: packet _fini_array grid=1,64,1' && ! grep -q 'stub-hsa: BAD' <<< "$out"
}
gcn_target_exit() {
  out=$(GCN_TARGET_EXIT=3 STUB_HSA_SCRIPT=text:hello_from_the_device,store:1:42,exit:3 \
        run_gcn gcn_target "$T/hsa_gpu.so"); local rc=$?
  [ "$rc" = 3 ] || { echo "exit status $rc, want 3"; echo "$out"; return 1; }
  has '^hello from the device$' && ! grep -q '^x=' <<< "$out" && ! grep -q 'stub-hsa: BAD' <<< "$out"
}
check "gcn: libgomp 16 runs a real amdgcn program's target region through us on the stand-in device: packets as specified, printf, store, x=42" gcn_target_run
check "gcn: exit(3) in the target region: the program exits with status 3 after the device's output (stand-in)" gcn_target_exit
gcn_acc_run() {
  out=$(STUB_HSA_OPENACC=1 STUB_HSA_SCRIPT=store:0:42 run_gcn gcn_acc "$T/hsa_gpu.so") &&
  has 'OpenACC kernel main._omp_fn.0: dims \[0, 0, 0\], compile-time \[3, 5, 1\]: 3 gang\(s\) x 5 worker\(s\)' &&
  has '^stub-hsa: packet main._omp_fn.0 grid=3,64,5 wg=1,64,5 lds=65536$' &&
  has 'device 0: OpenACC async queue created' && has '^stub-hsa: packet main._omp_fn.1 grid=' &&
  has 'device 0: OpenACC async queue destroyed' &&
  has '^x=42$' && has '^y=42$' && ! grep -q 'stub-hsa: BAD' <<< "$out"
}
check "gcn: libgomp 16 runs a real OpenACC program through us on the stand-in device: parallel 3 gangs x 5 workers, async(1) + wait, x=42 y=42" gcn_acc_run
check "gcn: stand-in runtime with one gfx90a agent: open, memory round trips, memset, free, load/unload of real images, bad calls (stand-in, not hardware)" gcn_calls
gcn_exports() {  # the exported set is exactly libgomp-gcn.map's, SONAME right, all in the stock plugin
  local so=target/plugin/gcn/libgomp-plugin-gcn.so.1
  out=$(readelf -d "$so"; nm -D --defined-only "$so"; nm -D --defined-only "$R/usr/lib/x86_64-linux-gnu/libgomp-plugin-gcn.so.1") || return 1
  has 'SONAME.*\[libgomp-plugin-gcn.so.1\]' || return 1
  diff <(nm -D --defined-only "$so" | awk '{print $3}' | sort) \
       <(sed -n 's/^ *\(GOMP_OFFLOAD_[a-z0-9_]*\);/\1/p' libgomp-gcn.map | sort) &&
  comm -23 <(nm -D --defined-only "$so" | awk '{print $3}' | sort) \
       <({ nm -D --defined-only "$R/usr/lib/x86_64-linux-gnu/libgomp-plugin-gcn.so.1" | awk '{print $3}'
           grep -v '^#' abi-tests/libgomp17-lookups.tsv | cut -f1 | sed 's/^/GOMP_OFFLOAD_/'; } | sort -u) | { ! grep .; }
}
check "gcn: exports exactly libgomp-gcn.map, all also exported by GCC 16's gcn plugin or looked up by libgomp 17 (abi-tests/libgomp17-lookups.tsv)" gcn_exports

# 2d. Debian's real ROCr runtime (libhsa-runtime64-1, added to the sid root on first use)
# on a machine without /dev/kfd: hsa_init fails. Ours reports 0 devices with one debug
# line and the program runs on the host; GCC 16's own gcn plugin (same root) ends the
# program with status 1 (docs/gcn-launch.md §7). Skipped where /dev/kfd exists.
[ -e "$R/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1" ] ||
  scripts/toolchain/inroot.sh sid sh -c \
    'apt-get install -y -qq --no-install-recommends libhsa-runtime64-1 || { apt-get update -qq && apt-get install -y -qq --no-install-recommends libhsa-runtime64-1; }' >/dev/null
rocr_no_gpu() {
  out=$(run_gcn saxpy-gcn libhsa-runtime64.so.1) &&
  has '^gcn \(gomp-plugin-rs\): no HSA devices: hsa_init error: HSA_STATUS_ERROR_OUT_OF_RESOURCES' &&
  [ "$(grep -c '^gcn (gomp-plugin-rs): no HSA devices' <<< "$out")" = 1 ] &&
  has 'ran on the host \(fallback\) \(0 offload device' && has '^OK: 0 of 1000 elements wrong' || return 1
  out=$(GOMP_DEBUG=1 "$R/lib64/ld-linux-x86-64.so.2" --library-path "$R/usr/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu" \
        "$WORK/examples/saxpy-gcn" 1000 2>&1); local rc=$?
  [ "$rc" = 1 ] || { echo "stock plugin: exit status $rc, want 1"; echo "$out"; return 1; }
  has '^libgomp: GCN fatal error: Run-time could not be initialized' && ! grep -q '^OK' <<< "$out"
}
if [ -e /dev/kfd ]; then
  echo "SKIPPED 1: gcn: Debian's ROCr without a GPU (this machine has /dev/kfd; the check needs one without it)"
  skip=$((skip + 1))
else check "gcn: Debian's ROCr without /dev/kfd: ours 0 devices + host fallback, GCC 16's gcn plugin exits with status 1" rocr_no_gpu; fi

# 3. Upstream bundles: version detection and a slice of the suite, on the host.
B=${BUNDLES:-$WORK/bundles}
for v in 16 14; do
  if [ ! -e "$B/bundle-$v.tar.xz" ]; then
    echo "SKIPPED 2: bundle-$v checks ($B/bundle-$v.tar.xz absent; link a directory holding it there with scripts/setup --bundles DIR, or set BUNDLES to it; scripts/toolchain/mkbundle.sh makes one)"
    skip=$((skip + 2)); continue
  fi
  tar -xJf "$B/bundle-$v.tar.xz" -C "$T" || { fail=$((fail + 1)); continue; }
  detect() {
    out=$(EXTRA_ENV=GOMP_DEBUG=1 KEEP=1 FILTER='^libgomp.c-c\+\+-common/target-1\.c$' \
          PLUGIN_DIR=target/plugin/nvptx OUT=$T/res-$v "$T/bundle-$v/run-tests.sh" 2>&1 &&
          cat "$T/res-$v"/run/*/output.txt) && has "loaded by libgomp $v" && has 'no CUDA devices'
  }
  check "bundle-$v: our plugin detects libgomp $v" detect
  slice() {
    out=$(FILTER='^libgomp\.c-c\+\+-common/target-[0-9]+\.c$' JOBS=2 PLUGIN_DIR=target/plugin/nvptx \
          OUT=$T/slice-$v "$T/bundle-$v/run-tests.sh" 2>&1) && has '^[1-9][0-9]* passed, 0 failed'
  }
  check "bundle-$v: upstream target-N.c tests pass on the host through our plugin" slice
  rm -rf "$T/bundle-$v"
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
