#!/usr/bin/env python3
"""Compare two libgomp testsuite results files (run-tests.sh's results.txt format).

usage: compare.py [--top N] [--all] A B

Each results line is "STATUS: test [detail] (secs)", STATUS one of PASS FAIL TIMEOUT
XFAIL XPASS SKIP; other lines (comments, run-tests.sh's summary) are ignored, so a
run-tests.sh log works too.  Prints, for A and B, a per-suite table (suite = the test
name's first path component) of pass (PASS+XPASS), fail, xfail, timeout and skip counts
and the wall time (sum of the per-test seconds), then the regressions (passed in A,
did not pass in B; "passed" is PASS, XPASS or XFAIL, as run-tests.sh counts it), the
improvements (the reverse), tests present in only one file (the first 40 of each
unless --all), and the tests that slowed down most among those that passed in both
(--top N, default 10; 0: none).
Exit status: 0 no regressions, 1 regressions, 2 usage or unreadable input.
"""
import argparse
import re
import sys

STATUSES = ("PASS", "FAIL", "TIMEOUT", "XFAIL", "XPASS", "SKIP")
PASSED = {"PASS", "XPASS", "XFAIL"}
COLUMNS = ("pass", "fail", "xfail", "timeout", "skip")
LABELS = ("pass", "fail", "xfail", "tmout", "skip")
_COLUMN_OF = {"PASS": "pass", "XPASS": "pass", "FAIL": "fail", "XFAIL": "xfail",
              "TIMEOUT": "timeout", "SKIP": "skip"}
LINE = re.compile(r"^(%s): (\S+)(?: \[(.*)\])? \(([0-9]+(?:\.[0-9]*)?)s\)\s*$" % "|".join(STATUSES))
# SKIP lines carry no time in some versions of run-tests.sh
LINE_NOTIME = re.compile(r"^(%s): (\S+)(?: \[(.*)\])?\s*$" % "|".join(STATUSES))


class Result:
    __slots__ = ("status", "name", "detail", "secs")

    def __init__(self, status, name, detail, secs):
        self.status, self.name, self.detail, self.secs = status, name, detail, secs

    def __repr__(self):
        return "Result(%r, %r, %r, %r)" % (self.status, self.name, self.detail, self.secs)

    @property
    def passed(self):
        return self.status in PASSED


def parse_line(line):
    """One results line -> Result, or None for anything else."""
    line = line.rstrip("\n")
    m = LINE.match(line)
    if m:
        return Result(m.group(1), m.group(2), m.group(3) or "", float(m.group(4)))
    m = LINE_NOTIME.match(line)
    if m:
        return Result(m.group(1), m.group(2), m.group(3) or "", 0.0)
    return None


def parse(lines):
    """Iterable of lines -> {test name: Result} (a repeated name: the last line wins)."""
    out = {}
    for line in lines:
        r = parse_line(line)
        if r is not None:
            out[r.name] = r
    return out


def parse_file(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return parse(fh)


def suite_of(name):
    return name.split("/", 1)[0]


def tally(results):
    """{name: Result} -> {suite: {column: count, 'wall': secs, 'tests': n}}, plus 'total'."""
    table = {}
    for r in results.values():
        for key in (suite_of(r.name), None):
            row = table.setdefault(key, dict({c: 0 for c in COLUMNS}, wall=0.0, tests=0))
            row[_COLUMN_OF[r.status]] += 1
            row["wall"] += r.secs
            row["tests"] += 1
    return table


class Comparison:
    def __init__(self, a, b):
        self.a, self.b = a, b
        both = sorted(set(a) & set(b))
        self.regressions = [(a[n], b[n]) for n in both if a[n].passed and not b[n].passed]
        self.improvements = [(a[n], b[n]) for n in both if not a[n].passed and b[n].passed]
        self.only_a = sorted(set(a) - set(b))
        self.only_b = sorted(set(b) - set(a))
        self.slowdowns = sorted(((b[n].secs - a[n].secs, a[n], b[n]) for n in both
                                 if a[n].passed and b[n].passed and b[n].secs > a[n].secs),
                                key=lambda t: (-t[0], t[1].name))


def _row(label, ra, rb):
    def cells(r):
        if r is None:
            return " ".join("%6s" % "-" for _ in COLUMNS) + " %9s" % "-"
        return " ".join("%6d" % r[c] for c in COLUMNS) + " %9.1f" % r["wall"]
    return "%-28s | %s | %s" % (label, cells(ra), cells(rb))


def _status(r):
    return r.status + (" [%s]" % r.detail if r.detail else "")


def report(cmp, name_a="A", name_b="B", top=10, out=None, limit=40):
    out = out or sys.stdout
    w = out.write
    ta, tb = tally(cmp.a), tally(cmp.b)
    w("A: %s (%d tests)\nB: %s (%d tests)\n\n" % (name_a, len(cmp.a), name_b, len(cmp.b)))
    head = " ".join("%6s" % c for c in LABELS) + " %9s" % "wall(s)"
    w("%-28s | %s | %s\n" % ("", ("A" + " " * len(head))[:len(head)], ("B" + " " * len(head))[:len(head)]))
    w("%-28s | %s | %s\n" % ("suite", head, head))
    w("-" * (28 + 2 * (len(head) + 3)) + "\n")
    for s in sorted(k for k in set(ta) | set(tb) if k is not None):
        w(_row(s, ta.get(s), tb.get(s)) + "\n")
    w("-" * (28 + 2 * (len(head) + 3)) + "\n")
    w(_row("total", ta.get(None), tb.get(None)) + "\n\n")

    w("regressions (passed in A, not in B): %d\n" % len(cmp.regressions))
    for ra, rb in cmp.regressions:
        w("  %s  %s -> %s\n" % (ra.name, _status(ra), _status(rb)))
    w("improvements (not passed in A, passed in B): %d\n" % len(cmp.improvements))
    for ra, rb in cmp.improvements:
        w("  %s  %s -> %s\n" % (ra.name, _status(ra), _status(rb)))
    for label, names, res in (("A", cmp.only_a, cmp.a), ("B", cmp.only_b, cmp.b)):
        if names:
            w("only in %s: %d\n" % (label, len(names)))
            for n in names[:limit] if limit else names:
                w("  %s  %s\n" % (n, _status(res[n])))
            if limit and len(names) > limit:
                w("  ... %d more (--all lists them)\n" % (len(names) - limit))
    if top and cmp.slowdowns:
        w("largest slowdowns, passed in both (B - A): top %d of %d\n" % (min(top, len(cmp.slowdowns)), len(cmp.slowdowns)))
        for d, ra, rb in cmp.slowdowns[:top]:
            w("  %+9.2fs  %s  (%.2fs -> %.2fs)\n" % (d, ra.name, ra.secs, rb.secs))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="compare", description="Compare two results files.",
                                 usage="%(prog)s [--top N] [--all] A B")
    ap.add_argument("--top", type=int, default=10, help="slowdowns to list (0: none)")
    ap.add_argument("--all", action="store_true", help="list every test present in only one file")
    ap.add_argument("a", metavar="A")
    ap.add_argument("b", metavar="B")
    argv = sys.argv[1:] if argv is None else argv
    bad = [x for x in argv if x.startswith("-") and x not in ("-h", "--help", "--all")
           and not x.startswith("--top")]
    if bad:
        sys.stderr.write("compare: unknown option '%s' (see --help)\n" % bad[0])
        return 2
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    try:
        a, b = parse_file(args.a), parse_file(args.b)
    except OSError as e:
        sys.stderr.write("compare: %s\n" % e)
        return 2
    for path, res in ((args.a, a), (args.b, b)):
        if not res:
            sys.stderr.write("compare: warning: no results lines in %s\n" % path)
    c = Comparison(a, b)
    report(c, args.a, args.b, args.top, limit=0 if args.all else 40)
    return 1 if c.regressions else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:                 # e.g. piped into head
        sys.stderr.close()
        sys.exit(1)
