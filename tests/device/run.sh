#!/bin/bash
# run.sh - on the GPU machine: run each test of CARRY_DIR/tests with the stock plugin and
# ours (bundle libraries), 60 s each, with the variables of CARRY_DIR/tests/TEST.env
# (KEY=VALUE lines) if there is one. Prints "PLUGIN TEST: PASS|FAIL|TIMEOUT (line)".
# env TEST_TIMEOUT: seconds per run (default 60).
# usage: tests/device/run.sh CARRY_DIR      (CARRY_DIR as for scripts/device/suite.sh)
set -u
C=$(cd "${1:?usage: run.sh CARRY_DIR}" && pwd)
T=/tmp/devtests; mkdir -p "$T"
[ -d "$T/bundle-16" ] || tar -xJf "$C/bundle-16.tar.xz" -C "$T"
B=$T/bundle-16
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')")
declare -A DIR=([stock]=$B/plugin [ours]=$C/plugin)
for t in "$C"/tests/*; do
  [[ $t == *.env ]] && continue
  envs=()
  [ -f "$t.env" ] && mapfile -t envs < "$t.env"
  for p in stock ours; do
    env "${envs[@]}" timeout "${TEST_TIMEOUT:-60}" "$B/lib/ld-linux-x86-64.so.2" --library-path "${DIR[$p]}:$B/lib:$CUDA_LIBDIR" \
      "$t" > "$T/out.txt" 2>&1
    rc=$?
    case $rc in
      0) v=PASS ;; 124) v=TIMEOUT ;; *) v="FAIL(exit $rc)" ;;
    esac
    echo "$p $(basename "$t"): $v ($(tail -1 "$T/out.txt" | cut -c1-200))"
  done
done
