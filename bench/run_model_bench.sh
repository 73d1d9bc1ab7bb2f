#!/usr/bin/env bash
# hub vs LibTorch (bench/model_bench.cc) with LibTorch in its best
# configuration on this machine: all cores, OpenBLAS (not the reference BLAS
# that Debian's libblas.so.3 points to unless an OpenBLAS package is installed)
# with the widest kernels the CPU runs, and tcmalloc. Without these LibTorch
# runs 2-11x slower here, and beating that would prove nothing.
# Bench-only packages: libtorch-dev libopenblas0-openmp libtcmalloc-minimal4.
# Usage: bench/run_model_bench.sh [BUILD_DIR] [REPEATS] [SECONDS] [CASE]
# HUB_BENCH_PROFILE=1 adds model_bench --profile (where hub's training steps go).
set -euo pipefail
build=${1:-build}
cores=$(nproc)
tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
[ -e "$tcmalloc" ] || { echo "install libtcmalloc-minimal4 first" >&2; exit 1; }
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)
case "$blas" in
  *openblas*) ;;
  *) echo "libblas.so.3 is $blas, not OpenBLAS: install libopenblas0-openmp first" >&2; exit 1 ;;
esac
# OpenBLAS's SkylakeX kernels need AVX-512 (forcing them elsewhere dies with SIGILL).
if grep -qw avx512f /proc/cpuinfo; then coretype=SkylakeX; else coretype=Haswell; fi
echo "LibTorch: OMP_NUM_THREADS=$cores OPENBLAS_CORETYPE=$coretype LD_PRELOAD=$tcmalloc ($blas)"
exec env OMP_NUM_THREADS="$cores" HUB_NUM_THREADS="$cores" OPENBLAS_CORETYPE="$coretype" LD_PRELOAD="$tcmalloc" \
  "$build/bench/model_bench" ${HUB_BENCH_PROFILE:+--profile} "${2:-3}" "${3:-3}" "${4:-}"
