// The retrain pipeline (TensorFlow's retrain.py, natively): images in class
// folders + an image feature-vector module -> a new module whose default
// signature maps images to class probabilities.
//
//   1. image lists and the stable SHA-1 split (image_lists.h)
//   2. bottlenecks: every image decoded, resized to the module's input size
//      and run through the module in batches on all cores, cached per image
//      and module (bottleneck_cache.h); corrupt or unreadable images are
//      skipped with a warning naming each file
//   3. a softmax head (fully connected, truncated-normal init stddev 0.001)
//      trained with SGD on random cached bottlenecks, or, with distortions,
//      on freshly distorted images (crop, scale, flip, brightness as retrain.py)
//      With fine_tune, the module's variables train with the head instead
//      (fine_tune.h): every step decodes and distorts its images and runs
//      the module's training graph; no bottleneck is cached or read, and
//      validation and test run the inference graph with the updated weights.
//   4. evaluation on validation batches during training and on the whole
//      test set at the end
//   5. export: feature extractor + head as one self-contained module, labels
//      as an asset and in --output_labels
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hub/resolver/resolver.h"

namespace hub::retrain {

struct RetrainConfig {
  std::string image_dir;
  std::string module;                              // handle: path, file://, http(s)://, registry name
  std::string output_graph = "/tmp/output_graph";  // the output module folder
  std::string output_labels = "/tmp/output_labels.txt";
  std::string intermediate_output_graphs_dir = "/tmp/intermediate_graph/";
  int64_t intermediate_store_frequency = 0;
  std::string summaries_dir = "/tmp/retrain_logs";
  int64_t how_many_training_steps = 4000;
  double learning_rate = 0.01;
  double testing_percentage = 10;
  double validation_percentage = 10;
  int64_t eval_step_interval = 10;
  int64_t train_batch_size = 100;
  int64_t test_batch_size = -1;
  int64_t validation_batch_size = 100;
  bool print_misclassified_test_images = false;
  std::string bottleneck_dir = "/tmp/bottleneck";
  std::string final_tensor_name = "final_result";
  bool flip_left_right = false;
  double random_crop = 0;
  double random_scale = 0;
  double random_brightness = 0;
  std::string saved_model_dir;  // optional second export location
  uint64_t seed = 0;
  int64_t bottleneck_batch_size = 32;
  // Fine-tuning (TF Hub's trainable=True): the module's trainable variables
  // whose names start with one of the comma-separated fine_tune_scopes (empty:
  // all) train with the head at fine_tune_learning_rate (unset:
  // learning_rate / 10). The scopes and the rate without fine_tune are an
  // InvalidArgument naming the flag.
  bool fine_tune = false;
  std::string fine_tune_scopes;
  std::optional<double> fine_tune_learning_rate;
  // retrain.py's --quantize (its quantized head): the head trains with fake
  // quantization on its input bottleneck, its weights and its logits
  // (head.h), and the new module keeps them for `hub quantize`. The head
  // trains on bottlenecks, so not with fine_tune (InvalidArgument).
  bool quantize = false;
};

struct RetrainResult {
  double final_test_accuracy = 0;
  int64_t test_examples = 0;
  int64_t bottlenecks_computed = 0;
  int64_t bottlenecks_cached = 0;
  int64_t images_skipped = 0;
  // With fine_tune: the module variables that trained (the module's names)
  // and whether its {train} tag set was used.
  std::vector<std::string> fine_tuned_variables;
  bool used_train_tags = false;
};

// Runs the pipeline; `resolver` turns config.module into a module (local
// directories need no network; URLs and registry names use its cache and,
// if it has one, its registry).
RetrainResult retrain(const RetrainConfig& config, const resolver::Resolver& resolver);

}  // namespace hub::retrain
