#!/usr/bin/env python3
"""kernel_report.py - the kernel benchmark's table (bench/device-run.sh, step `kernels`).

usage: bench/kernel_report.py RAW OUT_BASENAME [--device NAME] [--note TEXT] [--knobs FILE]
Reads the kernel_* metrics of bench-raw.txt ("LABEL rep metric NAME VALUE UNIT") and writes
OUT_BASENAME.md: one column of medians per configuration (stock, ours, ours+k1, ... in the
order they ran), then each configuration's median relative to ours (higher is better for
GB/s and GFLOP/s). FILE is device-run.sh's kernel-knobs.txt ("LABEL VAR=VAL ..." lines),
the legend of the knob configurations. ERROR lines are listed under the table."""
import statistics
import sys
from collections import defaultdict


def arg(name):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def fmt(v):
    return "—" if v is None else (f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    opts = sys.argv[3:]
    bad = [a for a in sys.argv[1:3] if a.startswith("-")] + [
        opts[i] for i in range(0, len(opts), 2)
        if opts[i] not in ("--device", "--note", "--knobs") or i + 1 >= len(opts)]
    if bad or len(sys.argv) < 3:
        sys.stderr.write((f"kernel_report.py: unknown option or missing value: '{bad[0]}'"
                          if bad else "usage: kernel_report.py RAW OUT_BASENAME [...]")
                         + " (see --help)\n")
        return 2
    raw, base = sys.argv[1], sys.argv[2]
    device, note, knobs = arg("--device") or "GPU", arg("--note") or "", arg("--knobs")
    vals, units, labels, names, errors = defaultdict(lambda: defaultdict(list)), {}, [], [], []
    for line in open(raw):
        f = line.split()
        if len(f) >= 6 and f[2] == "metric" and f[3].startswith("kernel_"):
            label, name = f[0], f[3]
            vals[name][label].append(float(f[4]))
            units[name] = f[5]
            if label not in labels:
                labels.append(label)
            if name not in names:
                names.append(name)
        elif len(f) >= 3 and f[2] == "ERROR":
            errors.append(line.strip())
    legend = []
    if knobs:
        try:
            legend = [ln.strip() for ln in open(knobs) if ln.strip()]
        except OSError:
            pass
    out = [f"# Kernel benchmark (bench/kernel_bench.c, kernel_bench.f90) on {device}", ""]
    if note:
        out += [note, ""]
    out += ["Medians over repetitions (host time of each synchronous target region, median "
            "of the program's own repetitions; configurations alternate). "
            "x/ours: the configuration's median over ours' (above 1 is faster for GB/s "
            "and GFLOP/s).", ""]
    if legend:
        out += ["Knob configurations:", ""] + [f"- `{ln}`" for ln in legend] + [""]
    others = [lb for lb in labels if lb != "ours"]
    head = ["metric", "unit"] + labels + [f"{lb}/ours" for lb in others if "ours" in labels]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        med = {lb: statistics.median(v) for lb, v in vals[name].items()}
        row = [name, units[name]] + [fmt(med.get(lb)) for lb in labels]
        if "ours" in labels:
            o = med.get("ours")
            row += [fmt(med[lb] / o) if o and lb in med else "—" for lb in others]
        out.append("| " + " | ".join(row) + " |")
    if errors:
        out += ["", "Errors (a failed run gives no number):", ""] + [f"- `{e}`" for e in errors]
    open(base + ".md", "w").write("\n".join(out) + "\n")
    print(f"kernel_report: wrote {base}.md ({len(names)} metrics, {len(labels)} configurations)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
