#!/bin/bash
# build.sh - build the Debian package gomp-plugin-rs-nvptx: our nvptx plugin in place of
# the file of Debian's libgomp-plugin-nvptx1, the Debian way.
#
# usage: packaging/deb/build.sh [OUTDIR]     (default OUTDIR: target/deb)
#        packaging/deb/build.sh -h|--help
# Builds the plugin (scripts/build install with DESTDIR, PREFIX=/usr), then dpkg-deb
# makes OUTDIR/gomp-plugin-rs-nvptx_VERSION_ARCH.deb holding
#   /usr/lib/<multiarch>/libgomp-plugin-nvptx.so.1   stripped (a plain file, SONAME name)
#   /usr/include/gomp_plugin_nvptx.h                 the plugin's own C API
#   /usr/share/doc/gomp-plugin-rs-nvptx/copyright    with the MIT licence's full text
#   /usr/share/doc/gomp-plugin-rs-nvptx/LICENSE-MIT, LICENSE-APACHE
# and OUTDIR/gomp-plugin-rs-nvptx-dbg_VERSION_ARCH.deb holding its debug info at
#   /usr/lib/debug/.build-id/xx/yyyy.debug           (where gdb finds it by build ID)
# Its preinst diverts the stock /usr/lib/<multiarch>/libgomp-plugin-nvptx.so.1 (from
# libgomp-plugin-nvptx1) to libgomp-plugin-nvptx.so.1.distrib (dpkg-divert --rename), so
# both packages stay installed and upgrades of the stock one land beside ours; its
# postrm (remove) takes the diversion back, which restores the stock file. ldconfig
# runs through the libc trigger (it warns that the file is not a symbolic link: ours is a
# plain file at the SONAME, which ldconfig leaves alone).
# Prints the two .debs' paths on its last two lines (the plugin's last). Needs dpkg-deb,
# objcopy, readelf, cargo.
set -euo pipefail
cd "$(dirname "$0")/../.."
usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; }
case ${1:-} in -h|--help) usage; exit 0 ;; -*) echo "deb/build.sh: unknown option '$1' (see --help)" >&2; exit 2 ;; esac
[ $# -le 1 ] || { echo "deb/build.sh: too many arguments (see --help)" >&2; exit 2; }
OUT=${1:-target/deb}
PKG=gomp-plugin-rs-nvptx
T_COPYRIGHT=$(mktemp)
ARCH=$(dpkg --print-architecture)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
VERSION=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
[ -n "$VERSION" ] || VERSION=$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -1)
[ -n "$VERSION" ] || { echo "deb/build.sh: no version in Cargo.toml" >&2; exit 1; }
S=target/deb/stage G=target/deb/stage-dbg; rm -rf "$S" "$G"; mkdir -p "$S/DEBIAN" "$G/DEBIAN" "$OUT"
DESTDIR=$PWD/$S PREFIX=/usr LIBDIR=/usr/lib/$MA DEBUGROOT=/usr/lib/debug scripts/build install nvptx >/dev/null
rm -rf "$S/usr/share/gomp-plugin-rs"            # scripts/build's list for uninstall: dpkg keeps its own
mkdir -p "$G/usr/lib"; mv "$S/usr/lib/debug" "$G/usr/lib/debug"
LIB=/usr/lib/$MA/libgomp-plugin-nvptx.so.1
[ -f "$S$LIB" ] || { echo "deb/build.sh: scripts/build install made no $S$LIB" >&2; exit 1; }
ID=$(readelf -n "$S$LIB" | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p')
[ -f "$G/usr/lib/debug/.build-id/${ID:0:2}/${ID:2}.debug" ] ||
  { echo "deb/build.sh: no debug file for build ID '$ID'" >&2; exit 1; }
DOC=/usr/share/doc/$PKG
# The MIT licence must be quoted in full; Debian systems carry the Apache-2.0 text.
{ cat packaging/deb/copyright; echo " ."; echo " The MIT license:"; echo " ."
  sed 's/^$/./; s/^/ /' LICENSE-MIT; } > "$T_COPYRIGHT"
install -D -m 0644 "$T_COPYRIGHT" "$S$DOC/copyright"
install -D -m 0644 LICENSE-MIT "$S$DOC/LICENSE-MIT"
install -D -m 0644 LICENSE-APACHE "$S$DOC/LICENSE-APACHE"
install -D -m 0644 "$T_COPYRIGHT" "$G/usr/share/doc/$PKG-dbg/copyright"
rm -f "$T_COPYRIGHT"
# The newest glibc symbol version the plugin uses gives the libc6 dependency.
glibc=$(objdump -T "$S$LIB" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
cat > "$S/DEBIAN/control" <<CTL
Package: $PKG
Version: $VERSION
Architecture: $ARCH
Section: libs
Priority: optional
Maintainer: the gomp-plugin-rs authors <gomp-plugin-rs@invalid>
Depends: libc6 (>= $glibc), libgomp1 (>= 12)
Enhances: libgomp-plugin-nvptx1
Installed-Size: $(du -sk --exclude=DEBIAN "$S" | cut -f1)
Description: GCC offload plugin for NVIDIA GPUs, in Rust (gomp-plugin-rs)
 A drop-in replacement for libgomp-plugin-nvptx1's libgomp-plugin-nvptx.so.1:
 programs built with gcc -fopenmp/-fopenacc -foffload=nvptx-none run their
 target regions through it (libgomp 12 to 16, CUDA driver loaded at run time).
 The stock file is diverted to libgomp-plugin-nvptx.so.1.distrib while this
 package is installed and comes back when it is removed.
CTL
for f in preinst postrm; do
  sed "s#@LIB@#$LIB#g; s#@PKG@#$PKG#g" "packaging/deb/$f" > "$S/DEBIAN/$f"
  chmod 0755 "$S/DEBIAN/$f"
done
echo "activate-noawait ldconfig" > "$S/DEBIAN/triggers"
cat > "$G/DEBIAN/control" <<CTL
Package: $PKG-dbg
Version: $VERSION
Architecture: $ARCH
Section: debug
Priority: optional
Maintainer: the gomp-plugin-rs authors <gomp-plugin-rs@invalid>
Depends: $PKG (= $VERSION)
Installed-Size: $(du -sk --exclude=DEBIAN "$G" | cut -f1)
Description: debug info for gomp-plugin-rs-nvptx
 The DWARF of the plugin libgomp-plugin-nvptx.so.1, found by gdb through the
 library's build ID (/usr/lib/debug/.build-id/).
CTL
deb=$OUT/${PKG}_${VERSION}_$ARCH.deb dbg=$OUT/${PKG}-dbg_${VERSION}_$ARCH.deb
dpkg-deb --root-owner-group -Zxz --build "$S" "$deb" >/dev/null
dpkg-deb --root-owner-group -Zxz --build "$G" "$dbg" >/dev/null
rm -rf "$S" "$G"
dpkg-deb --info "$deb" | sed -n 's/^ \(Package\|Version\|Depends\):/  \1:/p'
echo "$dbg"
echo "$deb"
