#!/usr/bin/env bash
# hub retrain with and without --fine_tune on real images: Fashion-MNIST
# (Debian's dataset-fashion-mnist) classes 5-9 written as PNG class folders,
# on two small modules:
#   mnist_features    the official MNIST CNN trained briefly on classes 0-4
#                     (a pretrained module, as in examples/main_job.sh, but
#                     only 100 steps; no batch norm: its {train} tag set
#                     differs by dropout)
#   lenet_random      LeNet with its initial (random) weights
#   mobilenet_random  mobilenet_v1_025 at 32x32 with its initial (random)
#                     weights: batch norm (decay 0.9997, as slim's), trained
#                     in its {train} tag set
# Each module is retrained twice with the same seed, steps and learning rate:
# head only (bottlenecks cached), then --fine_tune. The table of
# docs/results.md ("Fine-tuning in retrain") comes from this script's last
# lines.
# Usage: bench/retrain_fine_tune.sh [BUILD_DIR] [WORK_DIR]
set -euo pipefail
build=${1:-build}
work=${2:-$(mktemp -d "${TMPDIR:-/tmp}/hub-fine-tune.XXXXXX")}
hub="$build/cli/hub"
[ -x "$hub" ] || { echo "retrain_fine_tune: $hub not found; build first (ninja -C $build cli/hub)" >&2; exit 1; }
mkdir -p "$work"
export OMP_WAIT_POLICY=passive
start=$(date +%s)
step() { echo; echo "== [$(( $(date +%s) - start ))s] $*"; }

step "convert Fashion-MNIST"
"$hub" data convert --dataset_name fashion_mnist --dataset_dir "$work/data"

step "module mnist_features: the mnist CNN, 100 steps on classes 0-4"
"$hub" train --model_name mnist --dataset_name fashion_mnist --dataset_dir "$work/data" \
  --train_dir "$work/train" --classes 0-4 --optimizer adam --opt_epsilon 1e-8 \
  --learning_rate 0.001 --learning_rate_decay_type fixed --weight_decay 0 \
  --batch_size 100 --max_number_of_steps 100 --log_every_n_steps 50 --num_preprocessing_threads 2
"$hub" export --model_name mnist --checkpoint_path "$work/train" --dataset_name fashion_mnist \
  --dataset_dir "$work/data" --classes 0-4 --output_dir "$work/mnist_features"

step "module lenet_random: LeNet, initial weights"
"$hub" export --model_name lenet --output_dir "$work/lenet_random"

step "module mobilenet_random: mobilenet_v1_025 at 32x32, initial weights"
"$hub" export --model_name mobilenet_v1_025 --image_size 32 --output_dir "$work/mobilenet_random"

step "images: classes 5-9 of the training split, 150 per class"
"$hub" data export-images --dataset_dir "$work/data" --dataset_name fashion_mnist --split train \
  --classes 5-9 --per_class 150 --output_dir "$work/images"

results=()
for module in mnist_features lenet_random mobilenet_random; do
  for mode in head fine_tune; do
    step "retrain $module, $mode"
    flags=()
    [ "$mode" = fine_tune ] && flags=(--fine_tune)
    t0=$(date +%s)
    "$hub" retrain --image_dir "$work/images" --module "$work/$module" \
      --output_graph "$work/out_${module}_$mode" --output_labels "$work/out_${module}_$mode.txt" \
      --bottleneck_dir "$work/bottlenecks" --summaries_dir "$work/logs_${module}_$mode" \
      --how_many_training_steps 300 --train_batch_size 50 --learning_rate 0.1 \
      --testing_percentage 20 --validation_percentage 10 --eval_step_interval 100 \
      --random_seed 1 "${flags[@]}" | tee "$work/retrain_${module}_$mode.log"
    results+=("$module $mode: $(grep -o 'Final test accuracy = .*' "$work/retrain_${module}_$mode.log"), $(( $(date +%s) - t0 )) s")
  done
done

echo
echo "== done in $(( $(date +%s) - start ))s; everything is under $work"
printf '%s\n' "${results[@]}"
