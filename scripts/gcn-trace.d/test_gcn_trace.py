"""Tests of scripts/gcn-trace: differences planted in a run of our plugin (a kernarg
offset, a packet field, a pointer into another block, a spec check) must make the
comparison fail; renumbered blocks and the differences docs/gcn-launch.md explains must
not. The fixture (fixtures/base) is a real trace of GCC 16's plugin running
tests/gcn-corpus/target_basic.c on the stand-in."""

import importlib.machinery
import importlib.util
import io
import os
import re
import shutil
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
_loader = importlib.machinery.SourceFileLoader("gcn_trace", os.path.join(HERE, "..", "gcn-trace"))
_spec = importlib.util.spec_from_loader("gcn_trace", _loader)
gt = importlib.util.module_from_spec(_spec)
_loader.exec_module(gt)
BASE = os.path.join(HERE, "fixtures", "base")


class Runs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.stock = os.path.join(self.tmp, "stock")
        shutil.copytree(BASE, self.stock)
        self.explained = gt.explanations()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def ours(self, edit=lambda t: t, name="ours"):
        """A copy of the stock run with its trace passed through `edit`."""
        d = os.path.join(self.tmp, name)
        shutil.copytree(BASE, d)
        with open(os.path.join(d, "trace")) as f:
            text = f.read()
        new = edit(text)
        with open(os.path.join(d, "trace"), "w") as f:
            f.write(new)
        return d

    def compare(self, ours, name="gcc-16 target_basic/base", **kw):
        out = io.StringIO()
        exp, unexp = gt.compare(self.stock, ours, self.explained, name, out=out, **kw)
        return exp, unexp, out.getvalue()

    def planted(self, old, new, count=1):
        def edit(text):
            self.assertEqual(text.count(old), count, "the fixture holds %r" % old)
            return text.replace(old, new)
        return self.ours(edit)

    def test_identical_runs_agree(self):
        self.assertEqual(self.compare(self.ours())[:2], (0, 0))

    def test_a_planted_kernarg_offset_fails(self):
        # The stack pointer 8 bytes further into the team arena block.
        ours = self.planted("stack=B6+0x10000", "stack=B6+0x10008")
        exp, unexp, text = self.compare(ours)
        self.assertEqual(unexp, 1, text)
        self.assertIn("UNEXPLAINED gcc-16 target_basic/base: L0.1 ka.stack", text)
        self.assertIn("stock: eph+0x10000", text)
        self.assertIn("ours:  eph+0x10008", text)

    def test_a_planted_packet_field_fails(self):
        ours = self.planted("index=1 kernel=I0:main._omp_fn.0 header=0x1402 setup=3 wg=1,64,16 reserved0=0 grid=1,64,16 private=0 group=65536",
                            "index=1 kernel=I0:main._omp_fn.0 header=0x1402 setup=3 wg=1,64,16 reserved0=0 grid=1,64,16 private=0 group=1536")
        exp, unexp, text = self.compare(ours)
        self.assertEqual(unexp, 1, text)
        self.assertIn("L0.1 packet.group", text)

    def test_a_pointer_into_another_block_fails(self):
        # out_ptr into the heap instead of the kernarg block, at the same offset.
        ours = self.planted("ka L=L0.1 dummy1=B5+0 dummy2=0xa5a5a5a5a5a5a5a5 out=B3+0x38",
                            "ka L=L0.1 dummy1=B5+0 dummy2=0xa5a5a5a5a5a5a5a5 out=B2+0x38")
        exp, unexp, text = self.compare(ours)
        self.assertEqual(unexp, 1, text)
        self.assertIn("stock: kernarg+0x38", text)
        self.assertIn("ours:  heap+0x38", text)

    def test_a_written_stale_word_fails(self):
        ours = self.planted("dummy2=0xa5a5a5a5a5a5a5a5", "dummy2=0", count=3)
        self.assertEqual(self.compare(ours)[1], 3)

    def test_renumbered_blocks_agree(self):
        # Our plugin allocating in another order: every block id different.
        def renumber(text):
            return re.sub(r"\bB(=?)(\d+)\b", lambda m: "B%s%d" % (m.group(1), int(m.group(2)) + 100), text)
        self.assertEqual(self.compare(self.ours(renumber))[:2], (0, 0))

    def test_swapped_blocks_fail(self):
        # The heap and the team arena block exchanged in one launch: names by role.
        ours = self.planted("ka L=L0.1 dummy1=B5+0 dummy2=0xa5a5a5a5a5a5a5a5 out=B3+0x38 heap=B2+0 arena=B6+0",
                            "ka L=L0.1 dummy1=B5+0 dummy2=0xa5a5a5a5a5a5a5a5 out=B3+0x38 heap=B6+0 arena=B2+0")
        self.assertGreaterEqual(self.compare(ours)[1], 2)

    def test_explained_differences_pass_and_are_counted(self):
        ours = self.planted("timeout=1000000", "timeout=20000", count=3)
        exp, unexp, text = self.compare(ours)
        self.assertEqual((exp, unexp), (3, 0), text)
        self.assertIn("explained gcc-16 target_basic/base: L0.1 wait.timeouts", text)
        self.assertIn("why:", text)

    def test_scoped_explanations_apply_to_their_runs_only(self):
        def edit(text):
            return text
        ours = self.ours(edit)
        with open(os.path.join(ours, "stderr"), "w") as f:
            f.write("libgomp: GCN_HEAP_SIZE='1m' is read as 1\n")
        self.assertEqual(self.compare(ours, name="gcc-16 target_basic/invalid-heap-1m")[:2], (1, 0))
        self.assertEqual(self.compare(ours, name="gcc-16 target_basic/base")[:2], (0, 1))

    def test_failed_spec_checks_fail_even_when_equal(self):
        line = "bad main._omp_fn.0: group segment 1536, want 65536\n"
        with open(os.path.join(self.stock, "trace"), "a") as f:
            f.write(line)
        ours = self.ours(lambda t: t + line)
        self.assertEqual(self.compare(ours)[1], 1)
        self.assertEqual(self.compare(ours, allow_bad=True)[1], 0)

    def test_program_output_and_status_are_compared(self):
        ours = self.ours()
        with open(os.path.join(ours, "rc"), "w") as f:
            f.write("3\n")
        with open(os.path.join(ours, "stdout"), "a") as f:
            f.write("extra\n")
        exp, unexp, text = self.compare(ours)
        self.assertEqual(unexp, 2, text)
        self.assertIn("program.rc", text)

    def test_a_missing_launch_fails(self):
        def drop(text):
            return "\n".join(l for l in text.splitlines() if "L=L0.2" not in l) + "\n"
        self.assertGreater(self.compare(self.ours(drop))[1], 5)


class Docs(unittest.TestCase):
    def test_the_docs_table_is_read(self):
        pats = dict(gt.explanations())
        self.assertIn("L* wait.timeouts", pats)
        self.assertTrue(all(why for why in pats.values()), "every row gives its reason")

    def test_scoped_patterns(self):
        self.assertTrue(gt.explains("*/invalid-*: program.stderr.*", "gcc-14 target_basic/invalid-heap-1m", "program.stderr.1"))
        self.assertFalse(gt.explains("*/invalid-*: program.stderr.*", "gcc-14 target_basic/base", "program.stderr.1"))
        self.assertTrue(gt.explains("L* wait.timeouts", "any", "L3.7 wait.timeouts"))


if __name__ == "__main__":
    unittest.main()


class Gcc17(unittest.TestCase):
    """The rows for GCC 17 (docs/gcn-launch.md §1a) explain only their own keys, only
    in runs named gcc-17."""

    setUp, tearDown, ours, compare = Runs.setUp, Runs.tearDown, Runs.ours, Runs.compare

    def bigger_kernarg(self, text):
        self.assertEqual(text.count("region=kernarg size=270408"), 4, "the fixture's kernarg block")
        return text.replace("region=kernarg size=270408", "region=kernarg size=274432")

    def test_a_kernarg_size_is_explained_under_17_only(self):
        ours = self.ours(self.bigger_kernarg)
        exp, unexp, text = self.compare(ours, name="gcc-17 target_basic/base")
        self.assertEqual((exp, unexp), (4, 0), text)
        self.assertIn("alloc.kernarg.kernarg.sizes", text)
        exp, unexp, text = self.compare(ours, name="gcc-16 target_basic/base")
        self.assertEqual(unexp, 4, text)

    def test_kernarg_block_counts_stay_compared(self):
        # One more kernarg block, of the size that differs: the count still fails.
        def edit(text):
            return self.bigger_kernarg(text) + "alloc B=99 region=kernarg size=274432\n"
        exp, unexp, text = self.compare(self.ours(edit), name="gcc-17 target_basic/base")
        self.assertGreaterEqual(unexp, 1, text)
        self.assertIn("UNEXPLAINED gcc-17 target_basic/base: alloc.other.kernarg.allocated", text)

    def test_the_apu_query_is_explained_and_no_other(self):
        ours = self.ours(lambda t: t.replace("init\n", "init\nquery agent attr=0xa114\nquery agent attr=0xa115\n", 1))
        exp, unexp, text = self.compare(ours, name="gcc-17 target_basic/base")
        self.assertEqual((exp, unexp), (1, 1), text)
        self.assertIn("UNEXPLAINED gcc-17 target_basic/base: host.query.agent.0xa115", text)

    def test_a_table_past_the_kernarg_block_is_named(self):
        ours = self.ours(lambda t: t.replace("ka L=L0.1 ", "arg L=L0.1 where=kernarg\nka L=L0.1 ", 1))
        stock_trace = os.path.join(self.stock, "trace")
        with open(stock_trace) as f:
            t = f.read()
        with open(stock_trace, "w") as f:
            f.write(t.replace("ka L=L0.1 ", "arg L=L0.1 where=past-kernarg\nka L=L0.1 ", 1))
        exp, unexp, text = self.compare(ours, name="gcc-17 target_basic/base")
        self.assertEqual((exp, unexp), (1, 0), text)
        self.assertIn("L0.1 kernarg.arg", text)
        self.assertEqual(self.compare(ours, name="gcc-16 target_basic/base")[1], 1)
