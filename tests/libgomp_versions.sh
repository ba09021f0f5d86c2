#!/bin/bash
# libgomp_versions.sh - the plugin's libgomp detection against stand-in libgomps that
# carry the symbol-version nodes of GCC 11 (too old), 12, 13, 14, 15, 16, 17 and an
# invented newer release (tests/fake_libgomp/). Checks GOMP_OFFLOAD_version's answer (1
# for 12, 2 for 13, 3 for 14-16, 4 for 17, 0 plus a clear message naming the supported
# range otherwise) and that no GPU means 0
# devices; that the gcn plugin under libgomp 12 (which it does not implement) reports
# 0 devices without an error; that under libgomp 12
# and libgomp 17 (whose get_num_devices take no argument) a leftover in the argument
# register is not read as a 'requires' mask (stand-in libcuda with two devices); then
# calls every entry
# point the wrong way and checks the error convention.
# usage: tests/libgomp_versions.sh      (after scripts/build; prints "N passed, M failed")
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "libgomp_versions.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 0 ] || { echo "libgomp_versions.sh: takes no arguments, got '$*' (see $0 --help)" >&2; exit 2; }
set -uo pipefail
cd "$(dirname "$0")/.."
F=tests/fake_libgomp
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cc -O1 "$F/drive.c" -o "$T/drive" -ldl || exit 1
plugin_nodes='GOMP_PLUGIN_1.0 { global: GOMP_PLUGIN_malloc; GOMP_PLUGIN_malloc_cleared; GOMP_PLUGIN_realloc; GOMP_PLUGIN_debug; GOMP_PLUGIN_error; GOMP_PLUGIN_fatal; local: *; };
GOMP_PLUGIN_1.1 { global: GOMP_PLUGIN_target_task_completion; } GOMP_PLUGIN_1.0;
GOMP_PLUGIN_1.4 { global: GOMP_PLUGIN_target_rev; } GOMP_PLUGIN_1.1;'
node() { echo "$1 { global: $2; };"; }
pass=0 fail=0
case_() {  # case_ NAME WANT_VERSION WANT_MESSAGE_REGEX NODE_LINES...
  # env: P (plugin, default nvptx), LIBCUDA (default none), MASK, DEVICES (want, default 0)
  local name=$1 want=$2 msg=$3 p=${P:-nvptx}; shift 3
  mkdir -p "$T/$name"
  { echo "$plugin_nodes"; printf '%s\n' "$@"; } > "$T/$name/map"
  cc -shared -fPIC -Wl,-soname,libgomp.so.1 -Wl,--version-script="$T/$name/map" \
     "$F/fake_libgomp.c" -o "$T/$name/libgomp.so.1" || { fail=$((fail + 1)); return; }
  out=$(LD_LIBRARY_PATH=$T/$name GOMP_PLUGIN_RS_LIBCUDA=${LIBCUDA:-/nonexistent/libcuda.so.1} \
        HSA_RUNTIME_LIB=/nonexistent/libhsa-runtime64.so.1 \
        "$T/drive" "$PWD/target/plugin/$p/libgomp-plugin-$p.so.1" "${MASK:-0}" 2>&1)
  if grep -qx "version=$want" <<< "$out" && grep -qx "devices=${DEVICES:-0}" <<< "$out" &&
     { [ -z "$msg" ] || grep -qE "$msg" <<< "$out"; }; then
    echo "PASS: $name -> version $want"; pass=$((pass + 1))
  else
    echo "FAIL: $name (want version=$want${msg:+, message /$msg/})"; echo "$out" | sed 's/^/    /'
    fail=$((fail + 1))
  fi
}
n12=$(node GOMP_5.1 GOMP_teams4)
n13=$(node GOMP_5.1.1 GOMP_taskwait_depend_nowait)
n14=$(node GOMP_5.1.2 GOMP_add_alloc)
n15=$(node GOMP_6.0 omp_get_uid_from_device)
n16=$(node GOMP_6.0.1 omp_target_memset)
n17=$(node GOMP_6.0.2 GOMP_barrier_ext)
case_ gcc11 0 'does not support a libgomp older than GCC 12' "$(node GOMP_5.0.1 GOMP_alloc)"
case_ gcc12 1 '' "$n12"
case_ gcc13 2 '' "$n12" "$n13"
case_ gcc14 3 '' "$n12" "$n13" "$n14"
case_ gcc15 3 '' "$n12" "$n13" "$n14" "$n15"
case_ gcc16 3 '' "$n12" "$n13" "$n14" "$n15" "$n16"
case_ gcc17 4 '' "$n12" "$n13" "$n14" "$n15" "$n16" "$n17"
case_ gcc18 0 'does not support a libgomp newer than GCC 17 \(defines GOMP_7\.0; supported: libgomp 12 to 17\)' \
  "$n12" "$n13" "$n14" "$n15" "$n16" "$n17" "$(node GOMP_7.0 GOMP_future_entry)"
case_ plugin-abi-1.5 0 'newer than GCC 17 \(defines GOMP_PLUGIN_1\.5; supported: libgomp 12 to 17\)' \
  "$n12" "$n13" "$n14" "$n15" "$n16" "$n17" "$(node GOMP_PLUGIN_1.5 GOMP_future_entry)"
P=gcn case_ gcn-gcc17 4 '' "$n12" "$n13" "$n14" "$n15" "$n16" "$n17"
GOMP_DEBUG=1 P=gcn case_ gcn-gcc12 1 'the gcn plugin supports libgomp 13 and newer, not 12: 0 devices' "$n12"
P=gcn case_ gcn-gcc13 2 '' "$n12" "$n13"

# libgomp 12 calls get_num_devices() without an argument: whatever the register holds
# (here the bit of 'requires unified_shared_memory') must not count as a mask. The same
# bit from libgomp 16 is a real mask the stand-in's devices cannot meet (-1).
grep -rh --include=*.rs -o '^ *cu[A-Za-z0-9_]* = "cu[A-Za-z0-9_]*"' nvptx/src | sed 's/.*"\(.*\)"/STUB(\1)/' | sort -u > "$T/stub_names.h"
if cc -shared -fPIC -pthread -I"$T" tests/fallback/stub_libcuda_2dev.c tests/fallback/stub_libcuda_rest.c \
     -o "$T/libcuda-2dev.so"; then
  LIBCUDA=$T/libcuda-2dev.so MASK=0x20 DEVICES=2 case_ gcc12-leftover-mask 1 '' "$n12"
  LIBCUDA=$T/libcuda-2dev.so MASK=0x20 DEVICES=-1 case_ gcc16-usm-mask 3 '' "$n12" "$n13" "$n14" "$n15" "$n16"
  # libgomp 17 calls get_num_devices() without an argument again: it checks the mask
  # itself against get_caps() | get_dev_caps(device) (docs/plugin-abi.md section 12.3).
  LIBCUDA=$T/libcuda-2dev.so MASK=0x20 DEVICES=2 case_ gcc17-leftover-mask 4 '' "$n12" "$n13" "$n14" "$n15" "$n16" "$n17"
else
  echo "FAIL: building the two-device stand-in libcuda"; fail=$((fail + 1))
fi

# Wrong calls under libgomp 16 without a GPU: error convention, a message, no crash.
cc -O1 "$F/badcalls.c" -o "$T/badcalls" -ldl || exit 1
out=$(LD_LIBRARY_PATH=$T/gcc16 GOMP_PLUGIN_RS_LIBCUDA=/nonexistent/libcuda.so.1 \
      "$T/badcalls" "$PWD/target/plugin/nvptx/libgomp-plugin-nvptx.so.1" 2>&1)
rc=$?
msgs=$(grep -c '^libgomp: ' <<< "$out")
if [ $rc = 0 ] && ! grep -q '^WRONG' <<< "$out" && [ "$msgs" -ge 10 ] &&
   grep -q 'Offload data incompatible with PTX plugin (expected 1, received 2)' <<< "$out"; then
  echo "PASS: $(grep -c '^ok' <<< "$out") wrong calls answered by the error convention, $msgs libgomp: messages"
  pass=$((pass + 1))
else
  echo "FAIL: wrong calls (exit $rc, $msgs messages)"; echo "$out" | sed 's/^/    /'; fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
