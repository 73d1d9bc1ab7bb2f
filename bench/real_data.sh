#!/usr/bin/env bash
# The table "Tutorial models and slim nets on real data" of docs/results.md:
# each run trains with `hub train` and evaluates on the 10,000 test images with
# `hub eval`, on data from Debian packages only:
#   idx    Fashion-MNIST (dataset-fashion-mnist, /usr/share/datasets/fashion-mnist)
#          converted by `hub data convert --dataset_name fashion_mnist`
#   cifar  the same Fashion-MNIST images in CIFAR-10's binary layout (Debian has
#          no CIFAR-10): each 28x28 gray image padded with zeros to 32x32 and
#          replicated into the R, G and B planes, written as
#          cifar-10-batches-bin/data_batch_{1..5}.bin (12,000 records each, all
#          60,000 training images) and test_batch.bin (10,000) in a .tar.gz by
#          python3 + numpy, then converted by hub's own CIFAR-10 reader
#          (`hub data convert --dataset_name cifar10`). It is Fashion-MNIST, not
#          CIFAR-10; the converter names the classes airplane..truck, but the
#          labels are Fashion-MNIST's (0 T-shirt/top ... 9 Ankle boot).
# One compute thread per run (HUB_NUM_THREADS=1 OMP_NUM_THREADS=1, one
# preprocessing thread), OMP_WAIT_POLICY=passive: the machine is shared.
# Each run prints its commands, then one line
#   RESULT <run> steps=<n> accuracy=<a> recall_at_5=<r> train_s=<s> load=<l>
# where load is the mean of the 1-minute load average sampled every 10 s
# during training.
# Usage: bench/real_data.sh BUILD_DIR WORK_DIR [RUN...]
#   RUN: mnist lenet cifar10 cifarnet mobilenet_v1_025 mobilenet_v1_025_b64
#   (default: all, in that order)
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR WORK_DIR [mnist|lenet|cifar10|cifarnet|mobilenet_v1_025|mobilenet_v1_025_b64 ...]" >&2
  exit 2
fi
build=$1
work=$2
shift 2
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(mnist lenet cifar10 cifarnet mobilenet_v1_025 mobilenet_v1_025_b64)
hub="$build/cli/hub"
[ -x "$hub" ] || { echo "real_data: $hub not found; build first (ninja -C $build cli/hub)" >&2; exit 1; }
fashion=/usr/share/datasets/fashion-mnist
[ -f "$fashion/train-images-idx3-ubyte.gz" ] ||
  { echo "real_data: $fashion missing (apt-get install dataset-fashion-mnist)" >&2; exit 1; }
python=/usr/bin/python3
"$python" -c 'import numpy' 2>/dev/null ||
  { echo "real_data: $python cannot import numpy (apt-get install python3-numpy)" >&2; exit 1; }
mkdir -p "$work"
export HUB_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive

show() { echo "+ $*" >&2; "$@"; }

# Fashion-MNIST's IDX files -> CIFAR-10 binary layout (label byte, then the
# 1024-byte R, G and B planes of a 32x32 image), as cifar-10-binary.tar.gz.
write_cifar_layout() {
  "$python" - "$fashion" "$1" <<'EOF'
import gzip, io, os, sys, tarfile
import numpy as np

source, output = sys.argv[1], sys.argv[2]

def idx(name, dims):
    with gzip.open(f"{source}/{name}", "rb") as f:
        data = f.read()
    if int.from_bytes(data[0:4], "big") != 0x800 + dims:
        sys.exit(f"{source}/{name}: not an IDX file of {dims}-d uint8")
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)

def records(images, labels):
    n = len(labels)
    padded = np.zeros((n, 32, 32), np.uint8)
    padded[:, 2:30, 2:30] = images
    out = np.empty((n, 3073), np.uint8)
    out[:, 0] = labels
    out[:, 1:] = np.repeat(padded.reshape(n, 1, 1024), 3, axis=1).reshape(n, 3072)
    return out.tobytes()

train_x, train_y = idx("train-images-idx3-ubyte.gz", 3), idx("train-labels-idx1-ubyte.gz", 1)
test_x, test_y = idx("t10k-images-idx3-ubyte.gz", 3), idx("t10k-labels-idx1-ubyte.gz", 1)
files = {}
for i in range(5):
    part = slice(i * 12000, (i + 1) * 12000)
    files[f"data_batch_{i + 1}.bin"] = records(train_x[part], train_y[part])
files["test_batch.bin"] = records(test_x, test_y)
files["batches.meta.txt"] = b"T-shirt/top\nTrouser\nPullover\nDress\nCoat\nSandal\nShirt\nSneaker\nBag\nAnkle boot\n"
with tarfile.open(output + ".tmp", "w:gz") as tar:
    for name, data in files.items():
        info = tarfile.TarInfo("cifar-10-batches-bin/" + name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
os.replace(output + ".tmp", output)
EOF
}

if [ ! -f "$work/idx/labels.txt" ]; then
  show "$hub" data convert --dataset_name fashion_mnist --source "$fashion" --dataset_dir "$work/idx"
fi
if [ ! -f "$work/cifar/labels.txt" ]; then
  echo "+ write $work/fashion-mnist-cifar-binary.tar.gz (Fashion-MNIST in CIFAR-10's binary layout)"
  write_cifar_layout "$work/fashion-mnist-cifar-binary.tar.gz"
  show "$hub" data convert --dataset_name cifar10 --source "$work/fashion-mnist-cifar-binary.tar.gz" \
    --dataset_dir "$work/cifar"
fi

# run NAME MODEL DATA DATASET STEPS IMAGE_SIZE TRAIN_FLAGS...
run() {
  local name=$1 model=$2 data=$3 dataset=$4 steps=$5 size=$6
  shift 6
  local train_dir="$work/train_$name" size_train=() size_eval=()
  if [ "$size" != default ]; then
    size_train=(--train_image_size "$size")
    size_eval=(--eval_image_size "$size")
  fi
  rm -rf "$train_dir"
  echo
  echo "== $name"
  local samples="$work/load_$name"
  : >"$samples"
  (while true; do cut -d' ' -f1 /proc/loadavg >>"$samples"; sleep 10; done) &
  local sampler=$!
  local t0 t1
  t0=$(date +%s)
  show "$hub" train --model_name "$model" --dataset_name "$dataset" --dataset_dir "$work/$data" \
    --train_dir "$train_dir" --max_number_of_steps "$steps" "${size_train[@]}" \
    --num_preprocessing_threads 1 --log_every_n_steps 200 --save_interval_secs 100000 "$@"
  t1=$(date +%s)
  kill "$sampler"
  wait "$sampler" 2>/dev/null || true
  local load
  load=$(awk '{ s += $1; n++ } END { printf "%.1f", n ? s / n : 0 }' "$samples")
  local json
  json=$(show "$hub" eval --model_name "$model" --dataset_name "$dataset" --dataset_dir "$work/$data" \
    --checkpoint_path "$train_dir" --dataset_split_name test "${size_eval[@]}" \
    --num_preprocessing_threads 1 --json)
  echo "$json"
  local accuracy recall
  accuracy=$(echo "$json" | "$python" -c 'import json, sys; print(json.load(sys.stdin)["accuracy"])')
  recall=$(echo "$json" | "$python" -c 'import json, sys; print(json.load(sys.stdin)["recall_at_5"])')
  echo "RESULT $name steps=$steps accuracy=$accuracy recall_at_5=$recall train_s=$((t1 - t0)) load=$load"
}

for r in "${runs[@]}"; do
  case "$r" in
    mnist)  # the official MNIST model, as the 3-epoch row of "Full Fashion-MNIST"
      run mnist mnist idx fashion_mnist 1800 default --batch_size 100 --optimizer adam --opt_epsilon 1e-8 \
        --learning_rate 0.001 --learning_rate_decay_type fixed --weight_decay 0 ;;
    lenet)  # slim's scripts/train_lenet_on_mnist.sh, 5 epochs instead of 20,000 steps
      run lenet lenet idx fashion_mnist 6000 default --batch_size 50 --optimizer sgd --learning_rate 0.01 \
        --learning_rate_decay_type fixed --weight_decay 0 ;;
    cifar10)  # the CIFAR-10 tutorial (cifar10_train.py): SGD 0.1, batch 128, decay 0.004 on local3/4
      run cifar10 cifar10 cifar cifar10 1400 default --batch_size 128 --optimizer sgd --learning_rate 0.1 \
        --learning_rate_decay_type fixed --weight_decay 0.004 ;;
    cifarnet)  # slim's scripts/train_cifarnet_on_cifar10.sh, 1,000 steps instead of 100,000
      run cifarnet cifarnet cifar cifar10 1000 default --batch_size 128 --optimizer sgd --learning_rate 0.1 \
        --learning_rate_decay_type fixed --weight_decay 0.004 ;;
    mobilenet_v1_025)  # from scratch at 32x32 (inception preprocessing), Adam as the mnist run;
      # 30,000 steps so that batch norm's moving statistics (decay 0.9997) forget their
      # initial values (0.9997^30000 = 1e-4; docs/results.md)
      run mobilenet_v1_025 mobilenet_v1_025 cifar cifar10 30000 32 --batch_size 16 --optimizer adam \
        --opt_epsilon 1e-8 --learning_rate 0.001 --learning_rate_decay_type fixed ;;
    mobilenet_v1_025_b64)  # the same in 9,375 steps of 64 images: the moving statistics lag
      run mobilenet_v1_025_b64 mobilenet_v1_025 cifar cifar10 9375 32 --batch_size 64 --optimizer adam \
        --opt_epsilon 1e-8 --learning_rate 0.001 --learning_rate_decay_type fixed ;;
    *)
      echo "real_data: unknown run '$r' (mnist, lenet, cifar10, cifarnet, mobilenet_v1_025, mobilenet_v1_025_b64)" >&2
      exit 2 ;;
  esac
done
