#!/bin/sh
# Top-1 accuracy of an image classifier module and of its int8 quantization
# (`hub quantize`) on a labelled image folder (one sub-folder per class, the
# folder name being the label as retrain derives it), and how often the two
# agree.
#
#   bench/quantize_accuracy.sh BUILD_DIR MODULE CALIBRATION_DIR TEST_DIR [QUANTIZE_FLAGS...]
#
# e.g. after examples/main_job.sh build /tmp/mj:
#   build/cli/hub data export-images --dataset_dir /tmp/mj/data --dataset_name fashion_mnist \
#     --split test --classes 5-9 --per_class 1000 --output_dir /tmp/mj/test_images
#   bench/quantize_accuracy.sh build /tmp/mj/retrained /tmp/mj/images /tmp/mj/test_images --per_channel
set -eu
[ $# -ge 4 ] || { echo "usage: $0 BUILD_DIR MODULE CALIBRATION_DIR TEST_DIR [QUANTIZE_FLAGS...]" >&2; exit 2; }
hub=$1/cli/hub module=$2 calibration=$3 test_dir=$4
shift 4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$hub" quantize "$module" --output_dir "$work/int8" --calibration_dir "$calibration" "$@"
find "$test_dir" -type f \( -name '*.png' -o -name '*.jpg' -o -name '*.jpeg' \) | sort > "$work/files"
# Classify in chunks (argument lists stay short); --json gives the top label per image.
classify() {
  : > "$work/$2.txt"
  split -l 500 "$work/files" "$work/chunk."
  for chunk in "$work"/chunk.*; do
    xargs -d '\n' "$hub" classify --module "$1" --top_k 1 --json < "$chunk" |
      python3 -c 'import json, sys
for e in json.load(sys.stdin): print(e["image"], e["predictions"][0]["label"], sep="\t")' >> "$work/$2.txt"
  done
  rm -f "$work"/chunk.*
}
start=$(date +%s)
classify "$module" float
middle=$(date +%s)
classify "$work/int8" int8
end=$(date +%s)
python3 - "$work/float.txt" "$work/int8.txt" "$((middle - start))" "$((end - middle))" <<'PY'
import os, re, sys
def read(path):
    return dict(line.rstrip("\n").split("\t") for line in open(path))
f, q = read(sys.argv[1]), read(sys.argv[2])
# Labels as retrain writes them: the folder name lower-cased, runs of other characters a space.
truth = {img: re.sub(r"[^a-z0-9]+", " ", os.path.basename(os.path.dirname(img)).lower()) for img in f}
n = len(f)
acc_f = sum(f[i] == truth[i] for i in f) / n
acc_q = sum(q[i] == truth[i] for i in f) / n
agree = sum(f[i] == q[i] for i in f) / n
print(f"images={n} float_top1={acc_f:.4f} int8_top1={acc_q:.4f} delta={100 * (acc_q - acc_f):+.2f} points "
      f"agreement={agree:.4f} classify_s float={sys.argv[3]} int8={sys.argv[4]}")
PY
