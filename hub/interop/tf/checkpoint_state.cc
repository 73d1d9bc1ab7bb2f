#include "hub/interop/tf/checkpoint_state.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <filesystem>

#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/interop/tf/proto/checkpoint_state.pb.h"

namespace hub::tf {

namespace {

// Collects the parser's first complaint with its line and column.
class ErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (first.empty())
      first = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
  }
  std::string first;
};

}  // namespace

std::optional<CheckpointState> read_checkpoint_state(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / kCheckpointStateFile).string();
  std::string text;
  try {
    text = read_file_bytes(path, int64_t{16} << 20);
  } catch (const Error& e) {
    if (e.code() == Code::kNotFound) return std::nullopt;
    throw;
  }
  proto::CheckpointState p;
  google::protobuf::TextFormat::Parser parser;
  ErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  parser.AllowUnknownField(true);
  if (!parser.ParseFromString(text, &p))
    throw_error(Code::kCorruption, "'" + path + "' is not a TensorFlow checkpoint state (" + errors.first + ")");
  CheckpointState out;
  out.model_checkpoint_path = p.model_checkpoint_path();
  out.all_model_checkpoint_paths.assign(p.all_model_checkpoint_paths().begin(), p.all_model_checkpoint_paths().end());
  return out;
}

void write_checkpoint_state(const std::string& dir, const CheckpointState& state) {
  proto::CheckpointState p;
  p.set_model_checkpoint_path(state.model_checkpoint_path);
  for (const std::string& s : state.all_model_checkpoint_paths) p.add_all_model_checkpoint_paths(s);
  std::string text;
  google::protobuf::TextFormat::PrintToString(p, &text);
  write_file_atomic((std::filesystem::path(dir) / kCheckpointStateFile).string(), text);
}

}  // namespace hub::tf
