#!/usr/bin/env python3
"""cg_split.py - per-region split of a callgrind profile of bench/region_cpu.c.

usage: cg_split.py CALLGRIND_OUT N [SHAPE COUNTS_FILE]

Prints, per region (the collected loop's instructions divided by N): the total; the
inclusive cost of the plugin's entry points as libgomp called them (every function of
the plugin's library with a caller in libgomp: the GOMP_OFFLOAD_* exports, and what an
indirect export resolves to, e.g. GOMP_OFFLOAD_run, which callgrind names by the Rust
function it points at); the part of that spent in the (stand-in) driver; their
difference ("ours": the plugin's own work, with the libc and ld.so calls it makes,
waits included); and the driver calls per region (call counts include the program's
few warm-up regions, which are not collected: compare runs of the same N).
With SHAPE and COUNTS_FILE it also appends the numbers to COUNTS_FILE, one per line:
"SHAPE instructions X", "SHAPE entry X", "SHAPE driver X", "SHAPE ours X" (per region,
rounded to an instruction) and "SHAPE calls NAME X" (per region, two decimals), as
bench/cpu-gate.py reads them. Needs callgrind_annotate (valgrind)."""
import collections
import os
import re
import subprocess
import sys

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0)
if len(sys.argv) > 1 and sys.argv[1].startswith("-"):
    sys.exit(f"cg_split.py: unknown option '{sys.argv[1]}' (see --help)")
if len(sys.argv) not in (3, 5):
    sys.exit("cg_split.py: needs CALLGRIND_OUT N [SHAPE COUNTS_FILE] (see --help)")
path, n = sys.argv[1], int(sys.argv[2])
with open(path) as f:
    total = int(re.search(r"^summary: (\d+)", f.read(), re.M).group(1))
tree = subprocess.run(
    ["callgrind_annotate", "--auto=no", "--inclusive=yes", "--tree=caller", "--threshold=100",
     os.path.abspath(path)],
    capture_output=True, text=True, check=True, cwd="/").stdout
num = lambda line: int(line.split()[0].replace(",", ""))
entry = driver = 0
calls = collections.Counter()
for block in tree.split("\n\n"):
    lines = block.splitlines()
    star = [l for l in lines if re.match(r"\s*[\d,]+ \([ \d.]+%\)\s+\*", l)]
    if not star:
        continue
    callers = [l for l in lines if " < " in l]
    if "libcuda.so.1]" in star[0]:
        # A driver function: its calls from outside the driver (the plugin's).
        name = re.search(r":([\w.]+) \[", star[0])
        for l in callers:
            if "libcuda.so.1]" not in l:
                driver += num(l)
                calls[name.group(1) if name else "?"] += int(
                    re.search(r"\(([\d,]+)x\)", l).group(1).replace(",", ""))
    elif "/libgomp-plugin-" in star[0]:
        # A function of the plugin: its calls from libgomp are entry points.
        entry += sum(num(l) for l in callers if "libgomp.so" in l)
print(f"per region: total {total / n:.0f} instructions; plugin entry points {entry / n:.0f}, "
      f"of which driver {driver / n:.0f}, ours {(entry - driver) / n:.0f}; "
      f"libgomp and the program {(total - entry) / n:.0f}")
ranked = sorted(calls.items(), key=lambda kv: (-kv[1], kv[0]))
print("driver calls per region: " + ", ".join(f"{k} {v / n:.2f}" for k, v in ranked))
if len(sys.argv) == 5:
    shape = sys.argv[3]
    with open(sys.argv[4], "a") as f:
        for what, v in (("instructions", total), ("entry", entry), ("driver", driver),
                        ("ours", entry - driver)):
            f.write(f"{shape} {what} {v / n:.0f}\n")
        for k, v in ranked:
            f.write(f"{shape} calls {k} {v / n:.2f}\n")
