"""Tests for compare.py (results-file parsing and A/B comparison); no GPU needed."""
import io
import os
import sys
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

FIX = os.path.join(HERE, "fixtures")
A, B = os.path.join(FIX, "results-a.txt"), os.path.join(FIX, "results-b.txt")
BASELINE = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "baseline"))


def run_main(args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = compare.main(args)
    return rc, out.getvalue(), err.getvalue()


class ParseTest(unittest.TestCase):
    def test_line_forms(self):
        r = compare.parse_line("FAIL: libgomp.c/x.c [exit 1] (0.02s)\n")
        self.assertEqual((r.status, r.name, r.detail, r.secs), ("FAIL", "libgomp.c/x.c", "exit 1", 0.02))
        r = compare.parse_line("PASS: libgomp.c-c++-common/y.c@c++ (12.345s)")
        self.assertEqual((r.status, r.name, r.detail, r.secs), ("PASS", "libgomp.c-c++-common/y.c@c++", "", 12.345))
        r = compare.parse_line("FAIL: a/b.c [output check error: grep: x [y] z] (1s)")
        self.assertEqual(r.detail, "output check error: grep: x [y] z")
        r = compare.parse_line("SKIP: libgomp.fortran/t.f90 [requires omp_usm]")
        self.assertEqual((r.status, r.secs), ("SKIP", 0.0))
        for junk in ("# PASS 1 XFAIL 0", "2320 passed, 21 failed, 41 skipped", "", "PASSED: x (1s)",
                     "PASS:libgomp.c/x.c (1s)"):
            self.assertIsNone(compare.parse_line(junk), junk)

    def test_parse_fixture(self):
        a, b = compare.parse_file(A), compare.parse_file(B)
        self.assertEqual(len(a), 12)
        self.assertEqual(len(b), 12)               # comments and summary lines ignored
        self.assertEqual(a["libgomp.c++/epsilon.C"].status, "XFAIL")
        self.assertTrue(a["libgomp.c++/epsilon.C"].passed)
        self.assertFalse(a["libgomp.c-c++-common/zeta.c"].passed)

    def test_tally(self):
        t = compare.tally(compare.parse_file(A))
        self.assertEqual(t["libgomp.c"], dict(t["libgomp.c"], **{"pass": 2, "fail": 1, "tests": 3}))
        self.assertAlmostEqual(t["libgomp.c"]["wall"], 1.85)
        self.assertEqual(t["libgomp.c-c++-common"]["timeout"], 1)
        self.assertEqual(t["libgomp.oacc-fortran"]["pass"], 1)       # XPASS counts as pass
        tot = t[None]
        self.assertEqual((tot["pass"], tot["fail"], tot["xfail"], tot["timeout"], tot["skip"], tot["tests"]),
                         (7, 2, 1, 1, 1, 12))
        self.assertAlmostEqual(tot["wall"], 1.5 + .25 + .1 + 2 + 1 + 90.44 + .5 + 0 + 3.25 + 1 + 6.78 + .01)


class CompareTest(unittest.TestCase):
    def test_regressions_and_improvements(self):
        c = compare.Comparison(compare.parse_file(A), compare.parse_file(B))
        self.assertEqual([ra.name for ra, rb in c.regressions],
                         ["libgomp.c++/delta.C", "libgomp.c/beta.c", "libgomp.fortran/iota.f90"])
        self.assertEqual([ra.name for ra, rb in c.improvements],
                         ["libgomp.c-c++-common/zeta.c", "libgomp.c/gamma.c", "libgomp.oacc-fortran/lambda.f"])
        self.assertEqual(c.only_a, ["libgomp.oacc-c-c++-common/only-in-a.c"])
        self.assertEqual(c.only_b, ["libgomp.oacc-fortran/only-in-b.f90"])
        # XPASS -> XFAIL and XFAIL -> XFAIL are neither
        self.assertEqual(c.slowdowns[0][1].name, "libgomp.c++/epsilon.C")

    def test_main_exit_and_report(self):
        rc, out, err = run_main([A, B])
        self.assertEqual(rc, 1)
        self.assertIn("regressions (passed in A, not in B): 3", out)
        self.assertIn("libgomp.c/beta.c  PASS -> FAIL [exit 134]", out)
        self.assertIn("libgomp.fortran/iota.f90  PASS -> SKIP [requires omp_usm]", out)
        self.assertIn("improvements (not passed in A, passed in B): 3", out)
        self.assertIn("only in A: 1", out)
        for suite in ("libgomp.c ", "libgomp.c++ ", "libgomp.c-c++-common ", "libgomp.fortran ",
                      "libgomp.oacc-fortran ", "libgomp.oacc-c-c++-common "):
            self.assertTrue(any(l.startswith(suite) for l in out.splitlines()), suite)
        total = [l for l in out.splitlines() if l.startswith("total")][0]
        self.assertEqual(total.split("|")[1].split(), ["7", "2", "1", "1", "1", "106.8"])
        rc, out, err = run_main([A, A])
        self.assertEqual(rc, 0)
        self.assertIn("regressions (passed in A, not in B): 0", out)
        rc, out, err = run_main(["--top", "0", B, A])
        self.assertEqual(rc, 1)                    # beta/gamma/... swapped around
        self.assertNotIn("slowdowns", out)

    def test_usage_errors(self):
        self.assertEqual(run_main([A])[0], 2)
        self.assertEqual(run_main([A, os.path.join(FIX, "no-such-file")])[0], 2)

    @unittest.skipUnless(os.path.isfile(os.path.join(BASELINE, "h100-gcc16-stock.txt")), "no %s (the H100 baseline results, kept beside the clone)" % BASELINE)
    def test_baselines_smoke(self):
        g14, g16 = (os.path.join(BASELINE, "h100-gcc%d-stock.txt" % v) for v in (14, 16))
        a = compare.parse_file(g16)
        self.assertEqual(len(a), 2382)
        t = compare.tally(a)[None]
        self.assertEqual((t["fail"] + t["timeout"], t["timeout"], t["skip"]), (21, 3, 41))
        rc, out, err = run_main([g14, g16])
        self.assertEqual(rc, 1)                    # gcc-16 fails tests gcc-14 passed
        self.assertIn("libgomp.fortran/declare-target-indirect-2.f90  PASS -> FAIL [exit 1]", out)


if __name__ == "__main__":
    unittest.main()
