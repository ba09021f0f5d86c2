#!/bin/bash
# bundle.sh - a relocatable Open MPI for the GPU machine (or any machine whose glibc is
# older than Debian sid's), and examples/mpi_offload.c built against it.
#
# usage: scripts/mpi/bundle.sh OUT_DIR      (env WORK: the toolchain roots, default ./.toolchain)
# Writes OUT_DIR/mpi-bundle.tar.xz (Debian sid's Open MPI, PRRTE and PMIx runtime with the
# libraries they need, laid out to be unpacked at /tmp/mpi) and OUT_DIR/mpi_offload.
# Both run through the dynamic loader and glibc of bundle-16 (the bundle cache, .toolchain/bundles), which
# scripts/mpi/run.sh copies to /tmp/mpi/glibc: every executable gets that loader as its
# ELF interpreter and /tmp/mpi's library folders as its RPATH (patchelf), so mpirun,
# prterun and the ranks they start need no wrapper and no LD_LIBRARY_PATH that would
# also reach the host's own programs. The path /tmp/mpi is fixed (RPATH and interpreter
# are absolute); Open MPI, PRRTE and PMIx find their files there through OPAL_PREFIX,
# PRTE_PREFIX and PMIX_INSTALL_PREFIX (scripts/mpi/run.sh sets them).
# The .deb files come from Debian sid through apt-get with a private state folder
# (OUT_DIR/apt: nothing is installed, no root's package lists are touched); the program
# is compiled with the sid root's gcc-16 (scripts/toolchain/inroot.sh, run this under
# `flock $WORK/.lock` when the roots are shared). Needs apt-get, dpkg-deb, patchelf, xz.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "bundle.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 1 ] || { echo "bundle.sh: expects 1 argument (OUT_DIR), got $# (see $0 --help)" >&2; exit 2; }
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1"; O=$(cd "$1" && pwd)
export WORK=${WORK:-$REPO/.toolchain}
[ -x "$WORK/sid/usr/bin/gcc-16" ] || "$REPO/scripts/toolchain/mkroot.sh" sid
for t in apt-get dpkg-deb patchelf xz; do
  command -v $t >/dev/null || { echo "bundle.sh: $t is missing" >&2; exit 1; }
done
# The runtime closure of Open MPI's mpirun and libmpi, less what bundle-16 has (glibc,
# libgcc, libstdc++, libgfortran, libgomp); libopenmpi-dev for mpi.h.
PKGS="libopenmpi40 openmpi-bin openmpi-common libopenmpi-dev libprrte-bin libprrte4
  prrte-common libpmix2t64 libhwloc15 libevent-core-2.1-7t64 libevent-pthreads-2.1-7t64
  libevent-2.1-7t64 libfabric1 libnl-3-200 libnl-route-3-200 libpsm2-2 libucc1 libucx0
  libibverbs1 ibverbs-providers librdmacm1t64 libnuma1 libudev1 zlib1g libpciaccess0
  libltdl7 libzstd1 liblzma5 libxml2-16 libesmtp6 libssl3t64"
A=$O/apt; mkdir -p "$A/state/lists/partial" "$A/cache/archives/partial" "$A/debs"
touch "$A/state/status"
KEYRING=$WORK/sid/usr/share/keyrings/debian-archive-keyring.gpg
echo "deb [signed-by=$KEYRING] http://deb.debian.org/debian sid main" > "$A/sources.list"
cat > "$A/apt.conf" <<EOF
Dir::Etc::SourceList "$A/sources.list";
Dir::Etc::SourceParts "/dev/null";
Dir::State "$A/state";
Dir::State::status "$A/state/status";
Dir::Cache "$A/cache";
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
Acquire::Languages "none";
EOF
export APT_CONFIG=$A/apt.conf
apt-get -q update >/dev/null
(cd "$A/debs" && rm -f ./*.deb && apt-get -q download $PKGS 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
ls "$A/debs"/*.deb >/dev/null
X=$A/x; rm -rf "$X"; mkdir -p "$X"
for d in "$A/debs"/*.deb; do dpkg-deb -x "$d" "$X"; done
echo "bundle.sh: Open MPI $(dpkg-deb -f "$A"/debs/openmpi-bin_*.deb Version) from sid"

# /tmp/mpi: bin, lib, share as under /usr (the prefix the packages were built for).
M=/tmp/mpi; rm -rf "$M"; mkdir -p "$M"
cp -a "$X/usr/bin" "$X/usr/lib" "$X/usr/share" "$M/"
L=$M/lib/x86_64-linux-gnu
rm -rf "$M/share/doc" "$M/share/man" "$M/share/lintian" "$M/lib/sysusers.d" "$L"/*java* \
  "$L/fortran" "$L"/libmpi_mpifh* "$L"/libmpi_use* "$L"/liboshmem* "$M/bin"/osh* \
  "$M/bin"/mpijavac* "$M/bin"/mpif* "$M/bin"/mpic* "$M/bin"/mpiC*
ln -sf mpirun.openmpi "$M/bin/mpirun"
RPATH=$M/glibc:$L:$L/pmix2/lib
for f in "$M"/bin/*; do
  [ -L "$f" ] && continue
  head -c 4 "$f" | grep -q ELF || continue
  patchelf --set-interpreter "$M/glibc/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$RPATH" "$f"
done
tar -C /tmp -cJf "$O/mpi-bundle.tar.xz" mpi

# The example, compiled in the sid root against the bundle's mpi.h and libmpi.
D=$WORK/mpi-example; rm -rf "$D"; mkdir -p "$D/lib"
cp -a "$L/openmpi/include" "$D/include"
cp -aL "$L"/*.so* "$D/lib/"
cp "$REPO/examples/mpi_offload.c" "$D/"
"$REPO/scripts/toolchain/inroot.sh" sid sh -c "cd /w/mpi-example && gcc-16 -O2 -fopenmp \
  -foffload=nvptx-none -foffload-options=-lm -Iinclude mpi_offload.c -o mpi_offload \
  -Llib -Wl,-rpath-link,lib -l:libmpi.so.40 -l:libopen_mpi.so.40 -lm -ldl"
cp "$D/mpi_offload" "$O/mpi_offload"
patchelf --set-interpreter "$M/glibc/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$RPATH" "$O/mpi_offload"
echo "bundle.sh: wrote $O/mpi-bundle.tar.xz ($(du -h "$O/mpi-bundle.tar.xz" | cut -f1)) and $O/mpi_offload"
