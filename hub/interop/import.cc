#include "hub/interop/import.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/interop/tf/bundle.h"
#include "hub/interop/tf/checkpoint_state.h"
#include "hub/interop/tf/saved_model.h"
#include "hub/interop/tf/tfjs.h"

namespace fs = std::filesystem;

namespace hub::interop {

namespace {

bool is_dir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_regular(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Whether every top-level field of the file is one of ONNX ModelProto's with
// its wire type (onnx/onnx.proto: ir_version 1, producer_name 2,
// producer_version 3, domain 4, model_version 5, doc_string 6, graph 7,
// opset_import 8, metadata_props 14, training_info 20, functions 25), and
// ir_version and graph are present; or the file ends inside a field after
// an ir_version (a truncated model, which the importer then reports). Reads
// the file once without holding it.
bool looks_like_onnx(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (int64_t{2} << 30)) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  google::protobuf::io::FileInputStream raw(fd);
  raw.SetCloseOnDelete(true);
  google::protobuf::io::CodedInputStream in(&raw);
  static const std::map<int, int> kWireTypes = {{1, 0}, {2, 2}, {3, 2},  {4, 2},  {5, 0}, {6, 2},
                                                {7, 2}, {8, 2}, {14, 2}, {20, 2}, {25, 2}};
  bool ir_version = false, graph = false;
  for (uint32_t tag; (tag = in.ReadTag()) != 0;) {
    const int field = static_cast<int>(tag >> 3), wire = static_cast<int>(tag & 7);
    auto expected = kWireTypes.find(field);
    if (expected == kWireTypes.end() || expected->second != wire) return false;
    if (wire == 0) {
      uint64_t v;
      if (!in.ReadVarint64(&v)) return ir_version;
    } else {
      uint32_t length;
      if (!in.ReadVarint32(&length)) return ir_version;
      if (in.CurrentPosition() + int64_t{length} > st.st_size) return ir_version;  // cut short
      if (!in.Skip(static_cast<int>(length))) return false;
    }
    ir_version = ir_version || field == 1;
    graph = graph || field == 7;
  }
  return ir_version && graph && in.CurrentPosition() == st.st_size;
}

std::string tfjs_json(const std::string& path) {
  return is_dir(path) ? (fs::path(path) / "model.json").string() : path;
}

// A TensorFlow checkpoint: a training folder with a `checkpoint` file, a
// bundle prefix, or a bundle's .index file.
bool is_tf_checkpoint(const std::string& path) {
  if (is_dir(path)) return is_regular((fs::path(path) / tf::kCheckpointStateFile).string());
  const std::string suffix = ".index";
  if (path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0 &&
      tf::is_bundle_prefix(path.substr(0, path.size() - suffix.size())))
    return true;
  return tf::is_bundle_prefix(path);
}

}  // namespace

std::string_view format_name(Format format) {
  switch (format) {
    case Format::kTfHubModule:
      return "TF Hub module";
    case Format::kSavedModel:
      return "SavedModel";
    case Format::kTfjsGraphModel:
      return "TF.js graph model";
    case Format::kOnnx:
      return "ONNX";
    case Format::kTfCheckpoint:
      return "TF checkpoint";
  }
  return "?";
}

std::optional<Format> recognize_format(const std::string& path) {
  if (is_dir(path)) {
    if (tf::is_tfhub_module_dir(path)) return Format::kTfHubModule;
    if (tf::is_saved_model_dir(path)) return Format::kSavedModel;
    if (tf::is_tfjs_graph_model(tfjs_json(path))) return Format::kTfjsGraphModel;
    if (is_tf_checkpoint(path)) return Format::kTfCheckpoint;
    return std::nullopt;
  }
  if (tf::is_tfjs_graph_model(path)) return Format::kTfjsGraphModel;
  if (looks_like_onnx(path)) return Format::kOnnx;
  if (is_tf_checkpoint(path)) return Format::kTfCheckpoint;
  return std::nullopt;
}

Format detect_format(const std::string& path) {
  // A checkpoint prefix names no file itself.
  if (std::optional<Format> f = recognize_format(path)) return *f;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw_error(Code::kNotFound, "'" + path + "' does not exist");
  std::string found = is_dir(path) ? "a folder" : "a file";
  if (is_dir(path) && is_regular((fs::path(path) / "module.pb").string())) found = "a hub module folder already";
  if (is_dir(path) && is_regular((fs::path(path) / "model.json").string()))
    found = "a folder whose model.json is not a TF.js graph model";
  throw_error(Code::kInvalidArgument,
              "'" + path +
                  "': unrecognized format: expected a SavedModel directory (saved_model.pb), a TF Hub "
                  "module "
                  "(tfhub_module.pb), a TF.js model.json (format graph-model) or an ONNX model; found " +
                  found);
}

std::string options_key(const ImportOptions& options) {
  nlohmann::json j = nlohmann::json::object();
  if (!options.tag_sets.empty()) {
    std::set<std::vector<std::string>> sets;
    for (const TagSet& t : options.tag_sets) sets.insert(std::vector<std::string>(t.begin(), t.end()));
    j["tag_sets"] = sets;
  }
  const onnx_interop::OnnxImportOptions& o = options.onnx;
  if (!o.image_size.empty()) j["image_size"] = o.image_size;
  if (!o.mean.empty()) j["mean"] = o.mean;
  if (!o.std.empty()) j["std"] = o.std;
  if (!o.input_range.empty()) j["input_range"] = o.input_range;
  if (o.image_signatures) j["image_signatures"] = true;
  if (!o.feature_output.empty()) j["feature_output"] = o.feature_output;
  if (!o.labels.empty()) j["labels_sha256"] = sha256_hex(o.labels);
  return j.empty() ? "" : j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ModuleSpec import_model(const std::string& path, const ImportOptions& options) {
  const Format format = detect_format(path);
  const onnx_interop::OnnxImportOptions& onnx = options.onnx;
  const bool onnx_options = !onnx.image_size.empty() || !onnx.mean.empty() || !onnx.std.empty() ||
                            !onnx.input_range.empty() || onnx.image_signatures || !onnx.feature_output.empty() ||
                            !onnx.labels.empty();
  const std::string fmt(format_name(format));
  if (onnx_options && format != Format::kOnnx)
    throw_error(Code::kInvalidArgument,
                "'" + path + "' is a " + fmt + ": the image and label options apply to ONNX models only");
  if (!options.tag_sets.empty() && format != Format::kSavedModel && format != Format::kTfHubModule)
    throw_error(Code::kInvalidArgument,
                "'" + path + "' is a " + fmt + ": tag sets apply to SavedModels and TF Hub modules only");
  if (format == Format::kTfCheckpoint)
    throw_error(Code::kInvalidArgument,
                "'" + path +
                    "' is a TensorFlow checkpoint: it holds variables but no graph, so it is not a "
                    "module; load it into a built-in net with hub train, eval or export "
                    "--model_name NET --checkpoint_path " +
                    path + " (docs/training.md)");
  try {
    tf::SavedModelImportOptions so;
    so.tag_sets = options.tag_sets;
    switch (format) {
      case Format::kTfHubModule:
        return tf::import_tfhub_module(path, so);
      case Format::kSavedModel:
        return tf::import_saved_model(path, so);
      case Format::kTfjsGraphModel:
        return tf::import_tfjs(tfjs_json(path));
      case Format::kOnnx:
        return onnx_interop::import_onnx(path, onnx);
      case Format::kTfCheckpoint:
        break;
    }
  } catch (const Error& e) {
    throw e.with_context("importing '" + path + "' (" + fmt + ")");
  }
  HUB_UNREACHABLE("unhandled format");
}

ModuleSpec import_to_directory(const std::string& path, const std::string& output_dir, const ImportOptions& options,
                               ExistingTarget existing) {
  check_target(output_dir, existing);
  ModuleSpec spec = import_model(path, options);
  const TagSet tags = spec.has_tag_set({}) ? TagSet{} : spec.tag_sets().front();
  Module(spec, tags).export_to(output_dir, existing);
  return spec;
}

}  // namespace hub::interop
