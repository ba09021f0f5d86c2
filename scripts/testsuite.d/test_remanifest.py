"""Tests for remanifest.py (re-planning a cached bundle's manifest without compiling)."""
import io
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import remanifest  # noqa: E402

FSRC = os.path.join(HERE, "fixtures", "src")


class RemanifestTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="remanifest.")
        b = self.b = os.path.join(self.tmp, "bundle-16")
        os.makedirs(os.path.join(b, "bin", "libgomp.c"))
        os.makedirs(os.path.join(b, "bin", "libgomp.oacc-fortran"))
        # binaries for two planned tests and one the planner no longer knows
        for n in ("libgomp.c/env-vars.c", "libgomp.oacc-fortran/stop-like.f", "libgomp.c/gone.c"):
            open(os.path.join(b, "bin", n + ".exe"), "w").close()
        old = [
            ["libgomp.c/env-vars.c", "bin/libgomp.c/env-vars.c.exe", "0", "-", "600",
             "OMP_STACKSIZE_ALL=42%20M;OMP_SCHEDULE=guided,2", "-", "0", "0", "libgomp.c"],
            ["libgomp.oacc-fortran/stop-like.f", "bin/libgomp.oacc-fortran/stop-like.f.exe", "1",
             "(?s)old-regex", "300", "ACC_DEVICE_TYPE=nvidia", "-", "0", "0", "libgomp.oacc-fortran"],
            ["libgomp.c/gone.c", "bin/libgomp.c/gone.c.exe", "0", "-", "300", "-", "-", "0", "0", "libgomp.c"],
        ]
        with open(os.path.join(b, "manifest.tsv"), "w") as fh:
            fh.write("".join("\t".join(r) + "\n" for r in old))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_replan(self):
        out = io.StringIO()
        res = remanifest.replan(FSRC, self.b, out=out)
        self.assertEqual(res["changed"], ["libgomp.oacc-fortran/stop-like.f"])
        self.assertEqual(res["dropped"], ["libgomp.c/gone.c"])
        self.assertEqual(res["added"], [])
        # planned for the bundle's two suites, no binary: needs a rebuild
        self.assertIn("libgomp.c/output-xfail.c", res["unbuilt"])
        self.assertIn("libgomp.oacc-fortran/todo-output-like.f90", res["unbuilt"])
        self.assertNotIn("libgomp.fortran/present-like.f90", res["unbuilt"])   # suite not in bundle
        rows = remanifest.read_manifest(os.path.join(self.b, "manifest.tsv"))
        self.assertEqual([r[0] for r in rows], ["libgomp.c/env-vars.c", "libgomp.oacc-fortran/stop-like.f"])
        self.assertTrue(rows[1][3].startswith("(?s)CheCKpOInT"))
        self.assertTrue(os.path.exists(os.path.join(self.b, "manifest.tsv.old")))
        self.assertIn("manifest.tsv: 2 tests (was 3); 1 changed, 0 added, 1 dropped", out.getvalue())
        # a second run keeps the first backup and changes nothing more
        res = remanifest.replan(FSRC, self.b, out=io.StringIO())
        self.assertEqual((res["changed"], res["dropped"]), ([], []))
        old = remanifest.read_manifest(os.path.join(self.b, "manifest.tsv.old"))
        self.assertEqual(len(old), 3)


if __name__ == "__main__":
    unittest.main()
