#!/bin/bash
# gcn_compare.sh - our gcn plugin checked against GCC's own, launch by launch: a corpus
# of real OpenMP and OpenACC programs (tests/gcn-corpus/), compiled by gcc-16 (Debian
# sid root) and gcc-14 (trixie root) with -foffload=amdgcn-amdhsa for
# the stand-in's ISA (gfx90a), runs through Debian's libgomp-plugin-gcn.so.1 of the same
# GCC ("stock") and through target/plugin/gcn ("ours"), each on the stand-in HSA runtime
# (tests/fallback/stub_libhsa.c) playing the same kernel script. The stand-in records
# what the device would see (STUB_HSA_TRACE); scripts/gcn-trace compares the two runs
# and fails on every difference docs/gcn-launch.md does not explain. Also plants a
# kernarg offset and a packet field in a trace of ours it just recorded, and runs
# scripts/gcn-trace selftest: planted differences must fail the comparison.
# usage: tests/gcn_compare.sh [--gcc "16 14"] [--only REGEX] [--keep DIR]
#   --gcc LIST    the GCC versions to compile and run with, of 16, 14 and 17 (default
#                 "16 14"); 17 is Debian's gcc-snapshot in the root $WORK/snapshot
#                 (scripts/toolchain/mkroot.sh snapshot; amdgcn offload included), its
#                 programs run with its libgomp 17 and its own gcn plugin ("stock");
#                 scripts/test's gcn-compare stage runs "16 14 17"
#   --only REGEX  only the programs whose file name matches (grep -E)
#   --keep DIR    keep every run's directory (trace, stdout, stderr, rc) under DIR
# Needs root (the toolchain roots) and scripts/build's target/plugin/gcn. Installs
# gcc-16-offload-amdgcn into $WORK/sid and gcc-14-offload-amdgcn into $WORK/trixie
# (about 100 MB to download) on first use. Compiled programs are cached under $WORK/gcn-corpus
# (keyed by source, flags and compiler version). A stand-in is not an AMD GPU: nothing here ran on one.
#
# Directives in a corpus file (lines starting with "// gcn: "):
#   flags FLAGS...       compiler flags (besides -foffload=amdgcn-amdhsa and -march)
#   gcc 16 14            the compilers it is built with (default: all of --gcc's)
#   script ITEMS         the stand-in script (STUB_HSA_SCRIPT) of every run
#   env VAR=VALUE...     environment of every run
#   run NAME [rc=N] [timeout=S] [bad=ok] [VAR=VALUE...]   one run; VAR=VALUE goes to
#                        the environment (STUB_HSA_SCRIPT=... replaces the script); rc:
#                        the expected exit status (124: still running after timeout S
#                        seconds, default 120); bad=ok: the setting is one the stand-in's
#                        spec checks refuse (their failures must then match)
#   expect NAME|* REGEX  a line of the program's stdout must match (grep -E), in both runs
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
ONLY= KEEP= GCCS="16 14"
while [ $# -gt 0 ]; do
  case $1 in
    --gcc) [ $# -ge 2 ] && [[ "$2" =~ ^(16|14|17)( (16|14|17)){0,2}$ ]] ||
             { echo "gcn_compare.sh: --gcc takes a list of 16, 14 and 17, e.g. \"16 14\"" >&2; exit 2; }; GCCS=$2; shift 2 ;;
    --only) [ $# -ge 2 ] || { echo "gcn_compare.sh: --only needs a REGEX" >&2; exit 2; }; ONLY=$2; shift 2 ;;
    --keep) [ $# -ge 2 ] || { echo "gcn_compare.sh: --keep needs a DIR" >&2; exit 2; }; KEEP=$2; shift 2 ;;
    *) echo "gcn_compare.sh: unknown argument '$1' (see $0 --help)" >&2; exit 2 ;;
  esac
done
set -uo pipefail
cd "$(dirname "$0")/.."
export WORK=${WORK:-$PWD/.toolchain}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
OURS=$PWD/target/plugin/gcn
[ -e "$OURS/libgomp-plugin-gcn.so.1" ] || { echo "gcn_compare.sh: $OURS/libgomp-plugin-gcn.so.1 missing (run scripts/build)"; exit 1; }
ISA=gfx90a
declare -A ROOT=([16]=sid [14]=trixie [17]=snapshot)
# Where each GCC's compiler drivers and its libgomp (with the stock gcn plugin) are.
declare -A BIN=([16]=/usr/bin [14]=/usr/bin [17]=/usr/lib/gcc-snapshot/bin)
declare -A SFX=([16]=-16 [14]=-14 [17]=)
declare -A LIB=([16]=usr/lib/x86_64-linux-gnu [14]=usr/lib/x86_64-linux-gnu [17]=usr/lib/gcc-snapshot/lib)

# The amdgcn offload compilers (and with them the stock gcn plugins), once.
for v in $GCCS; do
  r=${ROOT[$v]}
  [ -x "$WORK/$r${BIN[$v]}/x86_64-linux-gnu-accel-amdgcn-amdhsa-gcc${SFX[$v]}" ] && continue
  if [ "$v" = 17 ]; then
    scripts/toolchain/mkroot.sh snapshot > "$T/mkroot-snapshot.log" 2>&1 ||
      { echo "gcn_compare.sh: cannot make the snapshot root"; tail "$T/mkroot-snapshot.log"; exit 1; }
    continue
  fi
  [ -x "$WORK/$r/usr/bin/apt-get" ] || scripts/toolchain/mkroot.sh "$r" > "$T/mkroot-$r.log" 2>&1 ||
    { echo "gcn_compare.sh: cannot make the $r root"; tail "$T/mkroot-$r.log"; exit 1; }
  scripts/toolchain/inroot.sh "$r" env DEBIAN_FRONTEND=noninteractive sh -c \
    "apt-get install -y -qq --no-install-recommends gcc-$v-offload-amdgcn >/dev/null 2>&1 ||
     { apt-get -o Acquire::Check-Valid-Until=false update -qq && apt-get install -y -qq --no-install-recommends gcc-$v-offload-amdgcn >/dev/null; }" ||
    { echo "gcn_compare.sh: cannot install gcc-$v-offload-amdgcn in the $r root"; exit 1; }
done

# The stand-in runtime.
cc -O1 -Wall -shared -fPIC -DINIT_RESULT=0 "-DONE_GPU=\"$ISA\"" tests/fallback/stub_libhsa.c -o "$T/libhsa.so" ||
  { echo "gcn_compare.sh: cannot build the stand-in"; exit 1; }

directive() { sed -n "s|^// gcn: $2 ||p" "$1"; }   # directive FILE KEY
programs=()
for f in tests/gcn-corpus/*.c tests/gcn-corpus/*.cc; do
  [ -e "$f" ] || continue
  [ -z "$ONLY" ] || grep -qE -- "$ONLY" <<< "$(basename "$f")" || continue
  programs+=("$f")
done
[ ${#programs[@]} -gt 0 ] || { echo "gcn_compare.sh: no corpus program selected"; exit 1; }

# Compile what the cache lacks, per compiler, in one call into the root.
C=$WORK/gcn-corpus
for v in $GCCS; do
  r=${ROOT[$v]}
  pkg=gcc-$v-offload-amdgcn; [ "$v" = 17 ] && pkg=gcc-snapshot
  ver=$(cat "$WORK/$r/var/lib/dpkg/info/$pkg.list" 2>/dev/null | md5sum | cut -c1-8)
  mkdir -p "$C/$v/src"
  : > "$T/todo-$v"
  for f in "${programs[@]}"; do
    gccs=$(directive "$f" gcc); [[ " ${gccs:-16 14 17} " == *" $v "* ]] || continue
    name=$(basename "$f"); flags=$(directive "$f" flags)
    key=$( { cat "$f"; echo "$flags $ISA $ver"; } | md5sum | cut -c1-12)
    bin=$C/$v/${name%.*}-$key
    echo "$bin" > "$T/bin-$v-$name"
    [ -x "$bin" ] && continue
    cp "$f" "$C/$v/src/$name"
    drv=${BIN[$v]}/gcc${SFX[$v]}; [[ $name == *.cc ]] && drv=${BIN[$v]}/g++${SFX[$v]}
    printf '%s\n' "$drv -O1 $flags -foffload=amdgcn-amdhsa -foffload-options=-march=$ISA /w/gcn-corpus/$v/src/$name -o /w/${bin#$WORK/} > /w/${bin#$WORK/}.log 2>&1 || echo FAILED: $name" >> "$T/todo-$v"
  done
  if [ -s "$T/todo-$v" ]; then
    cp "$T/todo-$v" "$C/$v/todo.sh"
    echo "compiling $(wc -l < "$T/todo-$v") program(s) with gcc-$v"
    scripts/toolchain/inroot.sh "$r" sh -c "cd /tmp && xargs -a /w/gcn-corpus/$v/todo.sh -d '\n' -P $(nproc) -n 1 sh -c" > "$T/compile-$v.out" 2>&1
    cat "$T/compile-$v.out"
  fi
done

fail=0 runs=0 exp=0 unexp=0
mkdir -p "$T/runs"
run_one() {  # run_one V BIN DIR PLUGIN_DIR_OR_EMPTY TIMEOUT ENV...
  local v=$1 bin=$2 dir=$3 plug=$4 limit=$5 R=$WORK/${ROOT[$1]}; shift 5
  mkdir -p "$dir"
  # In a subshell whose stderr is discarded: the shell's "Aborted" notices of the runs
  # that end with abort() stay out of the report.
  ( env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C "$@" HSA_RUNTIME_LIB="$T/libhsa.so" STUB_HSA_TRACE="$dir/trace" \
      timeout "$limit" "$R/lib64/ld-linux-x86-64.so.2" --library-path \
      "$plug$R/${LIB[$v]}:$R/usr/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu" "$bin" > "$dir/stdout" 2> "$dir/stderr"
    echo $? > "$dir/rc" ) 2> /dev/null
}
# compare_run FILE RNAME V BIN DIR LABEL LIMIT WANT_RC ALLOW ENV...: one run of a corpus
# program with the stock plugin and with ours, and their comparison. Writes what it
# found to DIR/report and "EXPLAINED UNEXPLAINED FAILED CLEAN" to DIR/counts: the runs
# go on side by side (many wait: a timeout, the stand-in's device thread), the reports
# are printed in corpus order.
compare_run() {
  local f=$1 rname=$2 v=$3 bin=$4 d=$5 label=$6 limit=$7 want_rc=$8 allow=$9 p rc which re out c e u ok=1
  shift 9
  mkdir -p "$d"
  exec > "$d/report"
  run_one "$v" "$bin" "$d/stock" "" "$limit" "$@"
  run_one "$v" "$bin" "$d/ours" "$OURS:" "$limit" "$@"
  for p in stock ours; do
    rc=$(cat "$d/$p/rc")
    [ "$rc" = "$want_rc" ] || { echo "FAIL: $label: $p exited with $rc, want $want_rc"; ok=0; }
    while read -r which re; do
      [ "$which" = "*" ] || [ "$which" = "$rname" ] || continue
      grep -qE -- "$re" "$d/$p/stdout" || { echo "FAIL: $label: $p's stdout lacks /$re/"; ok=0; }
    done < <(directive "$f" expect)
  done
  [ -s "$d/stock/trace" ] || { echo "FAIL: $label: stock left no trace"; ok=0; }
  out=$(scripts/gcn-trace compare "$d/stock" "$d/ours" --name "$label" $allow); c=$?
  read -r e u < <(sed -n 's/.*: \([0-9]*\) explained, \([0-9]*\) unexplained$/\1 \2/p' <<< "$out" | tail -1)
  if [ "$c" != 0 ] || [ "$ok" = 0 ]; then
    echo "$out" | awk '/^UNEXPLAINED/{p=1} /^explained/{p=0} p' | head -60
    [ "$ok" = 0 ] || echo "FAIL: $label: unexplained differences"
    echo "    stock stderr:"; sed 's/^/      /' "$d/stock/stderr" | grep -v 'stub-hsa: packet' | tail -8
    echo "    ours stderr:"; sed 's/^/      /' "$d/ours/stderr" | grep -v 'stub-hsa: packet' | tail -8
    echo "${e:-0} ${u:-0} 1 0" > "$d/counts"
  else
    echo "PASS: $label (${e:-0} explained difference(s))"
    echo "${e:-0} ${u:-0} 0 1" > "$d/counts"
  fi
}
order=()  # "DIR LABEL" of every run, in corpus order
for f in "${programs[@]}"; do
  name=$(basename "$f")
  script=$(directive "$f" script)
  read -r -a common <<< "$(directive "$f" env)"
  for v in $GCCS; do
    [ -e "$T/bin-$v-$name" ] || continue
    bin=$(cat "$T/bin-$v-$name")
    if [ ! -x "$bin" ]; then
      echo "FAIL: gcc-$v $name: not compiled"; sed 's/^/    /' "$bin.log" 2>/dev/null | tail -15; fail=$((fail + 1)); continue
    fi
    while read -r rname rest; do
      [ -n "$rname" ] || continue
      want_rc=0 limit=120 allow= envs=("STUB_HSA_SCRIPT=$script" "${common[@]}")
      # GCC 14's device runtime keeps its low-latency heap at LDS offset 40 (spec §2).
      [ "$v" = 14 ] && envs+=(STUB_HSA_LOWLAT_HEAP=40)
      for w in $rest; do
        case $w in rc=*) want_rc=${w#rc=} ;; timeout=*) limit=${w#timeout=} ;; bad=ok) allow=--allow-bad ;;
          *) envs+=("$w") ;; esac
      done
      d=$T/runs/$v/${name%.*}/$rname
      label="gcc-$v ${name%.*}/$rname"
      order+=("$d $label")
      while [ "$(jobs -pr | wc -l)" -ge "$(nproc)" ]; do wait -n; done
      compare_run "$f" "$rname" "$v" "$bin" "$d" "$label" "$limit" "$want_rc" "$allow" "${envs[@]}" &
    done < <(directive "$f" run)
  done
done
wait
: > "$T/clean"
for o in "${order[@]}"; do
  read -r d label <<< "$o"
  cat "$d/report" 2>/dev/null
  read -r e u fl c < "$d/counts" 2>/dev/null || { echo "FAIL: $label: its run left no result"; fail=$((fail + 1)); continue; }
  runs=$((runs + 1)); exp=$((exp + e)); unexp=$((unexp + u)); fail=$((fail + fl))
  [ "$c" = 0 ] || echo "$d $label" >> "$T/clean"
done
# Differences planted in a trace of ours just recorded (the first run that compared
# clean): its first launch's stack pointer 8 bytes further (a kernarg offset), then its
# first packet's group segment size 64 bytes larger (a packet field); each alone must
# make the comparison fail and be named.
plant() {  # plant DIR LABEL WHAT KEY PYTHON-EXPR
  local d=$1 label=$2 what=$3 key=$4 expr=$5 p=$T/plant/$3
  rm -rf "$p"; mkdir -p "$p"; cp -r "$d/ours" "$p/ours"
  python3 -c "import re,sys; t=open(sys.argv[1]).read(); n=$expr; open(sys.argv[1],'w').write(n); sys.exit(n==t)" "$p/ours/trace" ||
    { echo "FAIL: planted $what: the trace of $label has nothing to plant it in"; return 1; }
  out=$(scripts/gcn-trace compare "$d/stock" "$p/ours" --name "$label") &&
    { echo "FAIL: planted $what: the comparison passed"; return 1; }
  grep -q "^UNEXPLAINED $label: L[0-9.]* $key$" <<< "$out" ||
    { echo "FAIL: planted $what: the comparison did not name $key"; echo "$out" | head -10; return 1; }
  echo "PASS: planted $what fails the comparison: $(grep -A2 "^UNEXPLAINED $label: L[0-9.]* $key$" <<< "$out" | tr -s ' \n' ' ')"
}
clean=$(cat "$T/clean" 2>/dev/null | head -1)
if [ -z "$clean" ]; then echo "FAIL: no run compared clean: nothing to plant differences in"; fail=$((fail + 1))
else
  read -r cdir clabel <<< "$clean"
  plant "$cdir" "$clabel" "kernarg offset" "ka.stack" \
    're.sub(r"^(ka .*? stack=B\d+\+)(0x[0-9a-f]+|0)\b", lambda m: m.group(1) + hex(int(m.group(2), 16) + 8), t, count=1, flags=re.M)' ||
    fail=$((fail + 1))
  plant "$cdir" "$clabel" "packet field" "packet.group" \
    're.sub(r"^(launch .*? group=)(\d+)", lambda m: m.group(1) + str(int(m.group(2)) + 64), t, count=1, flags=re.M)' ||
    fail=$((fail + 1))
fi
[ -z "$KEEP" ] || { mkdir -p "$KEEP" && cp -r "$T/runs/." "$KEEP/"; }
if scripts/gcn-trace selftest > "$T/selftest.out" 2>&1; then echo "PASS: gcn-trace selftest (planted differences fail the comparison)"
else echo "FAIL: gcn-trace selftest"; sed 's/^/    /' "$T/selftest.out" | tail -30; fail=$((fail + 1)); fi
echo "$runs run(s) compared, stock vs ours: $exp explained difference(s), $unexp unexplained; $fail failure(s)"
[ "$fail" = 0 ] && [ "$unexp" = 0 ]
