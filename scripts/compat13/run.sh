#!/bin/bash
# run.sh - run the GCC 13 programs of CARRY_DIR/compat13.tar.xz (scripts/compat13/build.sh)
# self-contained (the noble root's ld-linux and libc, --library-path) with each plugin:
#   13 stock   libgomp 13 (GCC 13.3.0)  + the stock GCC 13 plugin
#   13 ours    libgomp 13               + ours (CARRY_DIR/plugin/libgomp-plugin-nvptx.so.1)
#   14 stock   noble's libgomp 14       + noble's stock GCC 14 plugin    (GCC 13 images on 14)
#   14 ours    noble's libgomp 14       + ours
# then a few programs again with GOMP_DEBUG=1 under ours, checking the debug lines that show
# libgomp 13 detected (version() 2 accepted, images loaded through the 5-argument load_image)
# and reverse offload served through the 9-argument GOMP_PLUGIN_target_rev (none under 14).
# Without a GPU (no libcuda.so.1 in ldconfig) everything falls back to the host and the
# checks expect that instead (OpenACC programs then run on the host device type).
#
# usage: scripts/compat13/run.sh CARRY_DIR
# Writes $OUT (default /tmp/compat13-out): compat13-results.txt ("CFG PLUGIN PROGRAM
# PASS|FAIL(rc)|TIMEOUT" lines, the CHECK lines and the summary, which is also printed),
# compat13-failures.txt (output tail of every run that did not pass), compat13-debug.log.
# env: CONFIGS (default "13 14"), PLUGINS (default "stock ours"), JOBS (parallel runs,
#      default 8 with a GPU, 2 without), TIMEOUT (per run, default 60), FILTER (ERE on names),
#      OURS (directory of our plugin, default CARRY_DIR/plugin), CUDA_LIBDIR (directory of
#      libcuda.so.1, default from ldconfig; empty: the GPU-less mode).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
if [ "${1:-}" != --one ]; then   # --one: internal worker call (below)
  case "${1:-}" in -?*) echo "compat13/run.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
  [ $# -eq 1 ] || { echo "compat13/run.sh: expects 1 argument(s), got $# (see $0 --help)" >&2; exit 2; }
fi
set -u
if [ "${1:-}" = --one ]; then  # --one CFG PLUGIN NAME: one run, one result line on stdout
  cfg=$2 p=$3 n=$4; W=$T13/compat13
  eval "lp=\$LP_${p}_${cfg}"
  envs=(); [ -f "$W/bin/$n.env" ] && mapfile -t envs < "$W/bin/$n.env"
  grep -qP "^\Q$n\E\t.*-fopenacc" "$W/programs.tsv" && [ "$GPU" = 1 ] && envs+=(ACC_DEVICE_TYPE=nvidia)
  args=(); case $n in offload_bench) args=(empty 200) ;; acc_bench) args=(async 100) ;; revoff_bench) args=(100) ;; esac
  out=$T13/out/$cfg-$p-$n.txt
  { (cd "$T13/out" && env "${envs[@]}" timeout "$TIMEOUT" "$W/lib/ld-linux-x86-64.so.2" --library-path "$lp" \
    "$W/bin/$n" "${args[@]}" > "$out" 2>&1 < /dev/null); } 2> /dev/null
  rc=$?; case $rc in 0) v=PASS ;; 124) v=TIMEOUT ;; *) v="FAIL($rc)" ;; esac
  [ $rc = 0 ] && rm -f "$out"
  echo "$cfg $p $n $v"; exit 0
fi
C=$(cd "${1:?usage: run.sh CARRY_DIR}" && pwd); O=${OUT:-/tmp/compat13-out}; mkdir -p "$O"
T13=/tmp/compat13; rm -rf "$T13"; mkdir -p "$T13/out"; tar -xJf "$C/compat13.tar.xz" -C "$T13" || exit 1
W=$T13/compat13; OURS=$(cd "${OURS:-$C/plugin}" && pwd)
[ -f "$OURS/libgomp-plugin-nvptx.so.1" ] || { echo "no $OURS/libgomp-plugin-nvptx.so.1" >&2; exit 1; }
CUDA_LIBDIR=${CUDA_LIBDIR:-$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}' | xargs -r dirname)}
GPU=0; [ -n "$CUDA_LIBDIR" ] && GPU=1
export T13 GPU TIMEOUT=${TIMEOUT:-60}
export LP_stock_13=$W/stock13:$W/lib:$CUDA_LIBDIR LP_ours_13=$OURS:$W/lib:$CUDA_LIBDIR
export LP_stock_14=$W/stock14:$W/lib14:$W/lib:$CUDA_LIBDIR LP_ours_14=$OURS:$W/lib14:$W/lib:$CUDA_LIBDIR
R=$O/compat13-results.txt; F=$O/compat13-failures.txt; D=$O/compat13-debug.log
{
  cat "$W/VERSIONS"; echo "ours: $OURS/libgomp-plugin-nvptx.so.1 ($(sha256sum < "$OURS/libgomp-plugin-nvptx.so.1" | cut -c1-16))"
  if [ $GPU = 1 ]; then nvidia-smi -L 2>&1 | head -2; echo "libcuda in $CUDA_LIBDIR"
  else echo "no libcuda.so.1: host fallback expected everywhere"; fi
} > "$R"
names=$(cut -f1 "$W/programs.tsv" | grep -E "${FILTER:-.}")
for cfg in ${CONFIGS:-13 14}; do for p in ${PLUGINS:-stock ours}; do for n in $names; do
  echo "$cfg $p $n"; done; done; done |
  xargs -P "${JOBS:-$([ $GPU = 1 ] && echo 8 || echo 2)}" -L1 "$0" --one | sort -k1,1 -k3,3 -k2,2 > "$T13/lines"
cat "$T13/lines" >> "$R"
for f in "$T13"/out/*.txt; do [ -f "$f" ] && { echo "== $(basename "$f" .txt)"; tail -15 "$f"; }; done > "$F"

# GOMP_DEBUG=1 runs under ours, and what their logs must show.
dbg() {  # dbg CFG NAME ARGS... : run, append the log to $D, leave it in $T13/dbg.txt
  local cfg=$1 n=$2; shift 2; local lp; eval "lp=\$LP_ours_$cfg"
  [ -x "$W/bin/$n" ] || { echo "(no $n)" > "$T13/dbg.txt"; return 1; }
  (cd "$T13/out" && GOMP_DEBUG=1 timeout "$TIMEOUT" "$W/lib/ld-linux-x86-64.so.2" --library-path "$lp" \
    "$W/bin/$n" "$@" > "$T13/dbg.txt" 2>&1 < /dev/null); local rc=$?
  local lines; lines=$(wc -l < "$T13/dbg.txt")
  { echo "===== libgomp $cfg + ours: $n $* (GOMP_DEBUG=1, exit $rc, $lines lines," \
         "$(grep -c '9-argument GOMP_PLUGIN_target_rev' "$T13/dbg.txt") of them 9-argument target_rev)"
    if [ "$lines" -le 200 ]; then cat "$T13/dbg.txt"
    else head -150 "$T13/dbg.txt"; echo "[... $((lines - 180)) lines left out ...]"; tail -30 "$T13/dbg.txt"; fi
  } >> "$D"
  return $rc
}
: > "$D"; checks=0 bad=0
check() {  # check DESCRIPTION REGEX [!] : does the last dbg log match (or, with !, not)?
  local hit=0; grep -qE -- "$2" "$T13/dbg.txt" && hit=1
  checks=$((checks + 1))
  if [ "${3:-}" = "!" ]; then hit=$((1 - hit)); fi
  if [ $hit = 1 ]; then echo "CHECK PASS $1"; else echo "CHECK FAIL $1"; bad=$((bad + 1)); fi >> "$R"
}
ok() { checks=$((checks + 1)); if [ "$2" = 0 ]; then echo "CHECK PASS $1"; else echo "CHECK FAIL $1 (exit $2)"; bad=$((bad + 1)); fi >> "$R"; }
loaded="gomp-plugin-rs [0-9.]+ loaded by libgomp 13 \("
dbg 13 saxpy 1000000; ok "13 saxpy runs" $?
check "13 saxpy: libgomp 13 detected (version() answers 2)" "$loaded"
check "13 saxpy: our plugin is the one loaded" "offload plugin: $OURS/libgomp-plugin-nvptx.so.1"
if [ $GPU = 1 ]; then
  check "13 saxpy: libgomp 13 accepted the plugin and it loaded the image (5-argument load_image)" \
    'device 0: loaded image 0x[0-9a-f]+ \('
  check "13 saxpy: ran on the GPU" 'ran on the GPU \([1-9]'
  for n in revoff_bench libgomp.c-c++-common--reverse-offload-1 libgomp.fortran--reverse-offload-1; do
    a=(); [ $n = revoff_bench ] && a=(20)
    dbg 13 "$n" "${a[@]}"; ok "13 $n runs" $?
    check "13 $n: libgomp 13 detected" "$loaded"
    check "13 $n: reverse-offload mailbox set up at load_image" 'reverse offload: [1-9][0-9]* function\(s\), mailbox'
    check "13 $n: served through the 9-argument GOMP_PLUGIN_target_rev" \
      'reverse offload: fn 0x[0-9a-f]+ via 9-argument GOMP_PLUGIN_target_rev \(libgomp 13'
  done
  if [[ " ${CONFIGS:-13 14} " == *" 14 "* ]]; then
    dbg 14 revoff_bench 20; ok "14 revoff_bench runs" $?
    check "14 revoff_bench: libgomp 14 detected" "gomp-plugin-rs [0-9.]+ loaded by libgomp 14 \("
    check "14 revoff_bench: 7-argument target_rev (no 9-argument line)" '9-argument GOMP_PLUGIN_target_rev' !
  fi
else
  check "13 saxpy: no device, host fallback" 'no CUDA devices'
  check "13 saxpy: correct result on the host" 'ran on the host \(fallback\) \(0 offload'
fi

{
  echo "== summary (libgomp CFG, PLUGIN: result count)"
  awk '{sub(/\(.*/, "", $4); c[$1" "$2" "$4]++} END {for (k in c) print "  " k, c[k]}' "$T13/lines" | sort
  for cfg in ${CONFIGS:-13 14}; do
    echo "libgomp $cfg: passes with stock, not with ours:"
    awk -v c="$cfg" '$1==c {r[$2" "$3]=$4} END {for (k in r) {split(k,a," "); if (a[1]=="stock" && r[k]=="PASS" && r["ours "a[2]]!="PASS") print "  " a[2], r["ours "a[2]]}}' "$T13/lines" | sort
    echo "libgomp $cfg: passes with ours, not with stock:"
    awk -v c="$cfg" '$1==c {r[$2" "$3]=$4} END {for (k in r) {split(k,a," "); if (a[1]=="ours" && r[k]=="PASS" && r["stock "a[2]]!="PASS") print "  " a[2], r["stock "a[2]]}}' "$T13/lines" | sort
  done
  echo "debug-log checks: $((checks - bad)) of $checks passed"
} | tee -a "$R"
[ "$bad" = 0 ]
