#!/bin/sh
# build.sh - compile bench/offload_bench.c with the sid root's gcc-16 (nvptx offload)
# bench/region_bench.c, bench/revoff_bench.c, bench/acc_bench.c and bench/acc_kernel_bench.c (OpenACC),
# bench/kernel_bench.c and bench/kernel_bench.f90 (gfortran-16: kernel_bench_f),
# bench/tune_bench.c (the launch-shape tuner's costs) and bench/cuda_floor.c into .carry/, next to the plugin, for bench/device-run.sh; and
# .carry/gcc_empty.ptx, the PTX of bench/gcc_empty.c's offload image (bench/gcc_ptx.py),
# whose kernel cuda_floor launches through the bare driver. .carry/plugin/COMMIT names
# the commit the plugin was built from.
# usage: bench/build.sh      (env WORK, default ./.toolchain; makes the sid root if missing)
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
case "${1:-}" in -?*) echo "bench/build.sh: unknown option '$1' (see $0 --help)" >&2; exit 2 ;; esac
[ $# -eq 0 ] || { echo "bench/build.sh: takes no arguments, got '$*' (see $0 --help)" >&2; exit 2; }
set -eu
cd "$(dirname "$0")/.."
export WORK=${WORK:-$PWD/.toolchain}
[ -x "$WORK/sid/usr/bin/gcc-16" ] || scripts/toolchain/mkroot.sh sid
mkdir -p "$WORK/bench" .carry/plugin
cp bench/offload_bench.c bench/region_bench.c bench/revoff_bench.c bench/acc_bench.c bench/acc_kernel_bench.c bench/kernel_bench.c \
  bench/kernel_bench.f90 bench/tune_bench.c bench/gcc_empty.c bench/median.h bench/kernels.h tests/device/gpu_probe.h "$WORK/bench/"
for b in offload_bench region_bench revoff_bench tune_bench; do
  scripts/toolchain/inroot.sh sid sh -c "cd /w/bench && gcc-16 -O2 -fopenmp -foffload=nvptx-none $b.c -o $b"
  cp "$WORK/bench/$b" .carry/
done
scripts/toolchain/inroot.sh sid sh -c "cd /w/bench && gcc-16 -O2 -fopenacc -foffload=nvptx-none acc_bench.c -o acc_bench"
# GCC 16 runs a `kernels` region's loop on one thread (gangs=1, compiled in) unless the
# region is decomposed: its kernels kernel then takes 1.5 s a launch, which no plugin
# changes. Decomposed, `loop independent` there is a gang-vector loop.
scripts/toolchain/inroot.sh sid sh -c "cd /w/bench && gcc-16 -O2 -fopenacc --param=openacc-kernels=decompose -foffload=nvptx-none acc_kernel_bench.c -o acc_kernel_bench"
cp "$WORK/bench/acc_bench" "$WORK/bench/acc_kernel_bench" .carry/
# The kernel benchmark: its n-body calls sqrt, hence libm for the device too.
scripts/toolchain/inroot.sh sid sh -c "cd /w/bench && gcc-16 -O2 -fopenmp -foffload=nvptx-none -foffload-options=-lm kernel_bench.c -o kernel_bench -lm"
scripts/toolchain/inroot.sh sid sh -c "cd /w/bench && gfortran-16 -O2 -fopenmp -foffload=nvptx-none kernel_bench.f90 -o kernel_bench_f"
cp "$WORK/bench/kernel_bench" "$WORK/bench/kernel_bench_f" .carry/
scripts/toolchain/inroot.sh sid sh -c "cd /w/bench && gcc-16 -O2 -fopenmp -foffload=nvptx-none gcc_empty.c -o gcc_empty"
python3 bench/gcc_ptx.py "$WORK/bench/gcc_empty" .carry/gcc_empty.ptx
# revoff_bench's own device code for cuda_floor's revoff_gcc_real rows: as GCC built it,
# and rewritten by the plugin's own code in its two forms (the rev_spin_ptx example).
python3 bench/gcc_ptx.py .carry/revoff_bench .carry/gcc_revoff.ptx
cargo run -q --release -p gomp-plugin-nvptx --example rev_spin_ptx -- wait .carry/gcc_revoff.ptx .carry/gcc_revoff_vspin.ptx
cargo run -q --release -p gomp-plugin-nvptx --example rev_spin_ptx -- acqrel .carry/gcc_revoff.ptx .carry/gcc_revoff_acqrel.ptx
# The raw-driver floor needs no offload compiler; built with the host's cc (it only
# dlopens libcuda).
cc -O2 -Wall -Wextra bench/cuda_floor.c -o .carry/cuda_floor -ldl -lpthread
scripts/build >/dev/null 2>&1
objcopy --strip-debug target/plugin/nvptx/libgomp-plugin-nvptx.so.1 .carry/plugin/libgomp-plugin-nvptx.so.1
# Which commit ours is (device-run.sh records it in bench-raw.txt); -dirty: with changes
# to tracked files that are not committed.
{ git rev-parse HEAD | tr -d '\n'; git diff --quiet HEAD -- 2>/dev/null || printf -- -dirty; echo; } > .carry/plugin/COMMIT
echo "bench: .carry/{offload_bench,region_bench,revoff_bench,tune_bench,acc_bench,acc_kernel_bench,kernel_bench,kernel_bench_f,cuda_floor,gcc_empty.ptx,gcc_revoff{,_vspin,_acqrel}.ptx} and .carry/plugin ready"
