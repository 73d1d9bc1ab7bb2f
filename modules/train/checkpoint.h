// Training checkpoints: all variables plus optimizer ("optimizer/...") and
// moving-average ("<var>/ExponentialMovingAverage") state, one checkpoint per
// save in train_dir, in one of two formats:
//
//   safetensors (default)  model.ckpt-<step>.safetensors, the step in its
//                          metadata (global_step)
//   tf                     the TensorFlow checkpoint (V2 tensor bundle)
//                          model.ckpt-<step>.index + .data-00000-of-00001,
//                          with a global_step int64 scalar as TensorFlow
//                          writes it (hub/interop/tf/bundle.h)
//
// and TensorFlow's `checkpoint` state file naming the latest and the retained
// ones (hub/interop/tf/checkpoint_state.h). Every file is written to a
// temporary and renamed, the state file last, so a crash leaves the previous
// checkpoint intact; the newest max_to_keep are kept.
//
// Reading accepts either format, and what TensorFlow and TF-Slim give as
// --checkpoint_path: a TensorFlow checkpoint prefix (model.ckpt-12345, whose
// files are model.ckpt-12345.index and .data-*), a safetensors file, or a
// folder whose `checkpoint` file names the latest (relative to the folder,
// or absolute).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hub/tensor/tensor.h"

namespace hub::train {

enum class CheckpointFormat { kSafetensors, kTF };
// "safetensors" or "tf"; throws InvalidArgument naming --checkpoint_format.
CheckpointFormat parse_checkpoint_format(const std::string& name);

void save_checkpoint(const std::string& train_dir, int64_t step, const std::map<std::string, Tensor>& tensors,
                     CheckpointFormat format = CheckpointFormat::kSafetensors, int max_to_keep = 5);
// The latest checkpoint of `dir` as named by its `checkpoint` file, if that
// file exists and the checkpoint it names does (else nullopt; a named one
// that is missing is logged). Throws Corruption when the file does not parse.
std::optional<std::string> latest_checkpoint(const std::string& dir);
// A checkpoint (file or TensorFlow prefix), or a folder whose latest
// checkpoint is used. Throws NotFound naming the path (and, for a folder,
// what its `checkpoint` file names), or InvalidArgument when the path is one
// file of a TensorFlow checkpoint (X.index, X.data-*, X.meta) rather than its
// prefix X.
std::string resolve_checkpoint(const std::string& path_or_dir);
// The step encoded in a checkpoint name ("model.ckpt-123", "...-123.safetensors") or -1.
int64_t checkpoint_step(const std::string& path);

// A checkpoint opened for reading tensors by name. `path` is a safetensors
// file or a TensorFlow checkpoint prefix (as resolve_checkpoint returns).
// A TensorFlow V1 checkpoint (one table file, as slim's 2016 checkpoints) is
// refused with Unimplemented naming it. Errors of the formats' readers name
// the file and the tensor.
class CheckpointReader {
 public:
  explicit CheckpointReader(const std::string& path);
  ~CheckpointReader();
  CheckpointReader(CheckpointReader&&) noexcept;

  const std::string& path() const { return path_; }
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const;
  TensorSpec spec(const std::string& name) const;
  Tensor read(const std::string& name) const;

 private:
  struct Impl;
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

// Every tensor of a checkpoint.
std::map<std::string, Tensor> load_checkpoint(const std::string& path);

// What to restore from a checkpoint into a graph's variables, with TF-Slim's
// semantics (train_image_classifier.py's _get_init_fn and
// assign_from_checkpoint_fn):
struct RestoreOptions {
  // Variables whose names start with one of these are not restored.
  std::vector<std::string> exclude_scopes;
  // A variable the checkpoint lacks keeps its value (logged) instead of
  // failing.
  bool ignore_missing = false;
  // Read "<var>/ExponentialMovingAverage" where the checkpoint has it.
  bool moving_averages = false;
  // Names the source in messages, e.g. "--checkpoint_path".
  std::string what = "checkpoint";
};

// The checkpoint's values for `variables` (name -> the spec the graph
// expects), minus the excluded and ignored ones. A missing variable is
// NotFound naming it and the checkpoint (with a hint at
// --checkpoint_exclude_scopes and --ignore_missing_vars); one of another
// dtype or shape is InvalidArgument naming it and both specs, ignored or not
// (as a TensorFlow Saver refuses it).
std::map<std::string, Tensor> read_variables(const CheckpointReader& checkpoint,
                                             const std::map<std::string, TensorSpec>& variables,
                                             const RestoreOptions& options);

// "a, b,c" -> {"a", "b", "c"}: the comma-separated scope lists of
// --checkpoint_exclude_scopes and --trainable_scopes, each item stripped of
// spaces, empty items dropped.
std::vector<std::string> split_scopes(const std::string& list);
// Whether `name` starts with one of `scopes` (TF-Slim compares prefixes).
bool in_scopes(const std::string& name, const std::vector<std::string>& scopes);

}  // namespace hub::train
