#!/usr/bin/env bash
# Transfer learning from an ONNX network, end to end, as a user would run it:
#   1. a pretrained network arrives as ONNX: here a small MobileNet in
#      PyTorch's export style with random weights, written by the tests'
#      tooling (Debian's python3-onnx)                            (make_onnx_models.py)
#   2. import it with image conventions (ImageNet mean/std)       (hub import)
#   3. write Fashion-MNIST classes 5-9 as image folders           (hub data convert, export-images)
#   4. retrain a classifier head on the imported network          (hub retrain)
#   5. convert the retrained module to ONNX                       (hub convert --to onnx)
#   6. classify held-out images with hub and with ONNX Runtime
#      (tests/js/classify_ort.js, its own PNG decoding and
#      TensorFlow.js resizing) and check both give the same top-1 (hub classify)
# Usage: examples/onnx_job.sh [BUILD_DIR] [WORK_DIR]; PER_CLASS and STEPS
# (environment) size the retraining (default 200 images per class, 300 steps).
set -euo pipefail
build=${1:-build}
work=${2:-$(mktemp -d "${TMPDIR:-/tmp}/hub-onnx-job.XXXXXX")}
per_class=${PER_CLASS:-200}
steps=${STEPS:-300}
src=$(cd "$(dirname "$0")/.." && pwd)
hub="$build/cli/hub"
[ -x "$hub" ] || { echo "onnx_job: $hub not found; build first (ninja -C $build)" >&2; exit 1; }
[ -d "$src/tests/js/node_modules/onnxruntime-node" ] || {
  echo "onnx_job: ONNX Runtime for Node is missing (cd tests/js && npm ci --ignore-scripts)" >&2; exit 1; }
mkdir -p "$work"
export HUB_CACHE_DIR="$work/cache"
start=$(date +%s)
step() { echo; echo "== [$(( $(date +%s) - start ))s] $*"; }

step "write an ONNX MobileNet (PyTorch export style, random weights)"
/usr/bin/python3 "$src/tests/hub/interop/make_onnx_models.py" "$work/onnx"

step "import it as an image module"
"$hub" import "$work/onnx/mobilenet.onnx" --output_dir "$work/imported" \
  --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225
"$hub" info "$work/imported" | grep -E "signature|image_|source_" || true

step "write Fashion-MNIST classes 5-9 as image folders"
"$hub" data convert --dataset_name fashion_mnist --dataset_dir "$work/data"
"$hub" data export-images --dataset_dir "$work/data" --dataset_name fashion_mnist --split train \
  --classes 5-9 --per_class "$per_class" --output_dir "$work/images"
"$hub" data export-images --dataset_dir "$work/data" --dataset_name fashion_mnist --split test \
  --classes 5-9 --per_class 4 --output_dir "$work/heldout"

step "retrain a head on the imported network"
"$hub" retrain --image_dir "$work/images" --module "$work/imported" --output_graph "$work/retrained" \
  --output_labels "$work/labels.txt" --bottleneck_dir "$work/bottlenecks" \
  --how_many_training_steps "$steps" --learning_rate 0.05 --eval_step_interval 100 | tee "$work/retrain.log"

step "convert the retrained module to ONNX"
"$hub" convert "$work/retrained" --to onnx --output "$work/retrained.onnx"

step "classify held-out images with hub and with ONNX Runtime"
images=("$work"/heldout/*/*.png)
"$hub" classify --module "$work/retrained" --top_k 1 --json "${images[@]}" |
  /usr/bin/python3 -c 'import json,sys; [print(r["image"] + "\t" + r["predictions"][0]["label"]) for r in json.load(sys.stdin)]' \
  > "$work/hub_top1.txt"
node "$src/tests/js/classify_ort.js" "$work/retrained.onnx" 64 64 "$work/labels.txt" "${images[@]}" > "$work/ort_top1.txt"
if diff "$work/hub_top1.txt" "$work/ort_top1.txt"; then
  echo "hub and ONNX Runtime agree on the top-1 class of all ${#images[@]} held-out images"
else
  echo "onnx_job: hub and ONNX Runtime disagree (above)" >&2
  exit 1
fi
echo "== done in $(( $(date +%s) - start ))s; everything is under $work"
