#!/bin/bash
# check_deps.sh - the dependency list check (scripts/check-deps): the crates cargo tree
# lists agree with docs/development.md's dependency table; a planted crate (one cargo
# tree does not list, pretended with --plant) fails with its name, as a new dependency
# without a line would. Prints "N passed, M failed".
# usage: tests/check_deps.sh     (no arguments; needs cargo and python3)
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "check_deps.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 0 ] || { echo "check_deps.sh: takes no arguments, got '$*' (see $0 --help)" >&2; exit 2; }
set -uo pipefail
cd "$(dirname "$0")/.."
pass=0 fail=0
check() {  # check NAME WANT-STATUS WANT-TEXT ARGS...: run, compare status and output
  local name=$1 want=$2 text=$3 out rc; shift 3
  out=$(scripts/check-deps "$@" 2>&1); rc=$?
  echo "$out" | sed 's/^/    /'
  if [ "$rc" != "$want" ]; then
    echo "FAIL: $name: exit status $rc, wanted $want"; fail=$((fail + 1))
  elif ! grep -qF -- "$text" <<< "$out"; then
    echo "FAIL: $name: output lacks '$text'"; fail=$((fail + 1))
  else
    echo "PASS: $name (exit status $rc)"; pass=$((pass + 1))
  fi
}
check "the tree's crates are the documented ones" 0 "deps: ok"
check "a planted linked crate without a line fails" 1 \
  "left-pad (linked) is built but has no line" --plant left-pad:linked
check "a documented crate of another kind fails" 1 "sha2 is fuzz, its line says linked" \
  --plant sha2:fuzz
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
