#!/usr/bin/env python3
"""bench_gate.py - the benchmark's regression gate (bench/report.py) on a fixture, no GPU.

usage: tests/bench_gate.py        (scripts/test stage bench-gate; takes no arguments)
Runs bench/report.py on tests/fixtures/bench/gate-raw.txt (bench-raw.txt's format: stock,
before and ours, 5 repetitions; each row's name says what it is) and on variants of it
made here, and checks: a row 5 % worse than before and stock is marked a regression and
a row 1 % worse is not, for times (us, ms) and for rates (GB/s, 1/s: lower is worse);
5 % better is not marked; a row 5 % worse with a wide spread is marked "within spread"
and does not fail the gate; a row only stock beats is marked against stock alone;
--gate exits 1 with the regressions, 0 without them, and 0 without --gate whatever the
verdict; --threshold moves the line; an ERROR line of ours or a row ours lacks fails
the gate, one of stock does not; a run with nothing to judge fails it; the plugins'
commits are printed; the release baseline's column (`release`, bench/build-before.sh
--release) is judged as before is, alone with stock or beside before (a row only the
release beats is marked against it alone), with its ratio column; and every unit in
bench/results/*-raw.txt has a direction. Then the CPU gate's judge (bench/cpu-gate.py,
scripts/test cpu-gate) on made-up counts: a shape 1.5 % above the release fails and
0.5 % passes; a changed driver call fails; an allow line lets a shape rise up to its
bound and calls change to exactly its values, and no further; an allowance not needed is
reported, a malformed one refused; bench/cpu-allow.txt parses.
Prints PASS/FAIL per check; exit status 1 when any check fails. Python 3.11 stdlib only."""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPORT = os.path.join(ROOT, "bench", "report.py")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "bench", "gate-raw.txt")
PLUGINS = "stock before ours"
failures = []


def check(what, ok, detail=""):
    print(f"{'PASS' if ok else 'FAIL'}: {what}" + ("" if ok else f" ({detail})"))
    if not ok:
        failures.append(what)


def run(raw_lines, *extra, plugins=PLUGINS):
    """Runs report.py on these raw lines: (exit status, stdout, {metric: gate cell}, md text)."""
    with tempfile.TemporaryDirectory() as d:
        raw = os.path.join(d, "raw.txt")
        with open(raw, "w") as f:
            f.write("\n".join(raw_lines) + "\n")
        # (with matplotlib installed this draws the plot too; the checks are on the table,
        # the summary and the exit status)
        p = subprocess.run([sys.executable, REPORT, raw, os.path.join(d, "out"), "--plugins", plugins, *extra],
                           capture_output=True, text=True)
        md = open(os.path.join(d, "out.md")).read() if os.path.exists(os.path.join(d, "out.md")) else ""
    cells, col = {}, None
    for line in md.splitlines():
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if c and c[0] == "metric" and "gate" in c:
            col = c.index("gate")
        elif col is not None and line.startswith("|") and len(c) > col and not set(c[0]) <= set("-"):
            cells[c[0]] = c[col]
        elif not line.startswith("|"):
            col = None
    return p.returncode, p.stdout + p.stderr, cells, md


def without(lines, *names):
    """The lines but those of these metrics."""
    return [line for line in lines if not (len(line.split()) > 3 and line.split()[3] in names)]


def relabel(lines, old, new, commit):
    """The lines with plugin `old`'s rows and its "# plugin" line given to `new` (commit
    `commit`)."""
    out = []
    for line in lines:
        if line.startswith(old + " "):
            out.append(new + line[len(old):])
        elif line.startswith(f"# plugin {old} "):
            out.append(f"# plugin {new} commit {commit}")
        else:
            out.append(line)
    return out


CPU_GATE = os.path.join(ROOT, "bench", "cpu-gate.py")


def cpu_gate(release, tree, allow=None, *extra):
    """Runs bench/cpu-gate.py on made-up counts ({shape: (instructions, {call: n}[,
    the stand-in driver's instructions, default 0])}) and allow lines: (exit status,
    output)."""
    def write(d, name, counts):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            for shape, (instr, calls, *driver) in counts.items():
                drv = driver[0] if driver else 0
                f.write(f"{shape} instructions {instr}\n{shape} driver {drv}\n"
                        f"{shape} ours {instr // 3}\n")
                for call, n in calls.items():
                    f.write(f"{shape} calls {call} {n:.2f}\n")
        return path
    with tempfile.TemporaryDirectory() as d:
        args = [write(d, "release.txt", release), write(d, "tree.txt", tree)]
        if allow is not None:
            with open(os.path.join(d, "allow.txt"), "w") as f:
                f.write("\n".join(allow) + "\n")
            args += ["--allow", os.path.join(d, "allow.txt")]
        p = subprocess.run([sys.executable, CPU_GATE, *args, *extra], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def cpu_gate_checks():
    calls = {"cuLaunchKernel": 1.0, "cuStreamSynchronize": 1.0, "cuEventRecord": 1.04}
    release = {"map": (10000, calls), "to": (3000, {"cuMemcpyHtoDAsync_v2": 1.0})}
    rc, out = cpu_gate(release, release)
    check("cpu-gate: the release against itself passes", rc == 0 and "PASS" in out, out[-300:])
    rc, out = cpu_gate(release, {**release, "map": (10050, calls)})
    check("cpu-gate: a shape 0.5 % above the release passes", rc == 0, out[-300:])
    rc, out = cpu_gate(release, {**release, "map": (10150, calls)})
    check("cpu-gate: a shape 1.5 % above the release fails, named with its numbers",
          rc == 1 and "map: host instructions per region 10000 -> 10150 (+1.5 %)" in out, out[-300:])
    rc, out = cpu_gate(release, {**release, "map": (10650, calls, 600)})
    check("cpu-gate: the stand-in driver's instructions are not judged (+600 there, +0.5 % "
          "elsewhere passes)", rc == 0 and "tree 10050" in out, out[-300:])
    rc, out = cpu_gate({**release, "map": (10600, calls, 600)}, {**release, "map": (10150, calls)})
    check("cpu-gate: the host instructions are the total less the stand-in's (1.5 % above "
          "once the release's 600 are taken off)", rc == 1 and "10000 -> 10150" in out, out[-300:])
    rc, out = cpu_gate(release, {**release, "map": (10150, calls)}, None, "--threshold", "2")
    check("cpu-gate: --threshold 2 lets 1.5 % pass", rc == 0, out[-300:])
    rc, out = cpu_gate(release, {**release, "map": (9000, calls)})
    check("cpu-gate: fewer instructions pass", rc == 0, out[-300:])
    flag = {"cuLaunchKernel": 1.0, "cuStreamWriteValue32_v2": 1.0, "cuStreamQuery": 1.0,
            "cuEventRecord": 1.0}
    rc, out = cpu_gate(release, {**release, "map": (10000, flag)})
    check("cpu-gate: changed driver calls fail, each named",
          rc == 1 and "cuStreamSynchronize 1.00 -> 0.00" in out and "cuStreamQuery 0.00 -> 1.00" in out
          and "cuEventRecord 1.04 -> 1.00" in out, out[-400:])
    allow = ["# a comment", "map instructions +8% the flag wait",
             "map calls cuStreamWriteValue32_v2=1,cuStreamQuery=1,cuStreamSynchronize=0,cuEventRecord=1.00 "
             "the flag wait"]
    rc, out = cpu_gate(release, {**release, "map": (10700, flag)}, allow)
    check("cpu-gate: allowed rise and calls pass, with the reason", rc == 0 and "the flag wait" in out,
          out[-400:])
    rc, out = cpu_gate(release, {**release, "map": (10900, flag)}, allow)
    check("cpu-gate: a rise past the allowed bound fails", rc == 1 and "map: host instructions" in out, out[-300:])
    rc, out = cpu_gate(release, {**release, "map": (10700, {**flag, "cuStreamQuery": 2.0})}, allow)
    check("cpu-gate: an allowed call at another count fails",
          rc == 1 and "cuStreamQuery 0.00 -> 2.00 (allowed 1.00)" in out, out[-300:])
    rc, out = cpu_gate(release, {**release, "map": (10700, {**flag, "cuMemsetD8_v2": 1.0})}, allow)
    check("cpu-gate: a call the allow line does not name fails", rc == 1 and "cuMemsetD8_v2" in out,
          out[-300:])
    rc, out = cpu_gate(release, {**release, "to": (3100, {"cuMemcpyHtoDAsync_v2": 1.0})}, allow)
    check("cpu-gate: another shape's allowance does not cover a shape", rc == 1 and "to: host instructions" in out,
          out[-300:])
    rc, out = cpu_gate(release, release, allow)
    check("cpu-gate: allowances the tree does not need are reported, not failed",
          rc == 0 and "allowance not used" in out and "map instructions" in out, out[-400:])
    rc, out = cpu_gate(release, {"map": release["map"]})
    check("cpu-gate: a shape the tree lacks fails", rc == 1 and "to: no counts" in out, out[-300:])
    for bad in ("map instructions 10500 no percent", "map instructions +5%", "map speed +5% why",
                "map calls cuStreamQuery why"):
        rc, out = cpu_gate(release, release, [bad])
        check(f"cpu-gate: allow line {bad!r} is refused", rc not in (0, 1) and "allow.txt:1" in out, out[-200:])
    rc, out = cpu_gate(release, release, None, "--no-such-option")
    check("cpu-gate: an unknown option is refused", rc == 2 and "--no-such-option" in out, out[-200:])
    import importlib.util
    spec = importlib.util.spec_from_file_location("cpu_gate", CPU_GATE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    allow = mod.read_allow(os.path.join(ROOT, "bench", "cpu-allow.txt"))
    check("bench/cpu-allow.txt parses, every line with its reason",
          all(v[1] for a in allow.values() for v in a.values()), allow)


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(sys.argv) > 1:
        print(f"bench_gate.py: unknown option or argument '{sys.argv[1]}' (see --help)", file=sys.stderr)
        return 2
    lines = open(FIXTURE).read().splitlines()

    rc, out, cell, md = run(lines, "--gate")
    check("report.py runs on the fixture and writes the table", bool(cell) and "worse5_us" in cell, out[-500:])
    check("--gate exits 1 on the fixture (it has regressions)", rc == 1, f"exit status {rc}; {out[-300:]}")
    for name, refs in (("worse5_us", ("before", "stock")), ("rate_worse5", ("before", "stock"))):
        c = cell.get(name, "")
        check(f"{name} (5 % worse) is a regression against {' and '.join(refs)}",
              all(f"**{r} +" in c for r in refs) and c.count("regression") == len(refs), c)
    c = cell.get("worse5_ms_vs_stock", "")
    check("worse5_ms_vs_stock is a regression against stock only (before is as slow)",
          "**stock +" in c and "regression" in c and "before" not in c, c)
    for name in ("worse1_us", "rate_worse1", "passed_count", "growth_mib", "better5_us", "rate_better5"):
        check(f"{name} (1 % worse, equal or 5 % better) is not marked", cell.get(name) == "ok", cell.get(name))
    c = cell.get("noisy_worse5_us", "")
    check("noisy_worse5_us (5 % worse, wide spread) is marked within spread, not a regression",
          "within spread" in c and "regression" not in c and "before +5.0 %" in c, c)
    check("odd_unit_row (unit without a direction) is not judged and is listed",
          cell.get("odd_unit_row") == "—" and "unit without a direction (1): odd_unit_row" in out,
          cell.get("odd_unit_row"))
    summary = next((line for line in out.splitlines() if "regressions beyond" in line), "")
    listed = set(re.findall(r"(\w+) \((?:before|stock) \+", summary))
    check("the summary lists the regressions and only them",
          listed == {"worse5_us", "rate_worse5", "worse5_ms_vs_stock"}, summary)
    check("the summary is in the Markdown too",
          "## Regression gate" in md and "FAIL" in md.split("## Regression gate")[-1])
    check("the plugins' commits are printed",
          "ours = commit 2222222222222222222222222222222222222222" in out
          and "before = commit 1111111111111111111111111111111111111111" in out, out[:300])
    check("the table names the plugins' builds", "before = commit 1111111111111111111111111111111111111111" in md)

    rc, out, cell, _ = run(lines)
    check("without --gate the exit status is 0 whatever the verdict", rc == 0, f"exit status {rc}")

    clean = without(lines, "worse5_us", "rate_worse5", "worse5_ms_vs_stock")
    rc, out, cell, _ = run(clean, "--gate")
    check("--gate exits 0 without the regressions (the noisy row alone does not fail it)",
          rc == 0 and "PASS" in out and "within spread" in cell.get("noisy_worse5_us", ""),
          f"exit status {rc}; {out[-300:]}")

    rc, out, cell, _ = run(lines, "--gate", "--threshold", "6")
    check("--threshold 6: the 5 % rows are not marked and the gate passes",
          rc == 0 and cell.get("worse5_us") == "ok" and cell.get("rate_worse5") == "ok",
          f"exit status {rc}; {cell.get('worse5_us')}")
    rc, out, cell, _ = run(clean, "--gate", "--threshold", "0.5")
    check("--threshold 0.5: the 1 % rows are regressions and the gate fails",
          rc == 1 and "regression" in cell.get("worse1_us", "") and "regression" in cell.get("rate_worse1", ""),
          f"exit status {rc}; {cell.get('worse1_us')}")

    rc, out, _, _ = run(clean + ["ours 1 ERROR region_bench 'map 8' exit 1: wrong result"], "--gate")
    check("an ERROR line of ours fails the gate", rc == 1 and "ERROR lines of ours (1)" in out, f"exit status {rc}")
    rc, out, _, _ = run([line for line in clean if not (line.startswith("ours ") and " better5_us " in line)],
                        "--gate")
    check("a row ours lacks (before and stock have it) fails the gate",
          rc == 1 and "better5_us (in before)" in out, f"exit status {rc}; {out[-300:]}")

    rc, out, cell, _ = run(lines, "--gate", plugins="stock ours")
    check("with PLUGINS=\"stock ours\" the rows are judged against stock alone",
          rc == 1 and "before" not in cell.get("worse5_us", "x") and "**stock +" in cell.get("worse5_us", ""),
          cell.get("worse5_us"))
    rc, out, _, _ = run([line for line in lines if not line.startswith("ours ")], "--gate")
    check("a run without ours' rows (nothing to judge) fails the gate", rc == 1 and "nothing judged" in out,
          f"exit status {rc}; {out[-200:]}")
    # The release baseline (bench/results/release.txt) as a column of its own.
    rel = "3" * 40
    as_release = relabel(lines, "before", "release", rel)
    rc, out, cell, md = run(as_release, "--gate", plugins="stock release ours")
    c = cell.get("worse5_us", "")
    check("PLUGINS=\"stock release ours\": a row 5 % worse than release and stock is a regression "
          "against both", rc == 1 and "**release +" in c and "**stock +" in c and c.count("regression") == 2, c)
    check("... a row only stock beats is marked against stock alone",
          "release" not in cell.get("worse5_ms_vs_stock", "x"), cell.get("worse5_ms_vs_stock"))
    check("... the 1 % rows are not marked", cell.get("worse1_us") == "ok" and cell.get("rate_worse1") == "ok",
          f"{cell.get('worse1_us')} {cell.get('rate_worse1')}")
    check("... the table has ours/release and names the release's commit",
          "| ours/release |" in md and f"release = commit {rel}" in md and f"release = commit {rel}" in out,
          md[:400])
    # All four: release faster than before on one row.
    def faster(line):
        f = line.split()
        if f[3] == "worse5_ms_vs_stock":
            f[4] = f"{float(f[4]) * 0.95:.4g}"
        return " ".join(f)
    both = lines + [faster(line) for line in relabel(lines, "before", "release", rel)
                    if line.startswith("release ")] + [f"# plugin release commit {rel}"]
    rc, out, cell, md = run(both, "--gate", plugins="stock before release ours")
    c = cell.get("worse5_ms_vs_stock", "")
    check("PLUGINS=\"stock before release ours\": a row the release (and stock) beat, before not, is "
          "marked against release and stock only", rc == 1 and "**release +" in c and "**stock +" in c
          and "before" not in c, c)
    c = cell.get("worse5_us", "")
    check("... a row worse than all three is marked against each",
          all(f"**{r} +" in c for r in ("before", "release", "stock")), c)
    check("... the table has ours/before and ours/release, the summary judges against release",
          "| ours/before | ours/release |" in md and "against release" in out, out[-400:])
    rc, out, _, _ = run(relabel(lines, "before", "release", rel), "--gate",
                        plugins="stock before release ours")
    check("... a run without before's rows judges against release and stock", rc == 1
          and "against release" in out and "0 against before" in out, out[-300:])

    rc, out, _, _ = run(lines, "--no-such-option")
    check("report.py refuses an unknown option", rc != 0 and "--no-such-option" in out, f"exit status {rc}")

    # Every unit the landed results use has a direction (a new unit needs one in
    # report.py's HIGHER_BETTER before its rows can be judged).
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    sys.dont_write_bytecode = True   # no bench/__pycache__ left in the checkout
    import report
    res = os.path.join(ROOT, "bench", "results")
    units = set()
    for f in sorted(os.listdir(res)):
        if f.endswith("-raw.txt"):
            for line in open(os.path.join(res, f)):
                w = line.split()
                if len(w) >= 6 and w[2] == "metric":
                    units.add(w[5])
    check(f"bench/results/*-raw.txt has units ({len(units)})", len(units) >= 5, sorted(units))
    bad = sorted(u for u in units if report.higher_better(u) is None)
    check("every unit of bench/results/*-raw.txt has a direction", not bad, bad)
    for unit, hb in (("us", False), ("ms", False), ("s", False), ("MiB", False), ("GB/s", True),
                     ("GFLOP/s", True), ("1/s", True), ("x", True), ("regions_per_s", True)):
        check(f"unit {unit}: {'higher' if hb else 'lower'} is better", report.higher_better(unit) is hb,
              report.higher_better(unit))
    for plugins, subj in ((["stock", "ours"], "ours"), (["stock", "release", "before", "ours"], "ours"),
                          (["stock", "release", "mine"], "mine"), (["stock", "before", "release"], "release"),
                          (["stock"], None)):
        check(f"the gate judges {subj} of {plugins}", report.subject_of(plugins) == subj,
              report.subject_of(plugins))
    worse, flagged, beyond = report.judge("us", [0.5], [0.0])
    check("a time above a zero reference is infinitely worse", worse == float("inf") and flagged, worse)
    worse, flagged, _ = report.judge("GB/s", [0.0], [0.0])
    check("two zeros are equal", worse == 0 and not flagged, worse)

    cpu_gate_checks()

    print(f"{'FAIL' if failures else 'PASS'}: bench gate, {len(failures)} check(s) failed"
          + (": " + "; ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
