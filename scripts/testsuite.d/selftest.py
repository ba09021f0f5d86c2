#!/usr/bin/env python3
"""Run the testsuite harness's own GPU-less tests (test_*.py beside this file).

usage: selftest.py [-v] [PATTERN]     (PATTERN: test module glob, default test_*.py)

Covers plan-tests.py (on the committed fixtures, and on real GCC 16 sources when
.toolchain/src-16 exists), run-tests.sh (on a fake bundle of host tools), compare.py and
remanifest.py.  Takes a few seconds.  The last line is "N passed, M failed, K skipped";
each skip reason is printed before it ("SKIPPED N: reason"), saying what would make
those tests run.  The exit status is 1 when anything failed.
"""
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class CountingResult(unittest.TextTestResult):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.passed = 0

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return 0
    bad = [a for a in argv if a.startswith("-") and a != "-v"]
    if bad or len([a for a in argv if a != "-v"]) > 1:
        sys.stderr.write("selftest.py: %s (see selftest.py --help)\n"
                         % ("unknown option '%s'" % bad[0] if bad else "at most one PATTERN"))
        return 2
    verbose = "-v" in argv
    args = [a for a in argv if a != "-v"]
    pattern = args[0] if args else "test_*.py"
    sys.path.insert(0, HERE)
    suite = unittest.defaultTestLoader.discover(HERE, pattern=pattern, top_level_dir=HERE)
    runner = unittest.TextTestRunner(verbosity=2 if verbose else 1, resultclass=CountingResult,
                                     stream=sys.stdout)
    t0 = time.time()
    r = runner.run(suite)
    # a test with failing subtests counts once
    failed = {getattr(t, "test_case", t).id() for t, _ in r.failures + r.errors}
    failed |= {t.id() for t in r.unexpectedSuccesses}
    for why in sorted({why for _, why in r.skipped}):
        n = sum(1 for _, w in r.skipped if w == why)
        print("SKIPPED %d: %s" % (n, why))
    print("selftest took %.1fs" % (time.time() - t0))
    print("%d passed, %d failed, %d skipped" % (r.passed, len(failed), len(r.skipped)))
    return 0 if r.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
