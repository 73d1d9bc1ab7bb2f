// Training checkpoints: all variables plus optimizer and moving-average state
// in one safetensors file per save, train_dir/model.ckpt-<step>.safetensors,
// and a `checkpoint` index file naming the latest (TensorFlow's text layout:
// model_checkpoint_path: "..."). Both are written to temporaries and renamed,
// so a crash leaves the previous checkpoint intact; the newest max_to_keep
// are kept.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "hub/tensor/tensor.h"

namespace hub::train {

void save_checkpoint(const std::string& train_dir, int64_t step, const std::map<std::string, Tensor>& tensors,
                     int max_to_keep = 5);
// The latest checkpoint file in dir (from its `checkpoint` index), if any.
std::optional<std::string> latest_checkpoint(const std::string& dir);
// A checkpoint file, or a folder whose latest checkpoint is used; throws
// NotFound naming the path.
std::string resolve_checkpoint(const std::string& path_or_dir);
std::map<std::string, Tensor> load_checkpoint(const std::string& path);
// The step encoded in a checkpoint file name ("model.ckpt-123...") or -1.
int64_t checkpoint_step(const std::string& path);

}  // namespace hub::train
