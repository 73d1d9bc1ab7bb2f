#!/bin/sh
# hub vs ONNX Runtime (npm onnxruntime-node, CPU) on the same weights:
# MobileNet v1 1.0/224 and ResNet v1 50 as bench/net_module.h makes them,
# and MobileNet's int8 module (hub quantize's QDQ form, which ONNX Runtime
# fuses into its integer kernels),
# run by hub as a module (the optimised inference graph) and by ONNX Runtime
# as its ONNX export, at batch 1 and 32, two threads each. hub, hub with
# HUB_GRAPH_OPT=0 and ONNX
# Runtime alternate, ROUNDS times per batch, each timing SECONDS after a
# warm-up call; each line gives the medians (images per second) and ends
# `ratio=hub/ort`.
#
#   bench/run_ort_bench.sh [BUILD_DIR [ROUNDS [SECONDS]]]     (build 5 3)
#
# Needs node and tests/js/node_modules (installed here with
# `npm install --ignore-scripts` when absent) and BUILD_DIR/bench/ort_bench.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
rounds=${2:-5}
seconds=${3:-3}
bench=$build/bench/ort_bench
[ -x "$bench" ] || { echo "run_ort_bench: $bench missing: ninja -C $build bench/ort_bench" >&2; exit 1; }
command -v node >/dev/null || { echo "run_ort_bench: node not found (apt-get install nodejs npm)" >&2; exit 1; }
if [ ! -d "$here/../tests/js/node_modules/onnxruntime-node" ]; then
  (cd "$here/../tests/js" && npm install --ignore-scripts)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=2
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for spec in "mobilenet_v1 float 224 1 32" "resnet_v1_50 float 224 1 32" "mobilenet_v1 int8 224 1 32"; do
set -- $spec
net=$1 kind=$2 size=$3
shift 3
rm -rf "$work/module" "$work/model.onnx"
if [ "$kind" = int8 ]; then "$bench" export "$work" "$net" int8 >/dev/null; else "$bench" export "$work" "$net" >/dev/null; fi
for batch in "$@"; do
  : > "$work/hub" ; : > "$work/noopt" ; : > "$work/ort"
  r=0
  while [ "$r" -lt "$rounds" ]; do
    "$bench" time "$work" "$batch" "$seconds" | awk '$1 == "hub" { print $2 }' >> "$work/hub"
    HUB_GRAPH_OPT=0 "$bench" time "$work" "$batch" "$seconds" | awk '$1 == "hub" { print $2 }' >> "$work/noopt"
    NODE_PATH="$here/../tests/js/node_modules" node "$here/ort_bench.js" "$work/model.onnx" images "$batch" "$size" "$size" "$seconds" |
      awk '$1 == "ort" { print $2 }' >> "$work/ort"
    r=$((r + 1))
  done
  [ "$(cat "$work/hub" "$work/noopt" "$work/ort" | wc -l)" -eq $((3 * rounds)) ] ||
    { echo "run_ort_bench: a timing run failed (see above)" >&2; exit 1; }
  hub=$(median < "$work/hub")
  noopt=$(median < "$work/noopt")
  ort=$(median < "$work/ort")
  awk -v net="$net" -v k="$kind" -v b="$batch" -v h="$hub" -v n="$noopt" -v o="$ort" \
    'BEGIN { printf "%s %s batch=%d hub=%.1f img/s hub_noopt=%.1f img/s ort=%.1f img/s ratio=%.2f\n", net, k, b, h, n, o, h / o }'
done
done
