#!/bin/bash
# no_rebuild.sh - `cargo test` and `scripts/build` keep each other's outputs: after one
# of each, running either again compiles nothing (the product build has its own target
# directory, target/product; sharing target/release, each rebuilt what the other built;
# the tests build in target/test-fast).
# Run after scripts/test's unit and build stages, it takes seconds; on a cold tree the
# first round compiles everything once.
# usage: tests/no_rebuild.sh      (prints "N passed, M failed")
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
[ $# -eq 0 ] || { echo "no_rebuild.sh: takes no arguments, got '$*' (see $0 --help)" >&2; exit 2; }
set -uo pipefail
cd "$(dirname "$0")/.."
tests() { cargo test --locked --profile test-fast --workspace --no-run 2>&1; }
pass=0 fail=0
tests > /dev/null && scripts/build > /dev/null 2>&1 || { echo "FAIL: the first round did not build"; exit 1; }
for what in "cargo test --no-run" "scripts/build" "cargo test --no-run"; do
  if [ "$what" = scripts/build ]; then out=$(scripts/build 2>&1); else out=$(tests); fi
  if grep -q '^ *Compiling ' <<< "$out"; then
    echo "FAIL: $what after the other compiled again:"; grep '^ *Compiling ' <<< "$out" | sed 's/^/    /'
    fail=$((fail + 1))
  else
    echo "PASS: $what after the other compiled nothing"; pass=$((pass + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
