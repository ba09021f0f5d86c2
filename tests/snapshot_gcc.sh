#!/bin/bash
# snapshot_gcc.sh - libgomp 17 (GCC's development branch as Debian's gcc-snapshot ships
# it, /usr/lib/gcc-snapshot in the root $WORK/snapshot, made on first use by
# scripts/toolchain/mkroot.sh snapshot) loads our plugins and launches through its
# session protocol (docs/plugin-abi.md §12). Prints the gcc-snapshot version, then:
#   contract: the snapshot's gomp-constants.h says GOMP_VERSION 4 (NVIDIA_PTX 1, GCN
#     3) and its libgomp.so.1 looks up exactly abi-tests/libgomp17-lookups.tsv; a
#     snapshot whose contract differs fails here, with what differs, and nothing else
#     runs;
#   programs compiled by the snapshot (-foffload=nvptx-none): saxpy.c, the smoke tests
#     t_omp.c and t_acc.c (OpenACC), tests/fallback/nowait_task.c and
#     tests/fallback/session.c, each run with the snapshot's loader and libgomp and our
#     nvptx plugin first on the library path:
#   - without a driver: libgomp 17 loads ours, host fallback, right results;
#   - on the two-device stand-in libcuda (tests/fallback/stub_libcuda_2dev.c, which
#     runs no kernel code; STUB_LIBCUDA_ARG0=1 logs what each kernel's table argument
#     points to): our GOMP_VERSION 4, session_size 32; every launch after one
#     session_start on a 16-byte-aligned block with the region's device number (0 and
#     1) and one session_set_target_var_table; the kernel's argument is exactly the
#     session's table, in that device's memory, holding device addresses; the
#     `nowait` region through async_run; OpenACC's openacc_exec with a session too;
#   - the handshake alone (tests/fake_libgomp/drive.c): 4 under the snapshot's
#     libgomp, 3 under the sid root's libgomp 16.
#
# usage: tests/snapshot_gcc.sh
#        tests/snapshot_gcc.sh --pack DIR
#   --pack DIR  instead of testing, write what a GPU machine needs into DIR: the
#               programs, lib/ (the snapshot's loader, glibc, libm, libgomp,
#               libgcc_s), stock/ (the snapshot's own nvptx plugin), VERSION;
#               scripts/device/snapshot.sh runs them.
# env: WORK (default ./.toolchain). Needs root (chroot) and, on first use, network.
# Run after scripts/build. Prints "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; }
pack=
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --pack) [ $# -ge 2 ] || { echo "snapshot_gcc.sh: --pack needs a directory" >&2; exit 2; }
            pack=$2; shift ;;
    *) echo "snapshot_gcc.sh: unknown argument '$1' (see $0 --help)" >&2; exit 2 ;;
  esac
  shift
done
export WORK=${WORK:-$PWD/.toolchain}
PLUGIN=$PWD/target/plugin/nvptx/libgomp-plugin-nvptx.so.1
[ -f "$PLUGIN" ] || { echo "snapshot_gcc.sh: $PLUGIN missing (run scripts/build)" >&2; exit 2; }
R=$WORK/snapshot SL=/usr/lib/gcc-snapshot/lib MA=usr/lib/x86_64-linux-gnu
pass=0 fail=0
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
ok() { echo "PASS: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; shift; printf '%s\n' "$@" | sed 's/^/    /' | tail -30; fail=$((fail + 1)); }
finish() { echo "$pass passed, $fail failed"; [ "$fail" = 0 ]; exit; }

if [ ! -x "$R$SL/../bin/gcc" ]; then
  log=$WORK/logs/mkroot-snapshot.log; mkdir -p "$WORK/logs"
  scripts/toolchain/mkroot.sh snapshot > "$log" 2>&1 ||
    { bad "making the snapshot root (log: $log)" "$(tail -5 "$log")"; finish; }
fi
ver=$(scripts/toolchain/inroot.sh snapshot dpkg-query -W -f '${Version}' gcc-snapshot 2>&1)
gccv=$(scripts/toolchain/inroot.sh snapshot /usr/lib/gcc-snapshot/bin/gcc --version 2>&1 | head -1)
echo "gcc-snapshot $ver: $gccv"

# --- the contract ---------------------------------------------------------------------
H=$(ls "$R"/usr/lib/gcc-snapshot/lib/gcc/x86_64-linux-gnu/*/plugin/include/gomp-constants.h 2>/dev/null | head -1)
consts=$(awk '$1 == "#define" && $2 ~ /^GOMP_VERSION(_NVIDIA_PTX|_GCN)?$/ { print $2 "=" $3 }' "$H" 2>/dev/null | sort | xargs)
grep -v '^#' abi-tests/libgomp17-lookups.tsv | cut -f1 | sed 's/^/GOMP_OFFLOAD_/' | sort -u > "$T/want"
strings -a "$R$SL/libgomp.so.1" 2>/dev/null | grep -E '^GOMP_OFFLOAD_[a-z0-9_]+$' | sort -u > "$T/real"
if [ "$consts" = "GOMP_VERSION=4 GOMP_VERSION_GCN=3 GOMP_VERSION_NVIDIA_PTX=1" ] && cmp -s "$T/want" "$T/real"; then
  ok "gcc-snapshot $ver: the libgomp 17 contract this plugin implements (GOMP_VERSION 4, $(wc -l < "$T/want") entry points looked up)"
else
  bad "gcc-snapshot $ver's plugin contract differs from the libgomp 17 this plugin implements (docs/plugin-abi.md §12): a newer snapshot needs the plugin updated" \
    "gomp-constants.h (${H:-not found}): ${consts:-nothing}; want GOMP_VERSION=4 GOMP_VERSION_GCN=3 GOMP_VERSION_NVIDIA_PTX=1" \
    "entry points looked up (< abi-tests/libgomp17-lookups.tsv only, > libgomp.so.1 only):" \
    "$(diff "$T/want" "$T/real" | grep '^[<>]')"
  finish
fi

# --- the programs -----------------------------------------------------------------------
D=$WORK/snapshot-tests; rm -rf "$D"; mkdir -p "$D"
cp examples/saxpy.c scripts/toolchain/smoke/t_omp.c scripts/toolchain/smoke/t_acc.c \
  tests/fallback/nowait_task.c tests/fallback/session.c tests/fallback/dims17.c "$D/"
progs="saxpy t_omp t_acc nowait_task session dims17"
if ! out=$(scripts/toolchain/inroot.sh snapshot sh -c "cd /w/snapshot-tests && G=/usr/lib/gcc-snapshot/bin/gcc &&
     \$G -O2 -fopenmp -foffload=nvptx-none saxpy.c -o saxpy -lm &&
     \$G -O2 -fopenmp -foffload=nvptx-none t_omp.c -o t_omp &&
     \$G -O2 -fopenacc -foffload=nvptx-none t_acc.c -o t_acc &&
     \$G -O2 -fopenmp -foffload=nvptx-none nowait_task.c -o nowait_task &&
     \$G -O2 -fopenmp -foffload=nvptx-none session.c -o session &&
     \$G -O2 -fopenmp -foffload=nvptx-none dims17.c -o dims17" 2>&1); then
  bad "gcc-snapshot -foffload=nvptx-none: compiling $progs" "$out"; finish
fi
ok "gcc-snapshot compiled $progs with nvptx offloading (OpenMP and OpenACC)"

if [ -n "$pack" ]; then
  rm -rf "$pack"; mkdir -p "$pack/lib" "$pack/stock"
  for p in $progs; do cp "$D/$p" "$pack/"; done
  cp -L "$R/lib64/ld-linux-x86-64.so.2" "$pack/lib/"
  for l in libc.so.6 libm.so.6; do cp -L "$R/$MA/$l" "$pack/lib/"; done
  for l in libgomp.so.1 libgcc_s.so.1 libgfortran.so.5 libquadmath.so.0; do cp -L "$R$SL/$l" "$pack/lib/"; done
  cp -L "$R$SL/libgomp-plugin-nvptx.so.1" "$pack/stock/"
  printf 'gcc-snapshot %s: %s\nprograms built with -O2 -fopenmp (t_acc: -fopenacc) -foffload=nvptx-none\n' \
    "$ver" "$gccv" > "$pack/VERSION"
  ok "packed into $pack ($(du -sh "$pack" | cut -f1))"
  finish
fi

# The snapshot's loader and libraries, ours first: the program as such a user runs it.
LP=$(dirname "$PLUGIN"):$R$SL:$R/$MA
run() {  # run PROG ENV...; the program's arguments: $ARGS
  local p=$1; shift
  env "$@" "$R/lib64/ld-linux-x86-64.so.2" --library-path "$LP" "$D/$p" ${ARGS:-} 2>&1
}

# Without a driver: libgomp 17 loads ours, host fallback, right results.
out=$(ARGS=1000 run saxpy GOMP_DEBUG=1 GOMP_PLUGIN_RS_LIBCUDA=/nonexistent/libcuda.so.1)
if grep -q "^offload plugin: $PLUGIN" <<< "$out" && grep -qE "gomp-plugin-rs [0-9.]+ loaded by libgomp 17 " <<< "$out" &&
   grep -q '^OK: 0 of 1000 elements wrong' <<< "$out"; then
  ok "saxpy: libgomp 17 loads our plugin (GOMP_VERSION 4 accepted), no driver: host fallback, right result"
else
  bad "saxpy through our plugin with libgomp 17, no driver" "$out"
fi
for p in t_omp t_acc session; do
  out=$(run $p GOMP_PLUGIN_RS_LIBCUDA=/nonexistent/libcuda.so.1); rc=$?
  case $p in
    t_omp) want='^sum=499500 initial_device=1 num_devices=0$' ;;
    t_acc) want='^sum=499500 devtype=2 ' ;;
    session) want='^session: results right$' ;;
  esac
  if [ "$rc" = 0 ] && grep -qE "$want" <<< "$out"; then
    ok "$p: host fallback under libgomp 17, right result"
  else
    bad "$p: host fallback under libgomp 17 (exit $rc, want /$want/)" "$out"
  fi
done

# The two-device stand-in libcuda (every driver entry point the plugin binds).
grep -rh --include=*.rs -o '^ *cu[A-Za-z0-9_]* = "cu[A-Za-z0-9_]*"' nvptx/src | sed 's/.*"\(.*\)"/STUB(\1)/' | sort -u > "$T/stub_names.h"
STANDIN=$T/libcuda-2dev.so
cc -shared -fPIC -pthread -I"$T" tests/fallback/stub_libcuda_2dev.c tests/fallback/stub_libcuda_rest.c \
  -o "$STANDIN" || { bad "building the stand-in libcuda"; finish; }
dev() {  # dev PROG: on the stand-in, with the session trace and the table check
  rm -f "$T/trace.json"
  run "$1" GOMP_DEBUG=2 GOMP_PLUGIN_RS_LIBCUDA="$STANDIN" STUB_LIBCUDA_ARG0=1 GOMP_NVPTX_TRACE="$T/trace.json"
}
# The session protocol in a run's output: every launch's session started once on a
# 16-aligned block with a device number, its table set once; the kernels' arguments
# (the stand-in's arg0 lines) are exactly the sessions' tables, on the session's device.
# Prints "sessions=N aligned=A once=O match=M" and the mismatches.
protocol() {
  awk '
    / session 0x[0-9a-f]+: started for device [0-9]+$/ {
      s = $(NF-4); sub(":", "", s); n++; dev[s] = $NF; sets[s] = 0
      if (s ~ /0$/) aligned++ }
    / session 0x[0-9a-f]+: table 0x[0-9a-f]+$/ {
      s = $(NF-2); sub(":", "", s)
      if (s in sets && sets[s]++ == 0) { once++; tab[$NF " " dev[s]]++ } else print "table set twice or without a start: " $0 }
    /^stub libcuda: arg0 / {
      k = $5 " " $7; if ($6 != "device") k = $5 " " $6; got[k]++ }
    END {
      for (k in tab) if (got[k] != tab[k]) print "session table/device " k ": " tab[k] " session(s), " got[k] + 0 " launch(es)"
      for (k in got) if (!(k in tab)) print "launch with table/device " k " that no session had"
      printf "sessions=%d aligned=%d once=%d\n", n, aligned, once }'
}
out=$(dev session); rc=$?
p=$(protocol <<< "$out")
devs=$(grep -oE 'session 0x[0-9a-f]+: started for device [0-9]+$' <<< "$out" | awk '{print $NF}' | sort | uniq -c | xargs)
fn0=$(grep -E '^stub libcuda: arg0 main\$_omp_fn\$0 ' <<< "$out" | awk '{print $6 $7 "/" $8 $9}' | xargs)
asyncs=$(grep -o '"name":"async_run"' "$T/trace.json" 2>/dev/null | wc -l)
if [ "$rc" = 0 ] && grep -q '^session: 6 regions done$' <<< "$out" &&
   grep -q 'libgomp 17: launches take a session (session_size 32 bytes)' <<< "$out" &&
   [ "$(tail -1 <<< "$p")" = "sessions=6 aligned=6 once=6" ] && [ "$(wc -l <<< "$p")" = 1 ] &&
   [ "$devs" = "3 0 3 1" ] && [ "$fn0" = "device0/device0 device1/device1" ] && [ "$asyncs" -ge 2 ] &&
   ! grep -q '^libgomp: ' <<< "$out"; then
  ok "session.c on the stand-in: session_size 32, 6 sessions started on 16-aligned blocks (devices: $devs), each table set once and passed to its kernel on its device, tables of device addresses, nowait through async_run ($asyncs)"
else
  bad "session.c on the stand-in (exit $rc; $p; devices: $devs; fn\$0 tables: $fn0; async_run: $asyncs)" "$out"
fi
out=$(dev dims17); rc=$?
want='teams_dim0=270336 teams_dim1=1 threads_dim0=32 threads_dim1=1 '
if [ "$rc" = 0 ] && grep -q '^dims17: 2 device(s)$' <<< "$out" && grep -q "^dev 0: $want" <<< "$out" &&
   grep -q "^dev 1: $want" <<< "$out"; then
  ok "dims17 on the stand-in: omp_get_supported_teams_dim/threads_dim answered by ours (132 SMs x 65536 registers / 32, 32 warps a block, 1 beyond dimension 0)"
else
  bad "dims17 on the stand-in (exit $rc; want /$want/ for devices 0 and 1)" "$out"
fi
out=$(dev t_acc); rc=$?   # exit status 1: the sum is wrong where no kernel code runs
p=$(protocol <<< "$out")
if [ "$rc" -le 1 ] && [ "$p" = "sessions=1 aligned=1 once=1" ] && grep -q '^stub libcuda: arg0 main\$_omp_fn\$0 0x[0-9a-f]* device 0 device 0$' <<< "$out" &&
   grep -q 'nvptx_exec: kernel main\$_omp_fn\$0: launch' <<< "$out" && ! grep -q '^libgomp: ' <<< "$out"; then
  ok "t_acc (OpenACC) on the stand-in: openacc_exec with a session, the kernel gets the session's table on device 0"
else
  bad "t_acc (OpenACC) on the stand-in (exit $rc; $p)" "$out"
fi
out=$(dev nowait_task); rc=$?
p=$(protocol <<< "$out")
launches=$(grep -c 'kernel [^ ]*_omp_fn[^ ]*: launch ' <<< "$out")
asyncs=$(grep -o '"name":"async_run"' "$T/trace.json" 2>/dev/null | wc -l)
if [ "$rc" = 0 ] && grep -q '^nowait_task: 4 regions done$' <<< "$out" && [ "$launches" = 4 ] &&
   [ "$p" = "sessions=4 aligned=4 once=4" ] && [ "$asyncs" -ge 1 ]; then
  ok "nowait_task on the stand-in: 4 regions, 4 sessions, async_run ($asyncs) under libgomp 17"
else
  bad "nowait_task on the stand-in (exit $rc; $launches launch(es); $p; async_run $asyncs)" "$out"
fi
# (Their results are wrong here, as the stand-in runs no kernel code: exit status 1.)
for p in t_omp saxpy; do
  out=$(ARGS=1000 dev $p); rc=$?
  pr=$(protocol <<< "$out")
  n=$(grep -c '^stub libcuda: arg0 ' <<< "$out")
  if [ "$rc" -le 1 ] && [ "$n" -ge 1 ] && [ "$pr" = "sessions=$n aligned=$n once=$n" ] &&
     ! grep -q '^libgomp: ' <<< "$out"; then
    ok "$p on the stand-in: $n launch(es), each with its session's table"
  else
    bad "$p on the stand-in (exit $rc; $n launch(es); $pr)" "$out"
  fi
done

# The plugin's handshake with each libgomp itself (tests/fake_libgomp/drive.c dlopens
# the plugin, calls version and get_num_devices): 4 under the snapshot's libgomp 17, 3
# under the sid root's libgomp 16 (stage libgomp-versions covers 12-16 in full).
cc -O1 tests/fake_libgomp/drive.c -o "$T/drive" -ldl || { bad "building tests/fake_libgomp/drive.c"; finish; }
for x in "snapshot $R $R$SL 4" "sid $WORK/sid $WORK/sid/$MA 3"; do
  set -- $x
  if [ ! -e "$3/libgomp.so.1" ]; then
    echo "SKIPPED: the handshake under the $1 root's libgomp (no $3/libgomp.so.1: scripts/toolchain/mkroot.sh $1)"
    continue
  fi
  out=$(GOMP_PLUGIN_RS_LIBCUDA=/nonexistent "$2/lib64/ld-linux-x86-64.so.2" --library-path "$3:$2/$MA" \
        "$T/drive" "$PLUGIN" 0 2>&1)
  if grep -qx "version=$4" <<< "$out"; then
    ok "under the $1 root's libgomp the plugin answers GOMP_VERSION $4"
  else
    bad "the handshake under the $1 root's libgomp (want version=$4)" "$out"
  fi
done
finish
