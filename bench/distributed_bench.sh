#!/usr/bin/env bash
# Data parallelism on one machine (docs/distributed.md, "Measured here"):
# 2 ranks x 1 thread against 1 rank x 2 threads, the same global batch.
#
#   bench/distributed_bench.sh BUILD_DIR [ROUNDS]       (default 3 rounds)
#
# (a) the training step alone (bench/distributed_bench step: random images, no
#     input pipeline) for lenet, cifarnet and mobilenet_v1_025;
# (b) `hub train` end to end on Fashion-MNIST (Debian's dataset-fashion-mnist,
#     converted into a temporary folder) with lenet and mnist: decoding,
#     preprocessing, the step, logging; images/s from the log's windows of 10
#     steps after the first.
# The two configurations alternate ROUNDS times, so both see the same load on
# a shared machine; each line is one run, then the medians.
set -euo pipefail
build=${1:?usage: bench/distributed_bench.sh BUILD_DIR [ROUNDS]}
rounds=${2:-3}
hub=$build/cli/hub
bench=$build/bench/distributed_bench
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
mpi=(mpirun --oversubscribe -np 2 -x HUB_NUM_THREADS -x OMP_WAIT_POLICY)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# (a) the step alone: "NET GLOBAL_BATCH"
for case in "lenet 100" "cifarnet 100" "mobilenet_v1_025 32"; do
  set -- $case
  for r in $(seq "$rounds"); do
    HUB_NUM_THREADS=2 "$bench" step "$1" "$2" 10 | tee -a "$work/one_$1"
    HUB_NUM_THREADS=1 "${mpi[@]}" "$bench" step "$1" $(($2 / 2)) 10 2>/dev/null | tee -a "$work/two_$1"
  done
  one=$(sed 's/.* s\/step, \([0-9.]*\) images.*/\1/' "$work/one_$1" | median)
  two=$(sed 's/.* s\/step, \([0-9.]*\) images.*/\1/' "$work/two_$1" | median)
  echo "== step $1, global batch $2: 1x2 $one images/s, 2x1 $two images/s, ratio $(echo "$two / $one" | bc -l | cut -c1-4)"
done

# (b) hub train end to end.
"$hub" data convert --dataset_name fashion_mnist --dataset_dir "$work/data" >/dev/null
rate() {  # median examples/sec of the log's windows after the first
  grep -o '([0-9.]* examples/sec' | tr -d '(' | awk '{print $1}' | tail -n +2 | median
}
for net in lenet mnist; do
  args=(train --model_name "$net" --dataset_name fashion_mnist --dataset_dir "$work/data" --max_number_of_steps 60
        --log_every_n_steps 10 --optimizer momentum --learning_rate 0.01 --num_preprocessing_threads 1)
  for r in $(seq "$rounds"); do
    rm -rf "$work/t1" "$work/t2"
    HUB_NUM_THREADS=2 "$hub" "${args[@]}" --train_dir "$work/t1" --batch_size 100 2>&1 | rate | tee -a "$work/train1_$net"
    HUB_NUM_THREADS=1 "${mpi[@]}" "$hub" "${args[@]}" --train_dir "$work/t2" --batch_size 50 2>&1 | rate | tee -a "$work/train2_$net"
  done
  one=$(median < "$work/train1_$net")
  two=$(median < "$work/train2_$net")
  echo "== hub train $net, global batch 100: 1x2 $one images/s, 2x1 $two images/s, ratio $(echo "$two / $one" | bc -l | cut -c1-4)"
done
