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
#   /usr/share/doc/gomp-plugin-rs-nvptx/copyright
# Its preinst diverts the stock /usr/lib/<multiarch>/libgomp-plugin-nvptx.so.1 (from
# libgomp-plugin-nvptx1) to libgomp-plugin-nvptx.so.1.distrib (dpkg-divert --rename), so
# both packages stay installed and upgrades of the stock one land beside ours; its
# postrm (remove) takes the diversion back, which restores the stock file. ldconfig
# runs through the libc trigger (it warns that the file is not a symbolic link: ours is a
# plain file at the SONAME, which ldconfig leaves alone). The split debug info is not packaged.
# Prints the .deb's path on its last line. Needs dpkg-deb, objcopy, cargo.
set -euo pipefail
cd "$(dirname "$0")/../.."
usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; }
case ${1:-} in -h|--help) usage; exit 0 ;; -*) echo "deb/build.sh: unknown option '$1' (see --help)" >&2; exit 2 ;; esac
[ $# -le 1 ] || { echo "deb/build.sh: too many arguments (see --help)" >&2; exit 2; }
OUT=${1:-target/deb}
PKG=gomp-plugin-rs-nvptx
ARCH=$(dpkg --print-architecture)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
VERSION=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
[ -n "$VERSION" ] || VERSION=$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -1)
[ -n "$VERSION" ] || { echo "deb/build.sh: no version in Cargo.toml" >&2; exit 1; }
S=target/deb/stage; rm -rf "$S"; mkdir -p "$S/DEBIAN" "$OUT"
DESTDIR=$PWD/$S PREFIX=/usr LIBDIR=/usr/lib/$MA scripts/build install nvptx >/dev/null
rm -rf "$S/usr/lib/debug"
LIB=/usr/lib/$MA/libgomp-plugin-nvptx.so.1
[ -f "$S$LIB" ] || { echo "deb/build.sh: scripts/build install made no $S$LIB" >&2; exit 1; }
install -D -m 0644 packaging/deb/copyright "$S/usr/share/doc/$PKG/copyright"
# The newest glibc symbol version the plugin uses gives the libc6 dependency.
glibc=$(objdump -T "$S$LIB" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
cat > "$S/DEBIAN/control" <<CTL
Package: $PKG
Version: $VERSION
Architecture: $ARCH
Section: libs
Priority: optional
Maintainer: the gomp-plugin-rs authors <gomp-plugin-rs@invalid>
Depends: libc6 (>= $glibc), libgomp1 (>= 13)
Enhances: libgomp-plugin-nvptx1
Installed-Size: $(du -sk --exclude=DEBIAN "$S" | cut -f1)
Description: GCC offload plugin for NVIDIA GPUs, in Rust (gomp-plugin-rs)
 A drop-in replacement for libgomp-plugin-nvptx1's libgomp-plugin-nvptx.so.1:
 programs built with gcc -fopenmp/-fopenacc -foffload=nvptx-none run their
 target regions through it (libgomp 13 to 16, CUDA driver loaded at run time).
 The stock file is diverted to libgomp-plugin-nvptx.so.1.distrib while this
 package is installed and comes back when it is removed.
CTL
for f in preinst postrm; do
  sed "s#@LIB@#$LIB#g; s#@PKG@#$PKG#g" "packaging/deb/$f" > "$S/DEBIAN/$f"
  chmod 0755 "$S/DEBIAN/$f"
done
echo "activate-noawait ldconfig" > "$S/DEBIAN/triggers"
deb=$OUT/${PKG}_${VERSION}_$ARCH.deb
dpkg-deb --root-owner-group -Zxz --build "$S" "$deb" >/dev/null
rm -rf "$S"
dpkg-deb --info "$deb" | sed -n 's/^ \(Package\|Version\|Depends\):/  \1:/p'
echo "$deb"
