// The `checkpoint` file of a TensorFlow training folder: a CheckpointState
// (hub/interop/tf/proto/checkpoint_state.proto) in protobuf text format,
//
//   model_checkpoint_path: "model.ckpt-1200"
//   all_model_checkpoint_paths: "model.ckpt-1000"
//   all_model_checkpoint_paths: "model.ckpt-1200"
//
// naming the latest checkpoint and the retained ones, oldest first. TensorFlow
// writes paths relative to the folder or absolute; hub writes relative ones.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hub::tf {

inline constexpr const char* kCheckpointStateFile = "checkpoint";

struct CheckpointState {
  std::string model_checkpoint_path;
  std::vector<std::string> all_model_checkpoint_paths;
};

// Reads dir/checkpoint; nullopt when the file does not exist. Unknown fields
// are skipped (newer TensorFlow versions add some). Throws Corruption naming
// the file when it does not parse, IOError when it cannot be read.
std::optional<CheckpointState> read_checkpoint_state(const std::string& dir);
// Writes dir/checkpoint through a temporary renamed into place. Throws
// IOError naming the file.
void write_checkpoint_state(const std::string& dir, const CheckpointState& state);

}  // namespace hub::tf
