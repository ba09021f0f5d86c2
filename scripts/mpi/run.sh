#!/bin/bash
# run.sh - run examples/mpi_offload.c with Open MPI from scripts/mpi/bundle.sh, once per
# plugin, on this machine (the GPU machine, or a GPU-less one: the ranks then fall back
# to the host).
#
# usage: scripts/mpi/run.sh CARRY_DIR
# CARRY_DIR holds bundle-16.tar.xz (from the bundle cache, .toolchain/bundles: its loader, glibc and libgomp, and
# the stock plugin), mpi-bundle.tar.xz and mpi_offload (scripts/mpi/bundle.sh), and a
# folder per plugin other than stock (plugin/ for ours, as for tests/device/run.sh).
# Unpacks Open MPI at /tmp/mpi (its fixed place) with bundle-16's libraries in
# /tmp/mpi/glibc, then for each plugin runs
#   mpirun -np NP --oversubscribe mpi_offload
# with the plugin's folder and libcuda's on LD_LIBRARY_PATH (for libgomp's dlopen;
# glibc itself comes from the RPATH, so the host's programs are not affected).
# env: PLUGINS (default "stock ours"; a name other than stock is CARRY_DIR/NAME, "ours"
#      is CARRY_DIR/plugin), NP (default 4), MPI_TIMEOUT (seconds per run, default 120),
#      MPIRUN_ARGS (more mpirun options; run as root, --allow-run-as-root is added).
# Prints each run's output after a line "=== PLUGIN: mpirun ..." and "=== PLUGIN: exit N".
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "run.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 1 ] || { echo "run.sh: expects 1 argument (CARRY_DIR), got $# (see $0 --help)" >&2; exit 2; }
set -u
C=$(cd "$1" && pwd)
M=/tmp/mpi
rm -rf "$M" /tmp/mpi-b16 && mkdir -p /tmp/mpi-b16
tar -xJf "$C/mpi-bundle.tar.xz" -C /tmp || exit 1
tar -xJf "$C/bundle-16.tar.xz" -C /tmp/mpi-b16 || exit 1
B=/tmp/mpi-b16/bundle-16
mkdir -p "$M/glibc" && cp -a "$B/lib/." "$M/glibc/"
CUDA_LIBDIR=$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')" 2>/dev/null)
[ "$CUDA_LIBDIR" = . ] && CUDA_LIBDIR=
export OPAL_PREFIX=$M PRTE_PREFIX=$M PMIX_INSTALL_PREFIX=$M/lib/x86_64-linux-gnu/pmix2
export PMIX_MCA_pcompress_base_silence_warning=1
ROOT_ARG=; [ "$(id -u)" = 0 ] && ROOT_ARG=--allow-run-as-root   # Open MPI refuses root otherwise
rc=0
for p in ${PLUGINS:-stock ours}; do
  case $p in stock) dir=$B/plugin ;; ours) dir=$C/plugin ;; *) dir=$C/$p ;; esac
  cmd=("$M/bin/mpirun" -np "${NP:-4}" --oversubscribe $ROOT_ARG ${MPIRUN_ARGS:-}
       -x LD_LIBRARY_PATH="$dir${CUDA_LIBDIR:+:$CUDA_LIBDIR}" "$C/mpi_offload")
  echo "=== $p: mpirun -np ${NP:-4} --oversubscribe ${ROOT_ARG:+$ROOT_ARG }${MPIRUN_ARGS:+$MPIRUN_ARGS }mpi_offload (plugin from $dir)"
  timeout "${MPI_TIMEOUT:-120}" "${cmd[@]}" 2>&1
  r=$?
  echo "=== $p: exit $r"
  [ $r = 0 ] || rc=1
done
exit $rc
