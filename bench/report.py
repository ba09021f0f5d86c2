#!/usr/bin/env python3
"""report.py - turn bench/device-run.sh's bench-raw.txt into a Markdown table and a PNG.

usage: bench/report.py RAW OUT_BASENAME [--device NAME] [--note TEXT]
Writes OUT_BASENAME.md (metric, floor, stock median, ours median, ours/stock, better side) and
OUT_BASENAME.png (one bar pair per metric, log scale). Medians over the repetitions;
ERROR lines are listed under the table. Lines of the raw-driver floor (bench/cuda_floor.c,
plugin field "floor") go into a table of their own: the cost of the bare driver calls
an offload region is made of, the floor under both plugins' numbers."""
import statistics
import sys
from collections import defaultdict

# Whether a larger value is better, by unit.
HIGHER_BETTER = {"GB/s": True, "1/s": True, "x": True, "bool": True, "count": True,
                 "us": False, "ms": False, "s": False, "MiB": False}

# The raw-driver floor under a plugin metric (bench/cuda_floor.c), where one applies.
FLOOR_OF = {
    "empty_target": "floor_sync_launch",
    "acc_sync_launch": "floor_sync_launch",
    "acc_async_enqueue": "floor_acc_region_blk",
    "acc_async_per_launch": "floor_acc_region_blk",
    "nowait_per_region": "floor_acc_region_nb",
    "revoff_round_trip": "floor_revoff_protocol",
    "revoff_round_trip_1e5": "floor_revoff_protocol",
}


def parse(path):
    vals, units, errors = defaultdict(lambda: defaultdict(list)), {}, []
    for line in open(path):
        f = line.split()
        if len(f) >= 6 and f[2] == "metric":
            plugin, name, value, unit = f[0], f[3], float(f[4]), f[5]
            vals[name][plugin].append(value)
            units[name] = unit
        elif len(f) >= 3 and f[2] == "ERROR":
            errors.append(line.strip())
    return vals, units, errors


def table(vals, units):
    rows = []
    for name in vals:
        s, o = vals[name].get("stock"), vals[name].get("ours")
        ms = statistics.median(s) if s else None
        mo = statistics.median(o) if o else None
        ratio = mo / ms if ms and mo is not None else None
        rows.append((name, units[name], ms, mo, ratio, len(s or []), len(o or [])))
    return rows


def fmt(v):
    return "—" if v is None else (f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}")


def main():
    args = sys.argv[1:]
    if any(a in ("-h", "--help") for a in args):
        print(__doc__.strip())
        return 0
    opts = [a for a in args if a.startswith("-")]
    bad = [a for a in opts if a not in ("--device", "--note")]
    positional = [a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] not in ("--device", "--note"))]
    if bad or len(positional) != 2:
        sys.stderr.write("report.py: %s (see bench/report.py --help)\n"
                         % ("unknown option '%s'" % bad[0] if bad else "expects RAW OUT_BASENAME"))
        return 2
    raw, base = positional
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "GPU"
    note = sys.argv[sys.argv.index("--note") + 1] if "--note" in sys.argv else ""
    vals, units, errors = parse(raw)
    floor = {n: v["floor"] for n, v in vals.items() if "floor" in v}
    for n in floor:
        del vals[n]
    rows = table(vals, units)
    out = [f"# Benchmarks: stock GCC 16 plugin vs gomp-plugin-rs on {device}", ""]
    if note:
        out += [note, ""]
    out += ["Medians over repetitions (runs alternate stock, ours on the same binary). "
            "floor: the bare driver calls of the same operation (bench/cuda_floor.c, "
            "same run), where one applies.", "",
            "| metric | unit | floor | stock | ours | ours/stock | better | runs |",
            "|---|---|---|---|---|---|---|---|"]
    for name, unit, ms, mo, ratio, ns, no in rows:
        better = "—"
        if ratio is not None and ms != mo:
            hb = HIGHER_BETTER.get(unit, True)
            better = "ours" if (mo > ms) == hb else "stock"
        fl = floor.get(FLOOR_OF.get(name, ""))
        fl = fmt(statistics.median(fl)) if fl else "—"
        out.append(f"| {name} | {unit} | {fl} | {fmt(ms)} | {fmt(mo)} | {fmt(ratio)} | {better} | {ns}+{no} |")
    if floor:
        out += ["", "Raw CUDA driver floor (bench/cuda_floor.c: the driver calls alone, no plugin):", "",
                "| metric | unit | median | runs |", "|---|---|---|---|"]
        for n, v in floor.items():
            out.append(f"| {n} | {units[n]} | {fmt(statistics.median(v))} | {len(v)} |")
    if errors:
        out += ["", "Errors (a failed run gives no number):", ""] + [f"- `{e}`" for e in errors]
    open(base + ".md", "w").write("\n".join(out) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib not installed; no plot")
        return
    names = [r[0] for r in rows]
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(names) + 1.5))
    y = range(len(names))
    for off, idx, label in ((-0.2, 2, "stock"), (0.2, 3, "ours")):
        ax.barh([i + off for i in y], [r[idx] or 0 for r in rows], height=0.4, label=label)
    ax.set_yticks(list(y))
    ax.set_yticklabels([f"{r[0]} [{r[1]}]" for r in rows], fontsize=8)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.legend()
    ax.set_title(f"stock vs ours, {device} (medians; log scale)")
    fig.tight_layout()
    fig.savefig(base + ".png", dpi=110)
    print(f"report: wrote {base}.md and {base}.png")


if __name__ == "__main__":
    sys.exit(main())
