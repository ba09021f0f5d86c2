#!/usr/bin/env python3
"""report.py - turn bench/device-run.sh's bench-raw.txt into a Markdown table and a PNG.

usage: bench/report.py RAW OUT_BASENAME [--device NAME] [--note TEXT] [--plugins "P1 P2 ..."]
Writes OUT_BASENAME.md (metric, floor, stock median, ours median, ours/stock, better side) and
OUT_BASENAME.png (one bar pair per metric, log scale). Medians over the repetitions;
ERROR lines are listed under the table. Lines of the raw-driver floor (bench/cuda_floor.c,
plugin field "floor") go into a table of their own: the cost of the bare driver calls
an offload region is made of, the floor under both plugins' numbers.
OpenACC async-queue copies (acc_bench async_bw: acc_async_NAME) are set beside the
OpenMP path's copies of the same size (offload_bench bw: NAME) in a table of their own:
each plugin's OpenACC GB/s over its OpenMP GB/s, both from the same run.
--plugins (device-run.sh passes its PLUGINS; default "stock ours") names the columns: each
plugin gets a column of medians and, but stock, a column of its ratio to stock ("stock
ours" gives the columns above); other labels of RAW (the kernels step's knob
configurations, see kernel_report.py) are left out. Where a floor applies to a time in us, a
second table gives each plugin's time above the floor: what libgomp's mapping and the
plugin add to the bare driver calls of the same operation."""
import statistics
import sys
from collections import defaultdict

# Whether a larger value is better, by unit.
HIGHER_BETTER = {"GB/s": True, "1/s": True, "x": True, "bool": True, "count": True,
                 "us": False, "ms": False, "s": False, "MiB": False}

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


def table(vals, units, plugins):
    """(name, unit, {plugin: median or None}, {plugin: runs}) per metric."""
    rows = []
    for name in vals:
        med = {p: statistics.median(vals[name][p]) if vals[name].get(p) else None for p in plugins}
        runs = {p: len(vals[name].get(p) or []) for p in plugins}
        rows.append((name, units[name], med, runs))
    return rows


def floor_of(name, floor):
    """(floor metric, its median) of a plugin metric: the cheapest of its floors."""
    names = FLOOR_OF.get(name, ())
    names = (names,) if isinstance(names, str) else names
    got = [(statistics.median(floor[n]), n) for n in names if floor.get(n)]
    return (min(got)[1], min(got)[0]) if got else (None, None)


def acc_vs_omp(rows, plugins):
    """Markdown lines setting each OpenACC async copy row (acc_async_NAME) beside the
    OpenMP row NAME of the same run: per plugin both medians and their ratio."""
    med = {name: m for name, _, m, _ in rows}
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
    return "—" if v is None else (f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return
    if len(sys.argv) > 1 and sys.argv[1].startswith("-"):
        sys.exit(f"report.py: unknown option '{sys.argv[1]}' (see --help)")
    if len(sys.argv) < 3:
        sys.exit("usage: report.py RAW OUT_BASENAME [--device NAME] [--note TEXT] "
                 "[--plugins \"P1 P2 ...\"] (see --help)")
    raw, base = sys.argv[1], sys.argv[2]
    opts = sys.argv[3:]
    for i in range(0, len(opts), 2):
        if opts[i] not in ("--device", "--note", "--plugins") or i + 1 >= len(opts):
            sys.exit(f"report.py: unknown option or missing value: '{opts[i]}' (see --help)")
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "GPU"
    note = sys.argv[sys.argv.index("--note") + 1] if "--note" in sys.argv else ""
    plugins = (sys.argv[sys.argv.index("--plugins") + 1] if "--plugins" in sys.argv
               else "stock ours").split()
    plugins = sorted(dict.fromkeys(plugins), key=lambda n: n != "stock")
    vals, units, errors = parse(raw)
    floor = {n: v["floor"] for n, v in vals.items() if "floor" in v}
    for n in floor:
        del vals[n]
    others = [p for p in plugins if p != "stock"]
    rows = table(vals, units, plugins)
    what = "gomp-plugin-rs" if others == ["ours"] else "gomp-plugin-rs (" + ", ".join(others) + ")"
    out = [f"# Benchmarks: stock GCC 16 plugin vs {what} on {device}", ""]
    if note:
        out += [note, ""]
    head = ["metric", "unit", "floor"] + plugins + [f"{p}/stock" for p in others] + ["better", "runs"]
    out += [f"Medians over repetitions (runs alternate {', '.join(plugins)} on the same binary). "
            "floor: the bare driver calls of the same operation (bench/cuda_floor.c, "
            "same run), where one applies.", "",
            "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    above = []
    for name, unit, med, runs in rows:
        better, hb = "—", HIGHER_BETTER.get(unit, True)
        have = [p for p in plugins if med[p] is not None]
        if len(have) == len(plugins) > 1 and len({med[p] for p in have}) > 1:
            better = (max if hb else min)(have, key=lambda p: med[p])
        ms = med.get("stock")
        ratios = [fmt(med[p] / ms) if ms and med[p] is not None else "—" for p in others]
        fname, fl = floor_of(name, floor)
        if fl is not None and unit == "us":
            above.append((name, fname, fl, med))
        cells = [name, unit, fmt(fl)] + [fmt(med[p]) for p in plugins] + ratios
        cells += [better, "+".join(str(runs[p]) for p in plugins)]
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
    h = 0.8 / len(plugins)
    for k, p in enumerate(plugins):
        off = (k - (len(plugins) - 1) / 2) * h
        ax.barh([i + off for i in y], [r[2][p] or 0 for r in rows], height=h, label=p)
    ax.set_yticks(list(y))
    ax.set_yticklabels([f"{r[0]} [{r[1]}]" for r in rows], fontsize=8)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.legend()
    ax.set_title(f"{' vs '.join(plugins)}, {device} (medians; log scale)")
    fig.tight_layout()
    fig.savefig(base + ".png", dpi=110)
    print(f"report: wrote {base}.md and {base}.png")


if __name__ == "__main__":
    main()
