#!/usr/bin/env python3
"""Re-plan a built bundle's manifest.tsv from the test sources, without compiling.

usage: remanifest.py SRC BUNDLE_DIR

Runs plan-tests.py (CUDA_STUB=1, as build-tests.sh is run by scripts/testsuite build) on
SRC for the suites the bundle's current manifest names, keeps the planned tests whose
binary the bundle has, and rewrites BUNDLE_DIR/manifest.tsv (the old one is kept as
manifest.tsv.old).  Prints what changed; tests the planner now wants but the bundle has
no binary for are listed as needing a rebuild (scripts/testsuite build).
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PLANNER = os.path.join(HERE, "..", "toolchain", "plan-tests.py")
DEFAULTS = ["-", "-", "0", "-", "300", "-", "-", "0", "0", "-", "0"]   # per manifest column


def read_manifest(path):
    rows = []
    with open(path, encoding="latin-1") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                rows.append(line.split("\t"))
    return rows


def replan(src, bundle, out=sys.stdout, planner=PLANNER):
    """Rewrite bundle/manifest.tsv; returns a dict of name lists (changed, added, dropped, unbuilt)."""
    old_path = os.path.join(bundle, "manifest.tsv")
    old = read_manifest(old_path)
    suites = []
    for r in old:
        if len(r) >= 10 and r[9] not in suites:
            suites.append(r[9])
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, CUDA_STUB="1")
        p = subprocess.run([sys.executable, planner, src, tmp] + suites, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        if p.returncode != 0:
            raise RuntimeError("plan-tests.py failed:\n" + p.stderr)
        new = read_manifest(os.path.join(tmp, "manifest.in.tsv"))
    oldmap = {r[0]: r for r in old}
    keep, unbuilt = [], []
    for r in new:
        (keep if os.path.isfile(os.path.join(bundle, r[1])) else unbuilt).append(r)
    newmap = {r[0]: r for r in keep}
    res = {
        # a column the old manifest lacks counts as unchanged where the new one has its default
        "changed": [r[0] for r in keep if r[0] in oldmap and oldmap[r[0]] + DEFAULTS[len(oldmap[r[0]]):] != r],
        "added": [r[0] for r in keep if r[0] not in oldmap],
        "dropped": [r[0] for r in old if r[0] not in newmap],
        "unbuilt": [r[0] for r in unbuilt],
    }
    if os.path.exists(old_path) and not os.path.exists(old_path + ".old"):
        os.replace(old_path, old_path + ".old")
    with open(old_path + ".tmp", "w", encoding="latin-1") as fh:
        for r in keep:
            fh.write("\t".join(r) + "\n")
    os.replace(old_path + ".tmp", old_path)
    w = out.write
    w("manifest.tsv: %d tests (was %d); %d changed, %d added, %d dropped\n"
      % (len(keep), len(old), len(res["changed"]), len(res["added"]), len(res["dropped"])))
    for key, what in (("changed", "changed"), ("added", "added"), ("dropped", "dropped (no longer planned)"),
                      ("unbuilt", "planned, but no binary in the bundle (failed to compile, or new: rebuild)")):
        for n in res[key]:
            w("  %s: %s\n" % (what, n))
    return res


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return 0
    bad = [a for a in argv if a.startswith("-")]
    if bad:
        sys.stderr.write("remanifest.py: unknown option '%s' (see --help)\n" % bad[0])
        return 2
    if len(argv) != 2:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    src, bundle = argv
    if not os.path.isdir(os.path.join(src, "libgomp", "testsuite")):
        sys.stderr.write("remanifest: no libgomp/testsuite in %s\n" % src)
        return 2
    if not os.path.isfile(os.path.join(bundle, "manifest.tsv")):
        sys.stderr.write("remanifest: no manifest.tsv in %s\n" % bundle)
        return 2
    replan(src, bundle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
