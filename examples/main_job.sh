#!/usr/bin/env bash
# The main job, end to end on real data (Fashion-MNIST from Debian's
# dataset-fashion-mnist), as a user would run it:
#   1. convert Fashion-MNIST to TFRecord                      (hub data convert)
#   2. train the official MNIST CNN on classes 0-4            (hub train, hub eval)
#   3. export it as an image feature-vector module            (hub export)
#   4. publish it to a local registry this script starts      (hub registry, hub publish)
#   5. write classes 5-9 as an image folder, 1,000 per class  (hub data export-images)
#   6. retrain a classifier for classes 5-9 on the module,
#      fetched from the registry by name                      (hub retrain)
#   7. classify held-out images with the new module           (hub classify)
# and prints the final test accuracy on classes 5-9.
# Usage: examples/main_job.sh [BUILD_DIR] [WORK_DIR]
set -euo pipefail
build=${1:-build}
work=${2:-$(mktemp -d "${TMPDIR:-/tmp}/hub-main-job.XXXXXX")}
hub="$build/cli/hub"
[ -x "$hub" ] || { echo "main_job: $hub not found; build first (ninja -C $build)" >&2; exit 1; }
mkdir -p "$work"
export HUB_CACHE_DIR="$work/cache"
start=$(date +%s)
step() { echo; echo "== [$(( $(date +%s) - start ))s] $*"; }

step "convert Fashion-MNIST"
"$hub" data convert --dataset_name fashion_mnist --dataset_dir "$work/data"

step "train the mnist CNN on classes 0-4 (2 epochs, Adam)"
"$hub" train --model_name mnist --dataset_name fashion_mnist --dataset_dir "$work/data" \
  --train_dir "$work/train" --classes 0-4 --optimizer adam --opt_epsilon 1e-8 \
  --learning_rate 0.001 --learning_rate_decay_type fixed --weight_decay 0 \
  --batch_size 100 --train_epochs 2 --log_every_n_steps 100 --num_preprocessing_threads 2
"$hub" eval --model_name mnist --dataset_name fashion_mnist --dataset_dir "$work/data" \
  --checkpoint_path "$work/train" --classes 0-4

step "export the feature-vector module"
"$hub" export --model_name mnist --checkpoint_path "$work/train" --dataset_name fashion_mnist \
  --dataset_dir "$work/data" --classes 0-4 --output_dir "$work/features"

step "start a local registry and publish the module"
"$hub" registry serve --root "$work/registry" --host 127.0.0.1 --port 0 > "$work/registry.log" 2>&1 &
registry_pid=$!
trap 'kill $registry_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  grep -q "listening on" "$work/registry.log" 2>/dev/null && break
  sleep 0.1
done
url=$(grep -o "http://[0-9.:]*" "$work/registry.log" | head -1)
[ -n "$url" ] || { echo "main_job: the registry did not start:" >&2; cat "$work/registry.log" >&2; exit 1; }
token=$("$hub" registry token create --root "$work/registry" --publisher demo | tail -1)
"$hub" publish "$work/features" --registry "$url" --name demo/fashion-mnist-features --version 1.0.0 \
  --token "$token" --description "mnist CNN trained on Fashion-MNIST classes 0-4 (features)"
"$hub" search fashion --registry "$url"

step "write classes 5-9 as image folders"
"$hub" data export-images --dataset_dir "$work/data" --dataset_name fashion_mnist --split train \
  --classes 5-9 --per_class 1000 --output_dir "$work/images"
"$hub" data export-images --dataset_dir "$work/data" --dataset_name fashion_mnist --split test \
  --classes 5-9 --per_class 2 --output_dir "$work/heldout"

step "retrain on classes 5-9 with the module fetched from the registry"
HUB_REGISTRY="$url" "$hub" retrain --image_dir "$work/images" \
  --module demo/fashion-mnist-features@1.0.0 --output_graph "$work/retrained" \
  --output_labels "$work/retrained_labels.txt" --bottleneck_dir "$work/bottlenecks" \
  --summaries_dir "$work/retrain_logs" --learning_rate 0.1 --eval_step_interval 500 \
  | tee "$work/retrain.log"

step "classify held-out images"
"$hub" classify --module "$work/retrained" --top_k 2 "$work"/heldout/*/*.png

echo
echo "== done in $(( $(date +%s) - start ))s; everything is under $work"
grep "Final test accuracy" "$work/retrain.log"
