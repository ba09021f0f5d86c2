#!/bin/bash
# run.sh - on the GPU machine: run the gcc-14/gcc-15 programs of CARRY_DIR/compat.tar.xz
# on libgomp 16 (the GCC 16 bundle's libraries) with the stock GCC 16 plugin and ours,
# 60 s each. Writes $OUT/compat-results.txt ("COMPILER PROGRAM PLUGIN PASS|FAIL|TIMEOUT")
# and prints a summary and every program that passes with stock but not with ours.
# usage: scripts/compat/run.sh CARRY_DIR
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "compat/run.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 1 ] || { echo "compat/run.sh: expects 1 argument(s), got $# (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "${1:?usage: run.sh CARRY_DIR}" && pwd); O=${OUT:-/tmp/compat-out}; mkdir -p "$O"
T=/tmp/compat; mkdir -p "$T"
[ -d "$T/bundle-16" ] || tar -xJf "$C/bundle-16.tar.xz" -C "$T"
rm -rf "$T/compat"; tar -xJf "$C/compat.tar.xz" -C "$T"
B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
declare -A DIR=([stock]=$B/plugin [ours]=$C/plugin)
R=$O/compat-results.txt; : > "$R"
for cdir in "$T"/compat/gcc-*; do
  cc=$(basename "$cdir")
  for t in "$cdir"/*; do
    n=$(basename "$t"); args=()
    case $n in offload_bench) args=(empty 200) ;; acc_bench) args=(async 100) ;; revoff_bench) args=(100) ;; esac
    for p in stock ours; do
      (cd "$T" && timeout 60 "$B/lib/ld-linux-x86-64.so.2" --library-path "${DIR[$p]}:$B/lib:$CUDA_LIBDIR" \
        "$t" "${args[@]}" > "$T/out.txt" 2>&1)
      case $? in 0) v=PASS ;; 124) v=TIMEOUT ;; *) v=FAIL ;; esac
      echo "$cc $n $p $v" >> "$R"
    done
  done
done
awk '{c[$1" "$3" "$4]++} END {for (k in c) print k, c[k]}' "$R" | sort
echo "passes with stock, not with ours:"
awk '{r[$1" "$2" "$3]=$4} END {for (k in r) {split(k,a," "); if (a[3]=="stock" && r[k]=="PASS" && r[a[1]" "a[2]" ours"]!="PASS") print "  "a[1], a[2]}}' "$R" | sort
