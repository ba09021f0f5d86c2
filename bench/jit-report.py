#!/usr/bin/env python3
"""jit-report.py - the table of bench/jit-trace.sh's times.txt: medians per plugin and
phase, each with its ratio to stock's median in the same phase, and the repetitions.

usage: bench/jit-report.py TIMES_TXT [--md OUT.md]
"""
import statistics
import sys
from collections import defaultdict


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    args = argv[1:]
    out = None
    if "--md" in args:
        i = args.index("--md")
        if i + 1 >= len(args):
            print("jit-report.py: --md needs a file", file=sys.stderr)
            return 2
        out = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1 or args[0].startswith("-"):
        print(f"jit-report.py: unexpected arguments {args} (see --help)", file=sys.stderr)
        return 2
    vals = defaultdict(list)  # (metric, phase, label) -> values
    errors = []
    for line in open(args[0]):
        f = line.split()
        if len(f) >= 6 and f[3] == "metric":
            vals[(f[4], f[1], f[0])].append(float(f[5]))
        elif len(f) >= 5 and f[3] == "wall_s":
            vals[("wall_s", f[1], f[0])].append(float(f[4]))
        elif len(f) >= 7 and f[3] == "load_image_ms":
            vals[("load_image_ms", f[1], f[0])].append(float(f[4]))
            vals[("module_ms", f[1], f[0])].append(float(f[6]))
        elif len(f) >= 2 and f[1] == "ERROR":
            errors.append(line.rstrip())
    rows = ["| metric | phase | plugin | median | ratio to stock | runs | values |",
            "|---|---|---|---:|---:|---:|---|"]
    for (metric, phase, label), v in sorted(vals.items()):
        med = statistics.median(v)
        base_phase = phase.replace("profile_", "").replace("big_hit", "big_warm").replace("big_miss", "big_warm")
        stock = vals.get((metric, base_phase, "stock"))
        ratio = f"{med / statistics.median(stock):.3f}" if stock and label != "stock" else ""
        rows.append(f"| {metric} | {phase} | {label} | {med:.2f} | {ratio} | {len(v)} | "
                    + " ".join(f"{x:g}" for x in v) + " |")
    text = "\n".join(rows) + "\n"
    if errors:
        text += "\nErrors:\n" + "\n".join(errors) + "\n"
    print(text, end="")
    if out:
        with open(out, "w") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
