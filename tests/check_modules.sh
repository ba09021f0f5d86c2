#!/bin/bash
# check_modules.sh - the module-graph check (scripts/check-modules) on the real crates and
# on its fixtures (tests/fixtures/modules/): src, nvptx/src and gcn/src pass (breaks
# listed in scripts/check-modules.known are printed as KNOWN); each fixture that breaks a
# rule fails with the break named; the clean fixture passes; a known-break line that no
# longer occurs fails. Prints "N passed, M failed".
# usage: tests/check_modules.sh     (no arguments; needs python3)
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "check_modules.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 0 ] || { echo "check_modules.sh: takes no arguments, got '$*' (see $0 --help)" >&2; exit 2; }
set -uo pipefail
cd "$(dirname "$0")/.."
F=tests/fixtures/modules
pass=0 fail=0
check() {  # check NAME WANT-STATUS WANT-TEXT... -- ARGS...: run, compare status and output
  local name=$1 want=$2 out rc t; shift 2
  local texts=()
  while [ "$1" != -- ]; do texts+=("$1"); shift; done; shift
  out=$(scripts/check-modules "$@" 2>&1); rc=$?
  echo "$out" | sed 's/^/    /'
  if [ "$rc" != "$want" ]; then
    echo "FAIL: $name: exit status $rc, wanted $want"; fail=$((fail + 1)); return
  fi
  for t in "${texts[@]}"; do
    if ! grep -qF -- "$t" <<< "$out"; then
      echo "FAIL: $name: output lacks '$t'"; fail=$((fail + 1)); return
    fi
  done
  echo "PASS: $name (exit status $rc)"; pass=$((pass + 1))
}
check "the crates (src, nvptx/src, gcn/src)" 0 "PASS: src:" "PASS: nvptx/src:" "PASS: gcn/src:" --
check "fixture circle: two circles found" 1 \
  "BREAK: circle $F/circle/src: a <-> b" "BREAK: circle $F/circle/src: c <-> d <-> e" \
  "$F/circle/src/a/inner.rs:1: use crate::b::B;" -- --root $F/circle/src
check "fixture up: imports from the parent's body and from lib.rs found" 1 \
  "BREAK: up $F/up/src/f/x.rs -> $F/up/src/f/mod.rs" \
  "BREAK: up $F/up/src/f/y.rs -> $F/up/src/lib.rs" -- --root $F/up/src
check "fixture impl_up: a child's impl of its parent's (or lib.rs's) type or trait found" 1 \
  "BREAK: up $F/impl_up/src/g/split.rs -> $F/impl_up/src/g/mod.rs" \
  "BREAK: up $F/impl_up/src/g/by_path.rs -> $F/impl_up/src/g/mod.rs" \
  "BREAK: up $F/impl_up/src/g/tr.rs -> $F/impl_up/src/g/mod.rs" \
  "BREAK: up $F/impl_up/src/g/root.rs -> $F/impl_up/src/lib.rs" -- --root $F/impl_up/src
check "fixture clean: passes" 0 "PASS: $F/clean/src:" -- --root $F/clean/src
known=$(mktemp); trap 'rm -f "$known"' EXIT
printf 'circle %s/circle/src: a <-> b\ncircle %s/circle/src: c <-> d <-> e\n' $F $F > "$known"
check "fixture circle with its breaks listed as known: passes" 0 \
  "KNOWN: circle $F/circle/src: a <-> b" -- --known "$known" --root $F/circle/src
printf 'circle %s/clean/src: core <-> tools\n' $F > "$known"
check "a known break that no longer occurs: fails" 1 "no longer occurs" -- --known "$known" --root $F/clean/src
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
