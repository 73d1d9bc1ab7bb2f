#!/usr/bin/env bash
# hub vs LibTorch (bench/model_bench.cc) with LibTorch in its best
# configuration on this machine: all cores, OpenBLAS's SkylakeX kernels and
# tcmalloc (without these it runs 2-11x slower here, which would prove nothing).
# Usage: bench/run_model_bench.sh [BUILD_DIR] [REPEATS] [SECONDS]
set -euo pipefail
build=${1:-build}
cores=$(nproc)
tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
[ -e "$tcmalloc" ] || { echo "install libtcmalloc-minimal4 first" >&2; exit 1; }
exec env OMP_NUM_THREADS="$cores" HUB_NUM_THREADS="$cores" OPENBLAS_CORETYPE=SkylakeX LD_PRELOAD="$tcmalloc" \
  "$build/bench/model_bench" "${2:-3}" "${3:-3}"
