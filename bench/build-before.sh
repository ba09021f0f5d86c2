#!/bin/bash
# build-before.sh - build the nvptx plugin of an earlier commit as the benchmark's `before`
# column: CARRY_DIR/before/libgomp-plugin-nvptx.so.1 (stripped, as bench/build.sh strips
# ours) and CARRY_DIR/before/COMMIT (the full hash), which bench/device-run.sh runs with
# PLUGINS="stock before ours" and records in bench-raw.txt; with --release, the release
# baseline as the `release` column: CARRY_DIR/release/ (PLUGINS="stock release ours").
# usage: bench/build-before.sh COMMIT|--latest|--release [CARRY_DIR]   (CARRY_DIR default .carry)
#   COMMIT    anything git rev-parse takes (a hash, a tag, main~3, ...)
#   --latest  the commit whose plugin was `ours` in the last landed table: the line
#             "# plugin ours commit HASH" of bench/results/latest-raw.txt, else the
#             "built from main at HASH" of bench/results/latest.md
#   --release the release baseline: the line "release HASH" of bench/results/release.txt
#             (what it is and when it moves: that file); goes to CARRY_DIR/release/
# Runs here (the GPU machine has no compiler): checks the commit out in a temporary git
# worktree (removed at the end), runs that commit's own scripts/build there and copies
# the plugin. The worktree's target/ is a link to BEFORE_TARGET (default
# target/before-build in this checkout), kept between runs so that the dependencies
# compile once.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in --latest|--release) ;; -?*) echo "build-before.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -ge 1 ] || { echo "build-before.sh: missing COMMIT, --latest or --release (see $0 --help)" >&2; exit 2; }
[ $# -le 2 ] || { echo "build-before.sh: too many arguments (see $0 --help)" >&2; exit 2; }
case "${2:-}" in -?*) echo "build-before.sh: unknown option '$2' (see $0 --help)" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
root=$PWD
carry=${2:-.carry}
label=before
if [ "$1" = --release ]; then
  label=release
  want=$(awk '$1 == "release" {print $2; exit}' bench/results/release.txt)
  [ -n "$want" ] || { echo "build-before.sh: bench/results/release.txt names no 'release HASH'" >&2; exit 1; }
elif [ "$1" = --latest ]; then
  want=$(awk '$1 == "#" && $2 == "plugin" && $3 == "ours" && $4 == "commit" {print $5; exit}' \
           bench/results/latest-raw.txt)
  [ -n "$want" ] || want=$(grep -o 'built from main at [0-9a-f]\{7,40\}' bench/results/latest.md |
                             head -1 | awk '{print $NF}')
  [ -n "$want" ] || { echo "build-before.sh: bench/results/latest-raw.txt names no '# plugin ours commit' and latest.md no 'built from main at'" >&2; exit 1; }
else
  want=$1
fi
rev=$(git rev-parse --verify --quiet "$want^{commit}") ||
  { echo "build-before.sh: '$want' is not a commit of this repository (a shallow clone? git fetch --unshallow)" >&2; exit 1; }
echo "build-before: $label = $rev ($(git log -1 --format=%s "$rev" | cut -c1-80))"
tgt=${BEFORE_TARGET:-$root/target/before-build}
mkdir -p "$tgt"
wt=$(mktemp -d "${TMPDIR:-/tmp}/build-before.XXXXXX")
cleanup() { git -C "$root" worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"; git -C "$root" worktree prune; }
trap cleanup EXIT
git worktree add --detach --quiet "$wt" "$rev"
rm -rf "$tgt/plugin"   # no plugin of an earlier run is taken for this one
ln -s "$tgt" "$wt/target"
(cd "$wt" && scripts/build > "$tgt/build.log" 2>&1) ||
  { echo "build-before.sh: scripts/build of $rev failed; its output: $tgt/build.log" >&2; tail -20 "$tgt/build.log" >&2; exit 1; }
so=$tgt/plugin/nvptx/libgomp-plugin-nvptx.so.1
[ -f "$so" ] || so=$tgt/plugin/libgomp-plugin-nvptx.so.1   # the layout before products had directories
[ -f "$so" ] || { echo "build-before.sh: scripts/build of $rev left no nvptx plugin under $tgt/plugin" >&2; exit 1; }
mkdir -p "$carry/$label"
objcopy --strip-debug "$so" "$carry/$label/libgomp-plugin-nvptx.so.1"
echo "$rev" > "$carry/$label/COMMIT"
echo "build-before: $carry/$label/libgomp-plugin-nvptx.so.1 and $carry/$label/COMMIT ($rev)"
