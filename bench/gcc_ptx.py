#!/usr/bin/env python3
"""gcc_ptx.py - extract the nvptx offload image's PTX objects from a host executable.

usage: bench/gcc_ptx.py BINARY OUT
GCC's mkoffload compiles each linked PTX object of the offload image into the host
executable as a NUL-terminated string `ptx_code_N` (docs/plugin-abi.md section 5.1), the
strings the plugin hands to cuLinkAddData one by one. This reads those symbols (with
`nm`, so the binary must keep its symbol table) in the order of N, and writes them to OUT
one after another, each with its terminating NUL: the file bench/cuda_floor.c loads to
launch GCC's own kernel through the bare driver. It prints the kernels (`.entry`) found."""
import re
import struct
import subprocess
import sys


def sections(data):
    """(addr, offset, size) of every section of an ELF64 little-endian file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        sys.exit("gcc_ptx.py: not an ELF64 little-endian file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    out = []
    for i in range(shnum):
        base = shoff + i * shentsize
        sh_type, = struct.unpack_from("<I", data, base + 4)
        addr, offset, size = struct.unpack_from("<QQQ", data, base + 0x10)
        if addr and sh_type != 8:  # SHT_NOBITS has no bytes in the file
            out.append((addr, offset, size))
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return
    bad = [a for a in sys.argv[1:] if a.startswith("-")]
    if bad:
        sys.exit(f"gcc_ptx.py: unknown option '{bad[0]}' (see --help)")
    if len(sys.argv) != 3:
        sys.exit("usage: gcc_ptx.py BINARY OUT (see --help)")
    binary, out = sys.argv[1], sys.argv[2]
    data = open(binary, "rb").read()
    secs = sections(data)
    syms = []
    nm = subprocess.run(["nm", "-S", binary], capture_output=True, text=True, check=True)
    for line in nm.stdout.splitlines():
        f = line.split()
        if len(f) == 4 and re.fullmatch(r"ptx_code_\d+", f[3]):
            syms.append((int(f[3][9:]), int(f[0], 16), int(f[1], 16)))
    if not syms:
        sys.exit(f"gcc_ptx.py: no ptx_code_N symbols in {binary} (no nvptx offload image?)")
    syms.sort()
    if [n for n, _, _ in syms] != list(range(len(syms))):
        sys.exit(f"gcc_ptx.py: ptx_code_N symbols not numbered 0..{len(syms) - 1}")
    blob = bytearray()
    for n, addr, size in syms:
        sec = [s for s in secs if s[0] <= addr and addr + size <= s[0] + s[2]]
        if not sec:
            sys.exit(f"gcc_ptx.py: ptx_code_{n} lies in no section of the file")
        off = addr - sec[0][0] + sec[0][1]
        code = bytes(data[off:off + size])
        if not code.endswith(b"\0") or b"\0" in code[:-1] or b".version" not in code:
            sys.exit(f"gcc_ptx.py: ptx_code_{n} is not one NUL-terminated PTX text")
        blob += code
    open(out, "wb").write(blob)
    entries = re.findall(rb"\.visible \.entry ([^ (]+)", blob)
    print(f"gcc_ptx: {len(syms)} PTX objects, {len(blob)} bytes -> {out}; kernels: "
          + " ".join(e.decode() for e in entries))


if __name__ == "__main__":
    main()
