#!/bin/bash
# The checks and benchmarks of the CUDA backend that need a GPU, in one run
# (docs/gpu.md): for a machine with an NVIDIA GPU and a build configured with
# CUDA (meson setup build; -Dcuda=auto finds it).
#
#   bash bench/cuda_check.sh [BUILD_DIR [OUT_DIR [PHASES]]]
#
# (defaults: build, /tmp/cuda_check, suite,cli,bench; PHASES picks some of
# the three below, comma-separated, for a short turn on a lent GPU; each
# suite case is stopped after CASE_TIMEOUT seconds, 300 unless set).
#
# 1. The CUDA suite (tests/hub/ops/cuda), each case in its own process, eight
#    at a time: a case that corrupts the CUDA context cannot take the others
#    with it. OUT_DIR/summary.txt has one line per case with its exit status
#    and OUT_DIR/failures.txt the logs of the cases that failed.
# 2. The hub command on the GPU: a built-in module run with --backend cuda
#    and --backend onednn (the largest relative difference of their
#    outputs); a MNIST-format data set (written by python3 + numpy) trained
#    with --backend cuda, then evaluated on both backends; the trained net
#    exported as a feature module, a head retrained on its images with
#    `hub retrain` on each backend, and held-out images classified with the
#    GPU's head by `hub classify` on both (top-1 labels and scores compared).
# 3. bench/cuda_conv_bench (cuDNN convolutions against cuBLAS SGEMM),
#    bench/cudnn_direct_bench (MobileNet v1 inference against a program on
#    cuDNN and cuBLAS alone, and hub's training step) and bench/retrain_bench
#    (bottleneck creation over 5,000 images on the GPU, then on 2 CPU cores).
set -u
BUILD=$(cd "${1:-build}" && pwd)
OUT=${2:-/tmp/cuda_check}
PHASES=${3:-suite,cli,bench}
wanted() { [[ ",$PHASES," == *",$1,"* ]]; }
mkdir -p "$OUT" "$OUT/logs"
rm -f "$OUT/logs/"*
S=$(date +%s)
phase() { echo "== $1 after $(($(date +%s) - S)) s"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || exit 1

# 1. The CUDA suite, case by case.
if wanted suite; then
"$BUILD/tests/cuda_test" --list-test-cases --no-colors 2>/dev/null | sed -n '/^====/,/^====/p' | grep -v '^====' \
  > "$OUT/cases.txt"
cat > "$OUT/one_case.sh" <<'ONE'
#!/bin/bash
# One case: $1 = its line in cases.txt (a comma in a name is doctest's filter
# separator, so it matches through the wildcard '?').
name=$(sed -n "${1}p" "$OUT/cases.txt")
timeout "$CASE_TIMEOUT" "$BUILD/tests/cuda_test" --no-colors "--test-case=$(printf '%s' "$name" | tr ',' '?')" \
  > "$OUT/logs/case$1.log" 2>&1
echo "rc=$? case $1: $name" >> "$OUT/logs/summary.txt"
ONE
chmod +x "$OUT/one_case.sh"
# Eight processes on the machine's cores: OpenMP threads sleep while idle
# rather than spin (as meson test runs the suites, tests/meson.build).
export OUT BUILD OMP_WAIT_POLICY=passive CASE_TIMEOUT=${CASE_TIMEOUT:-300}
seq 1 "$(grep -c . "$OUT/cases.txt")" | xargs -P 8 -n 1 "$OUT/one_case.sh"
sort -t' ' -k3 -n "$OUT/logs/summary.txt" > "$OUT/summary.txt"
for n in $(grep -v '^rc=0 ' "$OUT/summary.txt" | sed 's/.*case \([0-9]*\):.*/\1/'); do
  echo "---- case $n"
  grep -v '^\[test case\]' "$OUT/logs/case$n.log"
done > "$OUT/failures.txt"
grep -v '^rc=0 ' "$OUT/summary.txt"
echo "CUDA suite: $(grep -c '^rc=0 ' "$OUT/summary.txt") of $(grep -c . "$OUT/summary.txt") cases passed"
phase "CUDA suite"
fi

# 2. The command line on the GPU (its data written by python3 with numpy).
if wanted cli && ! python3 -c 'import numpy' 2>/dev/null; then
  echo "== command line skipped: python3 with numpy is needed to write its data"
elif wanted cli; then
HUB="$BUILD/cli/hub"
W=$(mktemp -d "${TMPDIR:-/tmp}/hub-cuda-check.XXXXXX")
python3 - "$W" <<'PY'
import gzip, os, struct, sys
import numpy as np
w = sys.argv[1]
rng = np.random.default_rng(0)
os.makedirs(f'{w}/src')
for split, prefix, n in (('train', 'train', 6000), ('test', 't10k', 1000)):
    labels = rng.integers(0, 10, n).astype(np.uint8)
    images = (rng.random((n, 28, 28)) * 60).astype(np.uint8)
    for i, k in enumerate(labels):  # class k: a bright bar at rows 2k+4 .. 2k+6
        images[i, 2 * k + 4:2 * k + 7, 4:24] = 255
    with gzip.open(f'{w}/src/{prefix}-images-idx3-ubyte.gz', 'wb') as f:
        f.write(struct.pack('>IIII', 2051, n, 28, 28) + images.tobytes())
    with gzip.open(f'{w}/src/{prefix}-labels-idx1-ubyte.gz', 'wb') as f:
        f.write(struct.pack('>II', 2049, n) + labels.tobytes())
np.save(f'{w}/x.npy', rng.random((4, 224, 224, 3), dtype=np.float32))
PY
"$HUB" export --model_name mobilenet_v1 --output_dir "$W/mobilenet" > /dev/null
for b in cuda onednn; do
  "$HUB" run "$W/mobilenet" --input "images=$W/x.npy" --output_dir "$W/run_$b" --backend $b > /dev/null
done
python3 - "$W" <<'PY'
import sys, numpy as np
w = sys.argv[1]
a, b = np.load(f'{w}/run_cuda/default.npy'), np.load(f'{w}/run_onednn/default.npy')
print('hub run mobilenet_v1 --backend cuda vs onednn: max_rel_diff %.2e' % (np.abs(a - b).max() / np.abs(b).max()))
PY
"$HUB" data convert --dataset_name mnist --source "$W/src" --dataset_dir "$W/data" > /dev/null
"$HUB" train --backend cuda --model_name mnist --dataset_name mnist --dataset_dir "$W/data" --train_dir "$W/train" \
  --max_number_of_steps 300 --batch_size 100 --optimizer adam --learning_rate 0.001 --log_every_n_steps 100 \
  --moving_average_decay 0.99 2>&1 | tail -4
for b in cuda onednn; do
  echo "hub eval --backend $b: $("$HUB" eval --backend $b --model_name mnist --dataset_name mnist \
    --dataset_dir "$W/data" --checkpoint_path "$W/train" 2>/dev/null | tail -1)"
done
# The trained net as a feature module, a head retrained on its images on
# each backend, and held-out images classified with the GPU's head on both.
"$HUB" export --model_name mnist --checkpoint_path "$W/train" --dataset_name mnist --dataset_dir "$W/data" \
  --output_dir "$W/features" > /dev/null
"$HUB" data export-images --dataset_dir "$W/data" --dataset_name mnist --split train --per_class 100 \
  --output_dir "$W/images" > /dev/null
"$HUB" data export-images --dataset_dir "$W/data" --dataset_name mnist --split test --per_class 3 \
  --output_dir "$W/heldout" > /dev/null
for b in cuda onednn; do
  echo "hub retrain --backend $b: $("$HUB" retrain --backend $b --image_dir "$W/images" --module "$W/features" \
    --output_graph "$W/retrained_$b" --output_labels "$W/labels_$b.txt" --bottleneck_dir "$W/bottlenecks_$b" \
    --summaries_dir "$W/logs_$b" --how_many_training_steps 200 2>&1 | grep 'Final test accuracy')"
done
for b in cuda onednn; do
  "$HUB" classify --backend $b --module "$W/retrained_cuda" --top_k 1 "$W"/heldout/*/*.png > "$W/classify_$b.txt"
done
python3 - "$W" <<'PY'
import sys
w = sys.argv[1]
def top1(backend):  # (label, score) per image; an image's line is its path, then "  label  score"
    return [(l.split()[0], float(l.split()[1])) for l in open(f'{w}/classify_{backend}.txt') if l.startswith('  ')]
a, b = top1('cuda'), top1('onednn')
print('hub classify --backend cuda vs onednn: %d of %d images, %d top-1 labels differ, scores differ by at most %.1e'
      % (len(a), len(b), sum(x[0] != y[0] for x, y in zip(a, b)), max((abs(x[1] - y[1]) for x, y in zip(a, b)), default=0)))
PY
rm -rf "$W"
phase "command line"
fi

# 3. Benchmarks.
if wanted bench; then
"$BUILD/bench/cuda_conv_bench" 5 | tee "$OUT/cuda_conv_bench.txt"
phase "cuda_conv_bench"
"$BUILD/bench/cudnn_direct_bench" 7 1 64 | tee "$OUT/cudnn_direct_bench.txt"
phase "cudnn_direct_bench"
HUB_BACKEND=cuda "$BUILD/bench/retrain_bench" 5000 200 | tee "$OUT/retrain_gpu.txt"
HUB_NUM_THREADS=2 taskset -c 0,1 "$BUILD/bench/retrain_bench" 500 200 | tee "$OUT/retrain_2cores.txt"
phase "retrain_bench"
fi
