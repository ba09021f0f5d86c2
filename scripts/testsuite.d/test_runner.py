"""Tests for toolchain/run-tests.sh on a fake bundle: the host's dynamic loader, grep and
timeout stand in for the bundle's, and every "test binary" is bash running a script
given through BASH_ENV (set in the manifest's env column).  No GPU, no compiler."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
RUNNER = os.path.join(REPO, "scripts", "toolchain", "run-tests.sh")
LDSO = "/lib64/ld-linux-x86-64.so.2"
BASH, GREP, TIMEOUT = shutil.which("bash"), shutil.which("grep"), shutil.which("timeout")
STDBUF = next((p for p in ("/usr/libexec/coreutils/libstdbuf.so", "/usr/lib/coreutils/libstdbuf.so")
               if os.path.exists(p)), None)

CHECKPOINT_THEN_FATAL = 'echo " CheCKpOInT"; printf "\\nlibgomp: boom\\n" >&2; exit 1'
ORDER_RX = r"(?s)CheCKpOInT(\n|\r\n|\r)+libgomp: boom.*\z"
# name: (script, shouldfail, regex, timeout, extra env, requires, xfail, output-xfail)
TESTS = {
    "libgomp.c/pass.c": ("exit 0", 0, "-", 300, "", "-", 0, 0),
    "libgomp.c/fail.c": ("exit 3", 0, "-", 300, "", "-", 0, 0),
    "libgomp.c/shouldfail.c": ("exit 1", 1, "-", 300, "", "-", 0, 0),
    "libgomp.c/shouldfail-but-ok.c": ("exit 0", 1, "-", 300, "", "-", 0, 0),
    "libgomp.fortran/order.f90": (CHECKPOINT_THEN_FATAL, 1, ORDER_RX, 300, "", "-", 0, 0),
    "libgomp.fortran/mismatch.f90": (CHECKPOINT_THEN_FATAL, 1, "(?s)nope", 300, "", "-", 0, 0),
    "libgomp.fortran/outx-mismatch.f90": (CHECKPOINT_THEN_FATAL, 1, "(?s)nope", 300, "", "-", 0, 1),
    "libgomp.fortran/outx-match.f90": (CHECKPOINT_THEN_FATAL, 1, ORDER_RX, 300, "", "-", 0, 1),
    "libgomp.c/xfail-fail.c": ("exit 1", 0, "-", 300, "", "-", 1, 0),
    "libgomp.c/xfail-pass.c": ("exit 0", 0, "-", 300, "", "-", 1, 0),
    "libgomp.c/timeout.c": ("exec sleep 20", 0, "-", 1, "", "-", 0, 0),
    "libgomp.c/timeout-xfail.c": ("exec sleep 20", 0, "-", 1, "", "-", 1, 0),
    "libgomp.c/exit124.c": ("exit 124", 0, "-", 300, "", "-", 0, 0),
    "libgomp.c/requires.c": ("exit 0", 0, "-", 300, "", "omp_usm", 0, 0),
    "libgomp.c/grep-error.c": ("echo x", 0, "(", 300, "", "-", 0, 0),
    "libgomp.c/env.c": (
        '[ "$GFORTRAN_UNBUFFERED_PRECONNECTED" = y ] || exit 11\n'
        '[ "$FOO" = "a b;c%" ] || exit 12\n'
        '[ "$LC_ALL" = C ] || exit 13\n'
        '[ -e subr.ptx ] || exit 14\n'
        + ('[ "$_STDBUF_O" = L ] || exit 15\n' if STDBUF else "")
        + 'exit 0', 0, "-", 300, "FOO=a%20b%3Bc%25", "-", 0, 0),
}
EXCLUSIVE = {"libgomp.c/pass.c", "libgomp.c/shouldfail.c"}
EXPECT = {
    "libgomp.c/pass.c": ("PASS", ""),
    "libgomp.c/fail.c": ("FAIL", "exit 3"),
    "libgomp.c/shouldfail.c": ("PASS", ""),
    "libgomp.c/shouldfail-but-ok.c": ("FAIL", "exit 0, should fail"),
    "libgomp.fortran/order.f90": ("PASS", ""),
    "libgomp.fortran/mismatch.f90": ("FAIL", "output mismatch"),
    "libgomp.fortran/outx-mismatch.f90": ("XFAIL", "output"),
    "libgomp.fortran/outx-match.f90": ("XPASS", "output"),
    "libgomp.c/xfail-fail.c": ("XFAIL", "exit 1"),
    "libgomp.c/xfail-pass.c": ("XPASS", "exit 0"),
    "libgomp.c/timeout.c": ("TIMEOUT", "after 1s"),
    "libgomp.c/timeout-xfail.c": ("XFAIL", "timeout after 1s"),
    "libgomp.c/exit124.c": ("FAIL", "exit 124"),
    "libgomp.c/requires.c": ("SKIP", "requires omp_usm"),
    "libgomp.c/env.c": ("PASS", ""),
}


def pct(s):
    return "".join("%%%02X" % ord(c) if c in "%\t\n\r ;=\\" else c for c in s)


@unittest.skipUnless(os.path.exists(LDSO) and BASH and GREP and TIMEOUT, "needs x86_64 ld.so, bash, grep, timeout")
class FakeBundleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="fake-bundle.")
        b = cls.b = os.path.join(cls.tmp, "bundle-0")
        for d in ("lib", "plugin", "tools", "probe", "data", "bin/libgomp.c", "bin/libgomp.fortran", "scripts"):
            os.makedirs(os.path.join(b, d))
        os.symlink(os.path.realpath(LDSO), os.path.join(b, "lib", "ld-linux-x86-64.so.2"))
        os.symlink(GREP, os.path.join(b, "tools", "grep"))
        os.symlink(TIMEOUT, os.path.join(b, "tools", "timeout"))
        if STDBUF:
            shutil.copy(STDBUF, os.path.join(b, "tools", "libstdbuf.so"))
        for probe, prog in (("offload_device.exe", "true"), ("omp_usm.exe", "false"), ("libcuda-probe", "true")):
            os.symlink(shutil.which(prog), os.path.join(b, "probe", probe))
        open(os.path.join(b, "plugin", "libgomp-plugin-nvptx.so.1"), "w").close()
        open(os.path.join(b, "data", "subr.ptx"), "w").close()
        shutil.copy(RUNNER, os.path.join(b, "run-tests.sh"))
        rows = []
        for i, (name, (script, sf, rx, tmo, env, req, xf, ox)) in enumerate(sorted(TESTS.items())):
            sp = os.path.join(b, "scripts", "t%d.sh" % i)
            with open(sp, "w") as fh:
                fh.write(script + "\n")
            binp = "bin/" + name + ".exe"
            os.symlink(os.path.realpath(BASH), os.path.join(b, binp))
            envcol = "BASH_ENV=" + pct(sp) + (";" + env if env else "")
            cols = [name, binp, str(sf), rx, str(tmo), envcol, req, str(xf), str(ox), name.split("/")[0]]
            if name in EXCLUSIVE:                       # others: the older 10-column form
                cols.append("1")
            rows.append("\t".join(cols))
        with open(os.path.join(b, "manifest.tsv"), "w") as fh:
            fh.write("\n".join(rows) + "\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_bundle(self, out, **env):
        e = dict(os.environ, OUT=out, JOBS="16", MAX_TIMEOUT="30")
        e.pop("PLUGIN_DIR", None)
        e.update(env)
        p = subprocess.run(["bash", os.path.join(self.b, "run-tests.sh")], env=e, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        return p

    def test_judgements(self):
        out = os.path.join(self.tmp, "res")
        p = self.run_bundle(out)
        self.assertEqual(p.returncode, 0, p.stderr)
        res = compare.parse_file(os.path.join(out, "results.txt"))
        self.assertEqual(sorted(res), sorted(TESTS))
        for name, (st, det) in EXPECT.items():
            with self.subTest(name):
                self.assertEqual((res[name].status, res[name].detail), (st, det))
        ge = res["libgomp.c/grep-error.c"]
        self.assertEqual(ge.status, "FAIL")
        self.assertTrue(ge.detail.startswith("output check error:"), ge.detail)
        self.assertEqual(p.stdout.strip().splitlines()[-1], "9 passed, 6 failed, 1 skipped")
        # exclusive tests run one by one after the others
        ran = [l.split()[1] for l in p.stdout.splitlines() if l.split(":")[0] in compare.STATUSES]
        self.assertEqual(set(ran[-2:]), EXCLUSIVE)
        self.assertIn("2 of them run alone at the end", p.stdout)
        self.assertTrue(os.path.exists(os.path.join(out, "failed-outputs", "libgomp.c__fail.c.txt")))
        self.assertFalse(os.path.exists(os.path.join(out, "failed-outputs", "libgomp.c__pass.c.txt")))

    def test_tty_emulation_off(self):
        out = os.path.join(self.tmp, "res-notty")
        p = self.run_bundle(out, TTY_EMU="0", FILTER="/env")
        res = compare.parse_file(os.path.join(out, "results.txt"))
        self.assertEqual(res["libgomp.c/env.c"].detail, "exit 11")

    def test_nothing_selected(self):
        out = os.path.join(self.tmp, "res-none")
        p = self.run_bundle(out, FILTER="^no-such-test$")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip().splitlines()[-1], "0 passed, 0 failed, 0 skipped")
        self.assertNotIn("FAIL:", p.stdout)
        self.assertEqual(os.path.getsize(os.path.join(out, "results.txt")), 0)

    def test_shard_and_missing_plugin(self):
        out = os.path.join(self.tmp, "res-shard")
        p = self.run_bundle(out, SHARD="2/4", FILTER="^libgomp.c/")
        n = len([l for l in p.stdout.splitlines() if l.split(":")[0] in compare.STATUSES])
        c = len([t for t in TESTS if t.startswith("libgomp.c/")])
        self.assertEqual(n, len(range(1, c, 4)))
        p = self.run_bundle(os.path.join(self.tmp, "res-np"), PLUGIN_DIR=self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no libgomp-plugin-nvptx.so.1", p.stderr)


if __name__ == "__main__":
    unittest.main()
