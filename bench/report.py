#!/usr/bin/env python3
"""report.py - turn bench/device-run.sh's bench-raw.txt into a Markdown table and a PNG,
and judge it as a regression gate.

usage: bench/report.py RAW OUT_BASENAME [--device NAME] [--note TEXT] [--plugins "P1 P2 ..."]
                       [--threshold PCT] [--gate]
Writes OUT_BASENAME.md (metric, floor, each plugin's median with its repetitions' spread,
ratios, better side, the gate's verdict) and OUT_BASENAME.png (ratios, see below).
Medians over the repetitions; spread = their interquartile range (quartiles of
statistics.quantiles' inclusive method: with 2 runs the middle half between them, with
one the value; one disturbed repetition of 4 or more moves it little); ERROR lines are
listed under the table. Lines of the raw-driver floor (bench/cuda_floor.c, plugin field "floor")
go into a table of their own: the cost of the bare driver calls an offload region is made
of, the floor under both plugins' numbers. "# plugin NAME ..." lines of RAW (device-run.sh
writes one per plugin: the commit it was built from) are printed and put in the table.
OpenACC async-queue copies (acc_bench async_bw: acc_async_NAME) are set beside the
OpenMP path's copies of the same size (offload_bench bw: NAME) in a table of their own:
each plugin's OpenACC GB/s over its OpenMP GB/s, both from the same run.
--plugins (device-run.sh passes its PLUGINS; default "stock ours") names the columns: each
plugin gets a column of medians and, but stock, a column of its ratio to stock (and ours
one of its ratio to before and one to release, where those columns are there:
`release` is the release baseline of bench/results/release.txt, built by
bench/build-before.sh --release); other labels of RAW (the kernels step's knob
configurations, see kernel_report.py) are left out. Where a floor applies to a time in us, a
second table gives each plugin's time above the floor: what libgomp's mapping and the
plugin add to the bare driver calls of the same operation.
The gate: every row where ours (without an `ours` column: the last plugin that is not
stock, before or release) is more than PCT % (--threshold, default 3) worse than
`before`, than `release` or than stock is marked, against each of them that is there. Worse: by the unit, a higher time (us, ms, s), memory (MiB) or a lower rate
(GB/s, GFLOP/s, 1/s, x, count, bool); the amount is ours/ref - 1 for times and
ref/ours - 1 for rates. A marked row is a regression when the spreads do not overlap
(ours' better quartile worse than the reference's worse quartile; with one run each, a
single number), else "within spread" (noise can explain it: rerun with more
repetitions). A row whose unit has no known direction is not judged and is listed.
A summary at the end of the Markdown and on stdout lists the marked rows and ours'
ERROR lines. --gate: exit status 1 when a regression (or an ERROR line of ours, or a
row ours lacks that a reference has) is found or no row could be judged, 0 otherwise
(rows within spread do not fail it); without --gate the status is 0 whatever the verdict.
The plot: per row the ratios ours/stock, ours/before and ours/release (for rates
stock/ours, before/ours and release/ours), log scale centred on 1, so that left of 1 is always "ours better"; the
whiskers are ours' spread over the reference's median; marked rows are red. Without
matplotlib the table is written and the plot is not."""
import math
import statistics
import sys
from collections import defaultdict

# Whether a larger value is better, by unit (every unit of bench/results/*-raw.txt;
# tests/bench_gate.py checks that); other units by higher_better's rules.
HIGHER_BETTER = {"GB/s": True, "GFLOP/s": True, "1/s": True, "x": True, "bool": True,
                 "count": True, "us": False, "ms": False, "s": False, "MiB": False}
THRESHOLD = 3.0   # percent: the gate's default
PLOT_LIM = 100.0  # the plot's x axis spans at most 1/PLOT_LIM .. PLOT_LIM


def higher_better(unit):
    """True when a larger value is better (a rate), False when a smaller one is (a time, a
    size), None when the unit does not say."""
    if unit in HIGHER_BETTER:
        return HIGHER_BETTER[unit]
    u = unit.lower()
    if u.endswith("/s") or u.endswith("per_s"):
        return True
    if u in ("ns", "us", "ms", "s", "min", "b", "kib", "mib", "gib", "kb", "mb", "gb", "cycles", "instr"):
        return False
    return None


# The raw-driver floor under a plugin metric (bench/cuda_floor.c), where one applies; a
# tuple names several ways of making the same driver calls (legacy stream, non-blocking
# stream, ...): the floor is the cheapest of them in this run.
FLOOR_OF = {
    "empty_target": "floor_sync_launch",
    "acc_sync_launch": "floor_sync_launch",
    "acc_async_enqueue": "floor_acc_region_blk",
    "acc_async_per_launch": "floor_acc_region_blk",
    "nowait_per_region": "floor_acc_region_nb",
    "revoff_round_trip": "floor_revoff_protocol",
    "revoff_round_trip_1e5": "floor_revoff_protocol",
    # bench/region_bench.c: a region's upload, GCC's kernel as the plugins launch it, the
    # scalar's download
    **{f"region_to_{b}B": tuple(f"floor_gcc_region_{b}B_{w}" for w in ("legacy", "nb", "nbpin"))
       for b in (8, 4096, 65536, 1048576)},
    "region_tofrom_scalar": tuple(f"floor_gcc_region_8B_{w}" for w in ("legacy", "nb", "nbpin")),
    "copy_h2d_8B": "floor_h2d8_sync",
    "copy_d2h_8B": ("floor_d2h8_sync", "floor_d2h8_pinned_sync"),
    "update_to_4096B": ("floor_h2d4k_sync", "floor_h2d4k_async_sync"),
    "update_from_4096B": "floor_d2h4k_sync",
    "update_cycle_4096B": tuple(f"floor_gcc_cycle_4096B_{w}" for w in ("legacy", "nb", "nbpin")),
    # bench/acc_bench.c copy modes: the same copies around a trivial kernel
    "acc_copy_8B_sync": tuple(f"floor_seq_8B_{w}" for w in ("legacy", "nb", "nbpin")),
    "acc_copy_4096B_sync": tuple(f"floor_seq_4096B_{w}" for w in ("legacy", "nb", "nbpin")),
}


def parse(path):
    """(values {metric: {plugin: [value per run]}}, units {metric: unit}, ERROR lines,
    builds {plugin: what the "# plugin NAME ..." line says})."""
    vals, units, errors, builds = defaultdict(lambda: defaultdict(list)), {}, [], {}
    for line in open(path):
        f = line.split()
        if len(f) >= 3 and f[:2] == ["#", "plugin"]:
            builds[f[2]] = " ".join(f[3:])
        elif len(f) >= 6 and f[2] == "metric":
            plugin, name, value, unit = f[0], f[3], float(f[4]), f[5]
            vals[name][plugin].append(value)
            units[name] = unit
        elif len(f) >= 3 and f[2] == "ERROR":
            errors.append(line.strip())
    return vals, units, errors, builds


def table(vals, units, plugins):
    """(name, unit, {plugin: median or None}, {plugin: runs}, {plugin: (first quartile,
    third quartile) or None}) per metric."""
    rows = []
    for name in vals:
        v = {p: vals[name].get(p) or [] for p in plugins}
        med = {p: statistics.median(v[p]) if v[p] else None for p in plugins}
        runs = {p: len(v[p]) for p in plugins}
        spread = {p: quartiles(v[p]) if v[p] else None for p in plugins}
        rows.append((name, units[name], med, runs, spread))
    return rows


def quartiles(v):
    """(first quartile, third quartile) of a non-empty list of values: the spread."""
    if len(v) == 1:
        return v[0], v[0]
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[2]


def slowdown(hb, ours, ref):
    """How much worse ours is than ref as a factor (> 1: worse, < 1: better): ours/ref for
    a time (hb False), ref/ours for a rate (hb True); inf where ours is worse than a
    perfect reference (ref 0 for a time, ours 0 for a rate), 1 where both are 0."""
    num, den = (ref, ours) if hb else (ours, ref)
    if den == 0:
        return 1.0 if num == 0 else float("inf")
    return num / den


def judge(unit, ours, ref, threshold=THRESHOLD):
    """The gate's verdict on one row and one reference, from each side's repetitions
    (lists of values): None when it cannot be judged (a side has no value, or the unit no
    direction), else (worse, flagged, beyond): worse = slowdown - 1 of the medians,
    flagged = worse > threshold %, beyond = the spreads (quartiles) do not overlap."""
    hb = higher_better(unit)
    if hb is None or not ours or not ref:
        return None
    worse = slowdown(hb, statistics.median(ours), statistics.median(ref)) - 1
    (olo, ohi), (rlo, rhi) = quartiles(ours), quartiles(ref)
    beyond = ohi < rlo if hb else olo > rhi
    return worse, worse > threshold / 100, beyond


# The references a plugin is judged against, where their columns are there: an earlier
# build of ours (bench/build-before.sh), the release baseline (bench/results/release.txt)
# and GCC's stock plugin.
REFERENCES = ("before", "release", "stock")


def subject_of(plugins):
    """The plugin the gate judges: ours, else the last one that is not a reference, else
    the last one that is not stock (None: only stock)."""
    others = [p for p in plugins if p not in REFERENCES]
    rest = [p for p in plugins if p != "stock"]
    return "ours" if "ours" in plugins else (others or rest or [None])[-1]


def gate(vals, units, errors, plugins, threshold=THRESHOLD):
    """The gate over a whole run: {"rows": {metric: [(ref, worse, flagged, beyond)]},
    "regressions": [(metric, ref, worse)], "noise": [...], "missing": [(metric, ref)],
    "undirected": [metric], "errors": [ERROR lines of the subject], "subject": name,
    "refs": [references], "judged": {ref: rows compared}, "fail": bool}."""
    subj = subject_of(plugins)
    refs = [p for p in REFERENCES if p in plugins and p != subj]
    g = {"rows": {}, "regressions": [], "noise": [], "missing": [], "undirected": [], "judged": {},
         "subject": subj, "refs": refs,
         "errors": [e for e in errors if subj and e.split()[0] == subj]}
    for name in vals:
        ours = vals[name].get(subj) or []
        if subj is None or not refs:
            break
        g["rows"][name] = []
        if higher_better(units[name]) is None:
            g["undirected"].append(name)
            continue
        for ref in refs:
            rv = vals[name].get(ref) or []
            if rv and not ours:
                g["missing"].append((name, ref))
            j = judge(units[name], ours, rv, threshold)
            if j is None:
                continue
            worse, flagged, beyond = j
            g["rows"][name].append((ref, worse, flagged, beyond))
            if flagged:
                g["regressions" if beyond else "noise"].append((name, ref, worse))
    g["judged"] = {ref: sum(1 for v in g["rows"].values() for r, *_ in v if r == ref) for ref in refs}
    g["fail"] = bool(g["regressions"] or g["missing"] or g["errors"] or not sum(g["judged"].values()))
    return g


def gate_cell(verdicts):
    """The table's gate column of one row."""
    if not verdicts:
        return "—"
    marks = [f"{'**' if beyond else ''}{ref} +{pct(worse)}{' regression**' if beyond else ' (within spread)'}"
             for ref, worse, flagged, beyond in verdicts if flagged]
    return "; ".join(marks) or "ok"


def pct(worse):
    return "inf" if worse == float("inf") else f"{100 * worse:.1f} %"


def gate_summary(g, threshold):
    """Lines of the gate's summary (Markdown, also printed)."""
    subj, refs = g["subject"], g["refs"]
    if not subj or not refs or not sum(g["judged"].values()):
        return [f"Gate: FAIL, nothing judged (it needs rows of ours and of before, release or stock; "
                f"judged plugin {subj or 'none'}, references {', '.join(refs) or 'none'})."]

    def items(lst):
        return ", ".join(f"{n} ({r} +{pct(w)})" for n, r, w in lst) or "none"
    out = [f"Gate ({subj} more than {threshold:g} % worse than {' or '.join(refs)}; worse = a higher "
           f"time or size, a lower rate): {'FAIL' if g['fail'] else 'PASS'} (rows judged: "
           + ", ".join(f"{n} against {r}" for r, n in g["judged"].items()) + ").",
           f"- regressions beyond the repetitions' spread ({len(g['regressions'])}): {items(g['regressions'])}",
           f"- worse within the spread, noise can explain it ({len(g['noise'])}): {items(g['noise'])}"]
    if g["missing"]:
        out.append(f"- rows {subj} lacks ({len(g['missing'])}): "
                   + ", ".join(f"{n} (in {r})" for n, r in g["missing"]))
    if g["errors"]:
        out.append(f"- ERROR lines of {subj} ({len(g['errors'])}): " + "; ".join(e[:120] for e in g["errors"]))
    if g["undirected"]:
        out.append(f"- not judged, unit without a direction ({len(g['undirected'])}): " + ", ".join(g["undirected"]))
    return out


def floor_of(name, floor):
    """(floor metric, its median) of a plugin metric: the cheapest of its floors."""
    names = FLOOR_OF.get(name, ())
    names = (names,) if isinstance(names, str) else names
    got = [(statistics.median(floor[n]), n) for n in names if floor.get(n)]
    return (min(got)[1], min(got)[0]) if got else (None, None)


def acc_vs_omp(rows, plugins):
    """Markdown lines setting each OpenACC async copy row (acc_async_NAME) beside the
    OpenMP row NAME of the same run: per plugin both medians and their ratio."""
    med = {r[0]: r[2] for r in rows}
    pairs = [(n, n[len("acc_async_"):]) for n in med
             if n.startswith("acc_async_") and n[len("acc_async_"):] in med]
    if not pairs:
        return []
    out = ["", "OpenACC async-queue copies (acc_bench async_bw, each copy then acc_wait) "
           "against the OpenMP path's copies of the same buffers (offload_bench bw, "
           "omp_target_memcpy), GB/s medians; acc/omp = the OpenACC row over the OpenMP "
           "row for the same plugin.", ""]
    head = ["OpenACC row", "OpenMP row"]
    for p in plugins:
        head += [f"{p} acc", f"{p} omp", f"{p} acc/omp"]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for acc, omp in pairs:
        cells = [acc, omp]
        for p in plugins:
            a, o = med[acc][p], med[omp][p]
            cells += [fmt(a), fmt(o), fmt(a / o) if a is not None and o else "—"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def fmt(v):
    return "—" if v is None else (f"{v:.3g}" if abs(v) < 999.5 else f"{v:,.0f}")


def fmt_spread(med, spread):
    """A plugin's cell: its median and, with more than one value, its quartiles."""
    if med is None:
        return "—"
    lo, hi = spread
    return fmt(med) if lo == hi else f"{fmt(med)} ({fmt(lo)}–{fmt(hi)})"


def args(argv):
    """(raw, base, {option: value}) from the command line; exits on a wrong one."""
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0)
    pos, opt, i = [], {"--device": "GPU", "--note": "", "--plugins": "stock ours",
                       "--threshold": str(THRESHOLD), "--gate": False}, 1
    while i < len(argv):
        a = argv[i]
        if a == "--gate":
            opt[a] = True
        elif a in opt:
            if i + 1 >= len(argv):
                sys.exit(f"report.py: option '{a}' needs a value (see --help)")
            opt[a], i = argv[i + 1], i + 1
        elif a.startswith("-"):
            sys.exit(f"report.py: unknown option '{a}' (see --help)")
        else:
            pos.append(a)
        i += 1
    if len(pos) != 2:
        sys.exit("usage: report.py RAW OUT_BASENAME [--device NAME] [--note TEXT] "
                 "[--plugins \"P1 P2 ...\"] [--threshold PCT] [--gate] (see --help)")
    try:
        opt["--threshold"] = float(opt["--threshold"])
    except ValueError:
        sys.exit(f"report.py: --threshold takes a number of percent, not '{opt['--threshold']}'")
    return pos[0], pos[1], opt


def main():
    raw, base, opt = args(sys.argv)
    device, note, threshold = opt["--device"], opt["--note"], opt["--threshold"]
    plugins = sorted(dict.fromkeys(opt["--plugins"].split()), key=lambda n: n != "stock")
    vals, units, errors, builds = parse(raw)
    floor = {n: v["floor"] for n, v in vals.items() if "floor" in v}
    for n in floor:
        del vals[n]
    others = [p for p in plugins if p != "stock"]
    rows = table(vals, units, plugins)
    g = gate(vals, units, errors, plugins, threshold)
    subj = g["subject"]
    # Ratio columns of the subject to the earlier builds there (before, release).
    vs = [r for r in ("before", "release") if r in plugins and r != subj] if subj else []
    what = "gomp-plugin-rs" if others == ["ours"] else "gomp-plugin-rs (" + ", ".join(others) + ")"
    out = [f"# Benchmarks: stock GCC 16 plugin vs {what} on {device}", ""]
    if note:
        out += [note, ""]
    known = [f"{p} = {builds[p]}" for p in plugins if p in builds]
    if known:
        out += ["Plugins: " + "; ".join(known) + ".", ""]
    head = (["metric", "unit", "floor"] + plugins + [f"{p}/stock" for p in others]
            + [f"{subj}/{r}" for r in vs] + ["better", "gate", "runs"])
    out += [f"Medians over repetitions, their interquartile range in brackets (runs alternate "
            f"{', '.join(plugins)} on the same binary). floor: the bare driver calls of the same "
            "operation (bench/cuda_floor.c, same run), where one applies. gate: where "
            f"{subj} is more than {threshold:g} % worse than {' or '.join(g['refs']) or '—'} (a higher "
            "time, a lower rate), by how much; **regression** when the spreads do not overlap, "
            "within spread when they do.", "",
            "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    above = []
    for name, unit, med, runs, spread in rows:
        better, hb = "—", higher_better(unit)
        have = [p for p in plugins if med[p] is not None]
        if hb is not None and len(have) == len(plugins) > 1 and len({med[p] for p in have}) > 1:
            better = (max if hb else min)(have, key=lambda p: med[p])
        ms = med.get("stock")
        ratios = [fmt(med[p] / ms) if ms and med[p] is not None else "—" for p in others]
        for r in vs:
            mb, mo = med[r], med[subj]
            ratios.append(fmt(mo / mb) if mb and mo is not None else "—")
        fname, fl = floor_of(name, floor)
        if fl is not None and unit == "us":
            above.append((name, fname, fl, med))
        cells = [name, unit, fmt(fl)] + [fmt_spread(med[p], spread[p]) for p in plugins] + ratios
        cells += [better, gate_cell(g["rows"].get(name)), "+".join(str(runs[p]) for p in plugins)]
        out.append("| " + " | ".join(cells) + " |")
    if above:
        out += ["", "Time above the driver floor (the table's floor: the cheapest way of making the "
                "same driver calls, named below; for regions GCC's own kernel, launched as the "
                "plugins launch it). What is above it is libgomp's mapping work plus the "
                "plugin's: the same libgomp for every column, so a difference between columns "
                "is the plugins'. above = median − floor (us), share = above / median.", ""]
        head = ["metric", "floor metric", "floor"]
        for p in plugins:
            head += [f"{p} above", f"{p} share"]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name, fname, fl, med in above:
            cells = [name, fname, fmt(fl)]
            for p in plugins:
                v = med[p]
                cells += ["—", "—"] if v is None else [fmt(v - fl), f"{100 * (v - fl) / v:.0f} %" if v else "—"]
            out.append("| " + " | ".join(cells) + " |")
    out += acc_vs_omp(rows, plugins)
    if floor:
        out += ["", "Raw CUDA driver floor (bench/cuda_floor.c: the driver calls alone, no plugin):", "",
                "| metric | unit | median | runs |", "|---|---|---|---|"]
        for n, v in floor.items():
            out.append(f"| {n} | {units[n]} | {fmt(statistics.median(v))} | {len(v)} |")
    if errors:
        out += ["", "Errors (a failed run gives no number):", ""] + [f"- `{e}`" for e in errors]
    summary = gate_summary(g, threshold)
    out += ["", "## Regression gate", ""] + summary
    open(base + ".md", "w").write("\n".join(out) + "\n")
    for p in plugins:
        if p in builds:
            print(f"report: {p} = {builds[p]}")
    print("\n".join("report: " + line for line in summary))
    if plot(rows, g, plugins, device, base, threshold):
        print(f"report: wrote {base}.md and {base}.png")
    else:
        print(f"report: wrote {base}.md")
    if opt["--gate"] and g["fail"]:
        sys.exit(1)


def plot(rows, g, plugins, device, base, threshold):
    """The ratio plot (see the module's text); False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib not installed; no plot")
        return False
    subj, refs = g["subject"], g["refs"]
    series = []   # (row label, flagged, [(ref, ratio, lo, hi)])
    for name, unit, med, runs, spread in rows:
        hb = higher_better(unit)
        if hb is None or not subj or med.get(subj) is None:
            continue
        bars = []
        for ref in refs:
            mr = med.get(ref)
            if mr is None:
                continue
            lo, hi = spread[subj]
            r = [slowdown(hb, v, mr) for v in (med[subj], lo, hi)]
            bars.append((ref, r[0], min(r[1:]), max(r[1:])))
        if bars:
            flagged = any(f for _, _, f, _ in g["rows"].get(name) or [])
            series.append((f"{name} [{unit}]", flagged, bars))
    fig, ax = plt.subplots(figsize=(10, 0.45 * max(len(series), 1) + 1.8))
    finite = [abs(math.log10(v)) for _, _, bars in series for _, *rs in bars for v in rs
              if 0 < v < float("inf")]
    # Centred on 1; at most 100x either way (a bar cut there has its value written).
    lim = min(10 ** (1.1 * max(finite + [math.log10(1 + 2 * threshold / 100)])), PLOT_LIM)
    h = 0.8 / max(len(refs), 1)
    for k, ref in enumerate(refs):
        off = (k - (len(refs) - 1) / 2) * h
        ys, rs, err = [], [], [[], []]
        for i, (_, _, bars) in enumerate(series):
            for b in bars:
                if b[0] == ref:
                    r, lo, hi = (min(max(v, 1 / lim), lim) for v in b[1:])
                    ys.append(i + off)
                    rs.append(r)
                    err[0].append(r - lo)
                    err[1].append(hi - r)
                    if not 1 / lim < b[1] < lim:
                        ax.text(r, i + off, f" {fmt(b[1])} ", va="center", fontsize=6,
                                ha="left" if r < 1 else "right")
                    worse = b[1] - 1
                    if worse > threshold / 100:
                        ax.annotate(f"+{pct(worse)}", (max(r, 1), i + off), xytext=(12, 0),
                                    textcoords="offset points", va="center", fontsize=6, color="red")
        ax.barh(ys, [r - 1 for r in rs], left=1, height=h, label=f"{subj}/{ref}",
                xerr=err, error_kw={"elinewidth": 0.8, "capsize": 2})
    ax.axvline(1, color="black", linewidth=0.8)
    ax.axvline(1 + threshold / 100, color="red", linewidth=0.8, linestyle="--",
               label=f"{threshold:g} % worse")
    ax.set_xscale("log")
    ax.set_xlim(1 / lim, lim)
    ax.set_yticks(list(range(len(series))))
    ax.set_yticklabels([s[0] for s in series], fontsize=8)
    for t, s in zip(ax.get_yticklabels(), series):
        if s[1]:
            t.set_color("red")
    ax.set_ylim(len(series) - 0.5, -0.5)   # the first row at the top
    ax.legend(fontsize=8)
    ax.set_xlabel(f"{subj} / reference (for rates reference / {subj}): left of 1 {subj} is better, "
                  "right worse; log scale")
    ax.set_title(f"{subj} against {' and '.join(refs)}, {device}\n(medians; whiskers: interquartile range of "
                 f"{subj}; red: more than {threshold:g} % worse)", fontsize=9)
    fig.tight_layout()
    fig.savefig(base + ".png", dpi=110)
    plt.close(fig)
    return True


if __name__ == "__main__":
    main()
