#!/usr/bin/env python3
"""cpu-gate.py - the CPU gate: a plugin's host instructions and driver calls per region
(bench/cpu-count.sh's counts.txt) against the release baseline's, no GPU.

usage: bench/cpu-gate.py RELEASE_COUNTS TREE_COUNTS [--allow FILE] [--threshold PCT]
RELEASE_COUNTS, TREE_COUNTS: counts.txt of bench/cpu-count.sh run for the release
baseline's plugin (bench/results/release.txt, bench/build-before.sh --release) and for
the tree's, with the same N. Per shape (region_cpu.c's map, tofrom, from, to):
- host instructions per region, the stand-in libcuda's own left out (the program's,
  libgomp's and the plugin's: counts.txt's "instructions" less its "driver"): the tree
  fails when it is more than PCT % (--threshold, default 1) above the release's. The
  stand-in's instructions are not judged: they are not a real driver's cost, and its
  list walks cost more or less with where the machine's memory layout puts the plugin's
  blocks (seen: +56 per region for the same tree on another machine); what the plugin
  asks of the driver is judged by the calls;
- driver calls per region (two decimals): the tree fails when any call's count differs
  from the release's (a call only one of them makes counts 0 in the other).
A line of the allow file (--allow, e.g. bench/cpu-allow.txt; reviewed like code) lets a
shape differ, with its reason:
    SHAPE instructions +PCT% REASON...        the tree may be up to PCT % above the
                                              release's (in place of the threshold)
    SHAPE calls NAME=X[,NAME=X...] REASON...  these calls may differ from the release's,
                                              each then being exactly X per region
'#' starts a comment; a line without a reason is refused. A shape the release has and
the tree lacks fails. Prints one line per shape and what failed; exit status 1 when
something failed, 0 otherwise, 2 on bad arguments or files. An allowance the tree does
not need (within the threshold without it, or calls as the release's) is reported as
unused, not failed: take it out. Python 3.11 stdlib only."""
import sys

THRESHOLD = 1.0   # percent


def die(msg):
    """A bad file or argument: the message, exit status 2."""
    print(msg, file=sys.stderr)
    sys.exit(2)


def read_counts(path):
    """{shape: {"instructions": X, "calls": {name: X}}} from a counts.txt."""
    out = {}
    for n, line in enumerate(open(path), 1):
        f = line.split()
        if not f:
            continue
        try:
            s = out.setdefault(f[0], {"instructions": None, "driver": None, "calls": {}})
            if f[1] == "calls" and len(f) == 4:
                s["calls"][f[2]] = float(f[3])
            elif f[1] in ("instructions", "driver") and len(f) == 3:
                s[f[1]] = float(f[2])
            elif f[1] not in ("entry", "ours") or len(f) != 3:
                raise ValueError
        except (ValueError, IndexError):
            die(f"cpu-gate.py: {path}:{n}: not a counts line: {line.strip()!r}")
    for shape, s in out.items():
        for what in ("instructions", "driver"):
            if s[what] is None:
                die(f"cpu-gate.py: {path}: shape {shape} has no {what} line")
    return out


def read_allow(path):
    """{shape: {"instructions": (allowed rise in percent, reason), "calls": ({name: X}, reason)}}."""
    out = {}
    for n, line in enumerate(open(path), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        f = text.split(None, 3)
        where = f"cpu-gate.py: {path}:{n}"
        if len(f) < 4:
            die(f"{where}: want SHAPE instructions|calls BOUND REASON, got {text!r}")
        shape, what, bound, reason = f
        entry = out.setdefault(shape, {})
        if what in entry:
            die(f"{where}: a second '{what}' line for shape {shape}")
        try:
            if what == "instructions":
                if not (bound.startswith("+") and bound.endswith("%")):
                    raise ValueError
                entry[what] = (float(bound[1:-1]), reason)
            elif what == "calls":
                calls = {}
                for item in bound.split(","):
                    name, value = item.split("=")
                    calls[name] = float(value)
                entry[what] = (calls, reason)
            else:
                raise ValueError
        except ValueError:
            die(f"{where}: want SHAPE instructions +PCT% or SHAPE calls NAME=X[,NAME=X...], "
                     f"got {text!r}")
    return out


def same(a, b):
    """Two per-region call counts (two decimals) are the same."""
    return abs(a - b) < 0.005


def gate(release, tree, allow, threshold):
    """(lines to print, failures, unused allowances)."""
    lines, failures, unused = [], [], []
    for shape in release:
        r, t = release[shape], tree.get(shape)
        a = allow.get(shape, {})
        if t is None:
            failures.append(f"{shape}: no counts for the tree")
            continue
        ri, ti = r["instructions"] - r["driver"], t["instructions"] - t["driver"]
        rise = (ti / ri - 1) * 100 if ri else float("inf")
        verdict = "ok"
        limit = ri * (1 + threshold / 100)
        if ti > limit:
            if "instructions" in a and rise <= a["instructions"][0]:
                verdict = f"allowed up to +{a['instructions'][0]:g} %: {a['instructions'][1]}"
            else:
                verdict = (f"FAIL: more than {threshold:g} % above the release"
                           + (f" and more than the allowed +{a['instructions'][0]:g} %"
                              if "instructions" in a else ""))
                failures.append(f"{shape}: host instructions per region {ri:.0f} -> {ti:.0f} "
                                f"({rise:+.1f} %)")
        elif "instructions" in a:
            unused.append(f"{shape} instructions (the tree is within {threshold:g} % of the "
                          f"release without it)")
        lines.append(f"{shape:7} host instructions per region: release {ri:.0f}, tree {ti:.0f} "
                     f"({rise:+.1f} %; the stand-in driver's {r['driver']:.0f} and "
                     f"{t['driver']:.0f} not judged): {verdict}")
        allowed_calls = a.get("calls", ({}, ""))[0]
        changed = []
        for name in sorted(set(r["calls"]) | set(t["calls"])):
            rc, tc = r["calls"].get(name, 0.0), t["calls"].get(name, 0.0)
            if same(rc, tc):
                if name in allowed_calls:
                    unused.append(f"{shape} calls {name} (as the release's)")
                continue
            ok = name in allowed_calls and same(allowed_calls[name], tc)
            changed.append(f"{name} {rc:.2f} -> {tc:.2f}" + ("" if ok else " FAIL"))
            if not ok:
                failures.append(f"{shape}: driver calls per region: {name} {rc:.2f} -> {tc:.2f}"
                                + (f" (allowed {allowed_calls[name]:.2f})" if name in allowed_calls
                                   else ""))
        if changed:
            lines.append(f"{'':7} driver calls per region changed: " + ", ".join(changed)
                         + (f" (allowed: {a['calls'][1]})" if "calls" in a else ""))
        else:
            lines.append(f"{'':7} driver calls per region as the release's")
    for shape in tree:
        if shape not in release:
            lines.append(f"{shape:7} not in the release's counts: not judged")
    return lines, failures, unused


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    pos, allow_path, threshold, i = [], None, THRESHOLD, 1
    while i < len(argv):
        a = argv[i]
        if a in ("--allow", "--threshold"):
            if i + 1 >= len(argv):
                print(f"cpu-gate.py: option '{a}' needs a value (see --help)", file=sys.stderr)
                return 2
            if a == "--allow":
                allow_path = argv[i + 1]
            else:
                try:
                    threshold = float(argv[i + 1])
                except ValueError:
                    print(f"cpu-gate.py: --threshold takes a number of percent, not '{argv[i + 1]}'",
                          file=sys.stderr)
                    return 2
            i += 2
            continue
        if a.startswith("-"):
            print(f"cpu-gate.py: unknown option '{a}' (see --help)", file=sys.stderr)
            return 2
        pos.append(a)
        i += 1
    if len(pos) != 2:
        print("usage: cpu-gate.py RELEASE_COUNTS TREE_COUNTS [--allow FILE] [--threshold PCT] "
              "(see --help)", file=sys.stderr)
        return 2
    try:
        release, tree = read_counts(pos[0]), read_counts(pos[1])
        allow = read_allow(allow_path) if allow_path else {}
    except OSError as e:
        print(f"cpu-gate.py: {e}", file=sys.stderr)
        return 2
    if not release:
        print(f"cpu-gate.py: {pos[0]} has no counts", file=sys.stderr)
        return 2
    lines, failures, unused = gate(release, tree, allow, threshold)
    print("\n".join("cpu-gate: " + line for line in lines))
    for u in unused:
        print(f"cpu-gate: allowance not used (take it out of {allow_path}): {u}")
    if failures:
        print(f"cpu-gate: FAIL ({len(failures)}): " + "; ".join(failures))
        return 1
    print(f"cpu-gate: PASS ({len(release)} shapes; instructions within {threshold:g} % of the "
          "release or allowed, driver calls as the release's or allowed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
