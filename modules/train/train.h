// The slim tools as library functions: train_image_classifier (train),
// eval_image_classifier (evaluate) and export_inference_graph (export_module),
// over TFRecord data sets written by `hub data convert` and the built-in
// networks of modules/nets. The `hub train|eval|export` commands are thin
// layers over these (cli/train.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hub/graph/optimizer.h"
#include "modules/train/distributed.h"

namespace hub::train {

// Flag names and defaults of train_image_classifier.py (and, for the epoch
// flags, the official MNIST model).
struct TrainConfig {
  std::string train_dir = "/tmp/tfmodel/";
  std::string model_name = "inception_v3";
  std::string dataset_name = "imagenet";
  std::string dataset_split_name = "train";
  std::string dataset_dir;
  int64_t labels_offset = 0;
  std::string preprocessing_name;  // default: the net's
  int64_t train_image_size = 0;    // default: the net's
  int64_t batch_size = 32;
  int64_t max_number_of_steps = 0;  // 0: until train_epochs (or forever)
  int num_preprocessing_threads = 4;
  int log_every_n_steps = 10;
  double save_interval_secs = 600;
  double save_summaries_secs = 600;
  // Histograms of the gradients and their norms in the summaries (slim's
  // --summarize_gradients).
  bool summarize_gradients = false;
  // Optimizer and learning rate.
  std::string optimizer = "rmsprop";
  double weight_decay = 0.00004;
  OptimizerOptions optimizer_options;  // slim's defaults (hub/graph/optimizer.h)
  std::string learning_rate_decay_type = "exponential";
  double learning_rate = 0.01, end_learning_rate = 0.0001, learning_rate_decay_factor = 0.94;
  double num_epochs_per_decay = 2.0;
  double label_smoothing = 0.0;
  double moving_average_decay = 0;  // 0: none
  // slim's --quantize_delay: -1 trains the float graph; N >= 0 trains with
  // fake quantization (modules/slim/quantize.h) from global step N, the
  // activation ranges tracked from the first step (docs/training.md).
  int64_t quantize_delay = -1;
  // Checkpoints written to train_dir: "safetensors" or "tf" (modules/train/checkpoint.h).
  std::string checkpoint_format = "safetensors";
  // Fine-tuning, as train_image_classifier.py: variables from checkpoint_path
  // (a TensorFlow checkpoint prefix, a safetensors file or a folder with a
  // `checkpoint` file) except those whose names start with one of the
  // comma-separated checkpoint_exclude_scopes; with ignore_missing_vars,
  // variables the checkpoint lacks keep their initial values. Only variables
  // under trainable_scopes (comma-separated prefixes; empty: all) train.
  // Ignored when train_dir already holds a checkpoint (training resumes).
  std::string checkpoint_path, checkpoint_exclude_scopes, trainable_scopes;
  bool ignore_missing_vars = false;
  // Official MNIST model: epochs, evaluation between them, early stop.
  double train_epochs = 0;          // > 0: train this many epochs (overrides max steps)
  double epochs_between_evals = 0;  // > 0: evaluate on --eval_split every N epochs
  std::string eval_split = "test";
  double stop_threshold = 0;  // > 0: stop once eval accuracy >= this
  uint64_t seed = 0;
  // The backend the step runs on (hub/backend/backend.h; empty: $HUB_BACKEND,
  // else onednn). On a device backend (cuda) the variables, their gradients
  // and the optimizer's slots stay on the device; checkpoints copy them out.
  std::string backend;
  // Classes to keep (labels outside are skipped); empty = all.
  std::vector<int64_t> only_classes;
  // Data parallelism (`mpirun -np N hub train`, docs/distributed.md):
  // batch_size is per rank; gradients are averaged in buckets of this size;
  // slim's deployment flags are checked against the job.
  int64_t gradient_bucket_bytes = int64_t{4} << 20;
  ReplicaFlags replica_flags;
};

struct TrainResult {
  int64_t steps = 0;           // global step at the end
  double first_loss = 0;       // loss of the first step of this call
  double final_loss = 0;       // loss of the last step of this call
  std::vector<double> losses;  // every step's loss, in order (this call)
  double last_eval_accuracy = -1;
  std::string checkpoint;
};

// On an MPI job (modules/train/distributed.h) every rank calls it; rank 0
// writes the checkpoints, summaries and log lines, and its result has the
// checkpoint path.
TrainResult train(const TrainConfig& config);

struct EvalConfig {
  // A TF checkpoint prefix, a safetensors file, or a folder (its latest
  // checkpoint). Default: eval_image_classifier's, which is train's default
  // train_dir, so an evaluation after a training run with defaults finds it.
  std::string checkpoint_path = "/tmp/tfmodel/";
  std::string model_name = "inception_v3";
  std::string dataset_name = "imagenet";
  std::string dataset_split_name = "test";
  std::string dataset_dir;
  std::string eval_dir;  // TensorBoard logs (optional)
  int64_t labels_offset = 0;
  std::string preprocessing_name;
  int64_t eval_image_size = 0;
  int64_t batch_size = 100;
  int64_t max_num_batches = 0;  // 0: the whole split
  int num_preprocessing_threads = 4;
  double moving_average_decay = 0;  // > 0: evaluate the moving averages
  // eval_image_classifier's --quantize: evaluate the fake-quantized graph (a
  // checkpoint trained with --quantize_delay).
  bool quantize = false;
  std::vector<int64_t> only_classes;
  std::string backend;  // as TrainConfig::backend
};

struct EvalResult {
  double accuracy = 0;
  double recall_at_5 = 0;
  int64_t examples = 0;
};

// On an MPI job every rank evaluates its shard of the split and all get the
// counts of the whole split; rank 0 writes eval_dir.
EvalResult evaluate(const EvalConfig& config);

struct ExportConfig {
  std::string model_name;
  std::string checkpoint_path;  // as EvalConfig's; empty: initial (random) weights
  int64_t num_classes = 0;      // 0: from the dataset's labels.txt, else the net default
  std::string dataset_name;     // for labels (optional)
  std::string dataset_dir;
  int64_t labels_offset = 0;
  int64_t image_size = 0;  // default: the net's
  // export_inference_graph's --is_training: the default tag set {} holds the
  // training-mode graph too (batch norm on batch statistics, dropout on).
  bool is_training = false;
  // export_inference_graph's --quantize: the graphs keep the fake
  // quantization of training with --quantize_delay, and the module its range
  // variables (from the checkpoint), for `hub quantize`.
  bool quantize = false;
  std::string output_dir;
  std::vector<int64_t> only_classes;  // labels kept when training used a class subset
};

// Writes a module: input images float32 [batch, H, W, C] in [0, 1] (the
// net's preprocessing range mapping is inside the graph), signatures
// "default" (features), "logits", "classification" (probabilities), image
// size attached, labels.txt as an asset; tag sets {} (inference, or training
// mode with is_training) and {"train"}.
void export_module(const ExportConfig& config);

}  // namespace hub::train
