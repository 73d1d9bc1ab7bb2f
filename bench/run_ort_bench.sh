#!/bin/sh
# hub vs ONNX Runtime (npm onnxruntime-node, CPU) on the same weights, two
# threads each: MobileNet v1 1.0/224 at batch 1 and 32, ResNet v1 50 and
# Inception v3 at batch 1 and 8 (float, as bench/net_module.h makes them), and
# MobileNet's int8 module at batch 1 and 32.
#
# Float: hub runs the module (the optimised inference graph; hub_noopt with
# HUB_GRAPH_OPT=0), ONNX Runtime its `hub convert --to onnx` export.
# int8: hub runs `hub quantize`'s module; ONNX Runtime runs its own int8 form
# of the float export, made by bench/ort_qdq_model.py with Debian's
# python3-onnx (batch norms folded, int8 per-channel weights, int32 biases,
# the activation grid of the same calibration), which its CPU provider fuses
# into integer kernels; ort_hub_export is ONNX Runtime on hub's own QDQ export
# of the int8 module; hub_imported is hub on ONNX Runtime's int8 model after
# `hub import` (its QDQ weights stay int8, so it runs on hub's int8 kernels).
#
# The variants alternate, ROUNDS times per batch, each timing SECONDS after
# warm-up (ORT: one call; hub: its first call and its module's timed turns
# between activation layouts, 12 calls); each line gives the medians (images per second), GFLOP/s
# (2 x multiply-adds per image) as a fraction of the FMA peak of two threads
# (PEAK_GFLOPS, else measured first by `ort_bench peak 2`, bench/fma_peak.h;
# int8 lines: GOP/s against 4x that, VNNI's four 8-bit multiply-adds per
# 32-bit lane) and ends `ratio=hub/ort`.
#
#   bench/run_ort_bench.sh [BUILD_DIR [ROUNDS [SECONDS [CASE]]]]     (build 5 3;
#       CASE: a substring of the case lines below, e.g. "int8")
#
# Needs node and tests/js/node_modules (installed here with
# `npm install --ignore-scripts` when absent), /usr/bin/python3 with
# python3-onnx, BUILD_DIR/bench/ort_bench and BUILD_DIR/cli/hub.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
rounds=${2:-5}
seconds=${3:-3}
filter=${4:-}
bench=$build/bench/ort_bench
for exe in "$bench" "$build/cli/hub"; do
  [ -x "$exe" ] || { echo "run_ort_bench: $exe missing: ninja -C $build bench/ort_bench cli/hub" >&2; exit 1; }
done
peak=${PEAK_GFLOPS:-$("$bench" peak 2)}
echo "FMA peak of 2 threads: $peak GFLOP/s${PEAK_GFLOPS:+ (PEAK_GFLOPS)}"
command -v node >/dev/null || { echo "run_ort_bench: node not found (apt-get install nodejs npm)" >&2; exit 1; }
[ -d /usr/lib/python3/dist-packages/onnx ] ||
  { echo "run_ort_bench: Debian's python3-onnx is not installed" >&2; exit 1; }
if [ ! -d "$here/../tests/js/node_modules/onnxruntime-node" ]; then
  (cd "$here/../tests/js" && npm install --ignore-scripts)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=2
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ort() { NODE_PATH="$here/../tests/js/node_modules" node "$here/ort_bench.js" "$1" images "$2" "$size" "$size" "$seconds" | awk '$1 == "ort" { print $2 }'; }
hub() { "$bench" time "${2:-$work}" "$1" "$seconds" | awk '$1 == "hub" { print $2 }'; }
for spec in "mobilenet_v1 float 224 1 32" "resnet_v1_50 float 224 1 8" "inception_v3 float 299 1 8" \
            "mobilenet_v1 int8 224 1 32"; do
  case "$spec" in *"$filter"*) ;; *) continue ;; esac
  set -- $spec
  net=$1 kind=$2 size=$3
  shift 3
  rm -rf "$work/module" "$work/model.onnx" "$work/float" "$work/imported"
  mkdir "$work/float"
  macs=$("$bench" export "$work/float" "$net" | awk '$1 == "macs" { print $2 }')
  if [ "$kind" = int8 ]; then
    "$bench" export "$work" "$net" int8 >/dev/null
    "$build/cli/hub" info "$work/module" --json > "$work/quantization.json"
    /usr/bin/python3 "$here/ort_qdq_model.py" "$work/float/model.onnx" "$work/quantization.json" "$work/ort.onnx" >/dev/null
    mkdir "$work/imported"
    "$build/cli/hub" import "$work/ort.onnx" --output_dir "$work/imported/module" >/dev/null
  else
    mv "$work/float/module" "$work/float/model.onnx" "$work/"
    cp "$work/model.onnx" "$work/ort.onnx"
  fi
  for batch in "$@"; do
    : > "$work/hub.t"; : > "$work/alt.t"; : > "$work/ort.t"; : > "$work/imported.t"
    r=0
    while [ "$r" -lt "$rounds" ]; do
      hub "$batch" >> "$work/hub.t"
      if [ "$kind" = int8 ]; then
        ort "$work/model.onnx" "$batch" >> "$work/alt.t"
        hub "$batch" "$work/imported" >> "$work/imported.t"
      else
        HUB_GRAPH_OPT=0 hub "$batch" >> "$work/alt.t"
      fi
      ort "$work/ort.onnx" "$batch" >> "$work/ort.t"
      r=$((r + 1))
    done
    want=$((3 * rounds)); [ "$kind" = int8 ] && want=$((4 * rounds))
    [ "$(cat "$work/hub.t" "$work/alt.t" "$work/ort.t" "$work/imported.t" | wc -l)" -eq "$want" ] ||
      { echo "run_ort_bench: a timing run failed (see above)" >&2; exit 1; }
    if [ "$kind" = int8 ]; then alt=ort_hub_export; else alt=hub_noopt; fi
    imported=""
    [ "$kind" = int8 ] && imported=" hub_imported=$(median < "$work/imported.t") img/s"
    awk -v net="$net" -v k="$kind" -v b="$batch" -v h="$(median < "$work/hub.t")" -v a="$(median < "$work/alt.t")" \
        -v o="$(median < "$work/ort.t")" -v alt="$alt" -v macs="$macs" -v peak="$peak" -v imp="$imported" 'BEGIN {
      gh = 2 * macs * h / 1e9; go = 2 * macs * o / 1e9
      unit = k == "int8" ? "GOP/s" : "GFLOP/s"; top = k == "int8" ? 4 * peak : peak
      printf "%s %s batch=%d hub=%.1f img/s (%.0f %s, %.0f%% of peak) %s=%.1f img/s%s ort=%.1f img/s (%.0f %s, %.0f%% of peak) ratio=%.2f\n",
        net, k, b, h, gh, unit, 100 * gh / top, alt, a, imp, o, go, unit, 100 * go / top, h / o }'
  done
done
