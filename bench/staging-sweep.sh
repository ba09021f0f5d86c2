#!/bin/bash
# staging-sweep.sh - on the GPU machine: pageable-copy bandwidth with our plugin under
# several staging shapes (GOMP_NVPTX_STAGING="threads,chunk_bytes,buffers", an
# experiment knob; default: 3 lanes per 4 processors up to 12, 4m, 2), to choose the defaults.
# usage: bench/staging-sweep.sh CARRY_DIR [REPS] [BYTES]
# CARRY_DIR as for bench/device-run.sh. env SHAPES (space-separated list) overrides the
# shapes tried. Writes $OUT/staging-sweep.txt: "SHAPE rep metric NAME VALUE UNIT" lines
# (or ERROR lines), SHAPE "default" for the plugin's own default.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "staging-sweep.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -ge 1 ] || { echo "staging-sweep.sh: missing argument (see $0 --help)" >&2; exit 2; }
[ $# -le 3 ] || { echo "staging-sweep.sh: too many arguments (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "${1:?usage: staging-sweep.sh CARRY_DIR [REPS] [BYTES]}" && pwd); REPS=${2:-3}
BYTES=${3:-1073741824}
O=${OUT:-/tmp/bench-out}; mkdir -p "$O"
T=/tmp/bench; mkdir -p "$T"
[ -d "$T/bundle-16" ] || tar -xJf "$C/bundle-16.tar.xz" -C "$T"
B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
SHAPES=${SHAPES:-"default 1,4m,2 2,4m,2 4,4m,4 8,4m,2 8,2m,4 12,4m,2 12,8m,2 16,4m,2 16,1m,4 8,16m,2"}
for rep in $(seq 1 "$REPS"); do
  for shape in $SHAPES; do
    env=(); [ "$shape" = default ] || env=(GOMP_NVPTX_STAGING="$shape")
    env "${env[@]}" timeout 120 "$B/lib/ld-linux-x86-64.so.2" --library-path "$C/plugin:$B/lib:$CUDA_LIBDIR" \
      "$C/offload_bench" bw "$BYTES" > "$T/one.txt" 2>&1
    rc=$?
    sed "s/^/$shape $rep /" "$T/one.txt" | grep -E "^$shape $rep (metric [hd]2[hd]_pageable|ERROR)" >> "$O/staging-sweep.txt"
    [ $rc = 0 ] || echo "$shape $rep ERROR exit $rc: $(tail -c 300 "$T/one.txt" | tr '\n' ' ')" >> "$O/staging-sweep.txt"
  done
done
echo "staging-sweep: $(grep -c metric "$O/staging-sweep.txt") metrics, $(grep -c ERROR "$O/staging-sweep.txt") errors"
