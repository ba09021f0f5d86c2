#!/bin/bash
# check_names.sh - the one-name check (scripts/check-names) on the real crates and on its
# fixtures (tests/fixtures/names/): src, nvptx/src and gcn/src pass with the project's
# allow-list (scripts/check-names.allow), which must stay empty; each fixture that
# repeats a name fails with the name and its places; the clean fixture passes; an
# allowed name is printed as ALLOWED; an allowed name that no longer repeats fails.
# Prints "N passed, M failed".
# usage: tests/check_names.sh     (no arguments; needs python3)
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "check_names.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 0 ] || { echo "check_names.sh: takes no arguments, got '$*' (see $0 --help)" >&2; exit 2; }
set -uo pipefail
cd "$(dirname "$0")/.."
F=tests/fixtures/names
pass=0 fail=0
check() {  # check NAME WANT-STATUS WANT-TEXT... -- ARGS...: run, compare status and output
  local name=$1 want=$2 out rc t; shift 2
  local texts=()
  while [ "$1" != -- ]; do texts+=("$1"); shift; done; shift
  out=$(scripts/check-names "$@" 2>&1); rc=$?
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
if grep -v '^[[:space:]]*\(#\|$\)' scripts/check-names.allow; then
  echo "FAIL: scripts/check-names.allow allows the names above: it stays empty (rename instead)"
  fail=$((fail + 1))
else
  echo "PASS: scripts/check-names.allow is empty"; pass=$((pass + 1))
fi
check "the crates (src, nvptx/src, gcn/src)" 0 "PASS: src:" "PASS: nvptx/src:" "PASS: gcn/src:" --
check "fixture dup_module: two files called ring, a folder and a file called memory" 1 \
  "BREAK: module $F/dup_module/src ring: $F/dup_module/src/device/copy/ring.rs, $F/dup_module/src/host/ring.rs" \
  "BREAK: module $F/dup_module/src memory: $F/dup_module/src/device/memory.rs, $F/dup_module/src/memory/" \
  -- --root $F/dup_module/src
check "fixture dup_type: two public types Ring, a trait and an alias Engine" 1 \
  "BREAK: type $F/dup_type/src Ring: $F/dup_type/src/device/path.rs:2, $F/dup_type/src/host/ring.rs:2" \
  "BREAK: type $F/dup_type/src Engine: $F/dup_type/src/device/kind.rs:2, $F/dup_type/src/host/engine.rs:2" \
  -- --root $F/dup_type/src
check "fixture clean: passes" 0 "PASS: $F/clean/src: 4 modules, 2 public types" -- --root $F/clean/src
allow=$(mktemp); trap 'rm -f "$allow"' EXIT
printf 'type %s/dup_type/src Ring  # a test\ntype %s/dup_type/src Engine\n' $F $F > "$allow"
check "fixture dup_type with its names allowed: passes" 0 \
  "ALLOWED: type $F/dup_type/src Ring" -- --allow "$allow" --root $F/dup_type/src
printf 'module %s/clean/src pool\n' $F > "$allow"
check "an allowed name that no longer repeats: fails" 1 "which no longer repeats" -- --allow "$allow" --root $F/clean/src
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
