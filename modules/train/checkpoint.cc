#include "modules/train/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "hub/core/error.h"
#include "hub/core/logging.h"
#include "hub/graph/optimizer.h"
#include "hub/interop/tf/bundle.h"
#include "hub/interop/tf/checkpoint_state.h"
#include "hub/interop/tf/table.h"
#include "hub/module/safetensors.h"

namespace fs = std::filesystem;

namespace hub::train {

namespace {

const std::string kSafetensorsSuffix = ".safetensors";

bool exists_as_checkpoint(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) || tf::is_bundle_prefix(path);
}

void remove_checkpoint(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec))
    fs::remove(path, ec);
  else
    tf::remove_bundle(path);
}

// The path a `checkpoint` file in dir names: relative to dir, or absolute;
// an absolute path that no longer exists (the folder was moved) falls back
// to its file name in dir.
std::string in_dir(const std::string& dir, const std::string& named) {
  fs::path p(named);
  if (p.is_relative()) return (fs::path(dir) / p).string();
  if (!exists_as_checkpoint(named) && exists_as_checkpoint((fs::path(dir) / p.filename()).string()))
    return (fs::path(dir) / p.filename()).string();
  return named;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The prefix X when `path` is one file of TensorFlow checkpoint X: X.index,
// X.meta or X.data-NNNNN-of-NNNNN. (Parsed by hand: GCC 12 warns inside
// <regex> under the sanitizer build's -Werror.)
std::optional<std::string> bundle_prefix_of(const std::string& path) {
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || dot == 0) return std::nullopt;
  const std::string_view ext = std::string_view(path).substr(dot + 1);
  const bool data = ext.size() == 19 && ext.substr(0, 5) == "data-" && all_digits(ext.substr(5, 5)) &&
                    ext.substr(10, 4) == "-of-" && all_digits(ext.substr(14, 5));
  if (ext == "index" || ext == "meta" || data) return path.substr(0, dot);
  return std::nullopt;
}

// Whether the file ends with the LevelDB table magic: a TensorFlow V1
// checkpoint (a table of saved slices) or some other table.
bool ends_with_table_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(-8, std::ios::end);
  unsigned char b[8] = {};
  if (!in.read(reinterpret_cast<char*>(b), 8)) return false;
  uint64_t magic = 0;
  for (int i = 7; i >= 0; --i) magic = (magic << 8) | b[i];
  return magic == tf::kTableMagic;
}

}  // namespace

CheckpointFormat parse_checkpoint_format(const std::string& name) {
  if (name == "safetensors") return CheckpointFormat::kSafetensors;
  if (name == "tf") return CheckpointFormat::kTF;
  throw_error(Code::kInvalidArgument, "--checkpoint_format '" + name + "' is not safetensors or tf");
}

int64_t checkpoint_step(const std::string& path) {
  // NAME-STEP or NAME-STEP.safetensors, STEP of 1 to 18 digits.
  std::string name = fs::path(path).filename().string();
  const std::string& suffix = kSafetensorsSuffix;
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  const size_t dash = name.rfind('-');
  if (dash == std::string::npos) return -1;
  const std::string digits = name.substr(dash + 1);
  if (!all_digits(digits) || digits.size() > 18) return -1;
  return std::stoll(digits);
}

void save_checkpoint(const std::string& train_dir, int64_t step, const std::map<std::string, Tensor>& tensors,
                     CheckpointFormat format, int max_to_keep) {
  std::error_code ec;
  fs::create_directories(train_dir, ec);
  if (ec) throw_error(Code::kIOError, "cannot create --train_dir " + train_dir + ": " + ec.message());
  // Read first: a damaged state file fails the save before anything is written.
  std::optional<tf::CheckpointState> old = tf::read_checkpoint_state(train_dir);
  std::string name = "model.ckpt-" + std::to_string(step);
  if (format == CheckpointFormat::kSafetensors) {
    name += kSafetensorsSuffix;
    write_safetensors((fs::path(train_dir) / name).string(), tensors, {{"global_step", std::to_string(step)}});
  } else {
    std::map<std::string, Tensor> with_step = tensors;
    with_step["global_step"] = Tensor::scalar<int64_t>(step);
    tf::write_bundle((fs::path(train_dir) / name).string(), with_step);
  }
  tf::CheckpointState state;
  if (old) state.all_model_checkpoint_paths = old->all_model_checkpoint_paths;
  auto& all = state.all_model_checkpoint_paths;
  all.erase(std::remove(all.begin(), all.end(), name), all.end());
  all.push_back(name);
  std::vector<std::string> dropped;
  while (static_cast<int>(all.size()) > std::max(1, max_to_keep)) {
    dropped.push_back(all.front());
    all.erase(all.begin());
  }
  state.model_checkpoint_path = name;
  tf::write_checkpoint_state(train_dir, state);
  for (const std::string& d : dropped) remove_checkpoint(in_dir(train_dir, d));
}

std::optional<std::string> latest_checkpoint(const std::string& dir) {
  std::optional<tf::CheckpointState> state = tf::read_checkpoint_state(dir);
  if (!state) return std::nullopt;
  std::string named = state->model_checkpoint_path;
  if (named.empty() && !state->all_model_checkpoint_paths.empty()) named = state->all_model_checkpoint_paths.back();
  if (named.empty()) return std::nullopt;
  std::string path = in_dir(dir, named);
  if (!exists_as_checkpoint(path)) {
    HUB_LOG(Warning) << "the 'checkpoint' file in " << dir << " names " << named << ", which does not exist";
    return std::nullopt;
  }
  return path;
}

std::string resolve_checkpoint(const std::string& path_or_dir) {
  std::error_code ec;
  if (fs::is_directory(path_or_dir, ec)) {
    if (auto latest = latest_checkpoint(path_or_dir)) return *latest;
    auto state = tf::read_checkpoint_state(path_or_dir);
    throw_error(Code::kNotFound,
                "no checkpoint in " + path_or_dir +
                    (state ? " (its 'checkpoint' file names " + state->model_checkpoint_path + ", which does not exist)"
                           : " (no 'checkpoint' file)"));
  }
  if (auto prefix = bundle_prefix_of(path_or_dir); prefix && tf::is_bundle_prefix(*prefix))
    throw_error(Code::kInvalidArgument, "checkpoint " + path_or_dir + " is one file of the TensorFlow checkpoint " +
                                            *prefix + "; pass its prefix " + *prefix);
  if (exists_as_checkpoint(path_or_dir)) return path_or_dir;
  throw_error(Code::kNotFound, "checkpoint " + path_or_dir + " does not exist (no such file, folder, or " +
                                   "TensorFlow checkpoint " + path_or_dir + ".index)");
}

// --------------------------------------------------------------- reading

struct CheckpointReader::Impl {
  std::optional<SafetensorsContents> safetensors;
  std::optional<tf::BundleReader> bundle;
};

CheckpointReader::CheckpointReader(const std::string& path) : path_(path), impl_(std::make_unique<Impl>()) {
  if (tf::is_bundle_prefix(path)) {
    impl_->bundle.emplace(path);
    return;
  }
  std::error_code ec;
  if (fs::is_regular_file(path, ec) && ends_with_table_magic(path))
    throw_error(Code::kUnimplemented, "checkpoint " + path +
                                          " is a TensorFlow V1 checkpoint (a single table file); hub reads V2 "
                                          "checkpoints (" +
                                          path +
                                          ".index + .data-* files). TensorFlow converts "
                                          "one by restoring it and saving it again with tf.train.Saver");
  impl_->safetensors = map_safetensors(path);
}

CheckpointReader::~CheckpointReader() = default;
CheckpointReader::CheckpointReader(CheckpointReader&&) noexcept = default;

std::vector<std::string> CheckpointReader::names() const {
  if (impl_->bundle) return impl_->bundle->names();
  std::vector<std::string> out;
  for (const auto& [name, t] : impl_->safetensors->tensors) out.push_back(name);
  return out;
}

bool CheckpointReader::contains(const std::string& name) const {
  return impl_->bundle ? impl_->bundle->contains(name) : impl_->safetensors->tensors.count(name) != 0;
}

TensorSpec CheckpointReader::spec(const std::string& name) const {
  if (impl_->bundle) return impl_->bundle->spec(name);
  const Tensor& t = read(name);
  return {t.dtype(), t.shape()};
}

Tensor CheckpointReader::read(const std::string& name) const {
  if (impl_->bundle) return impl_->bundle->read(name);
  auto it = impl_->safetensors->tensors.find(name);
  if (it == impl_->safetensors->tensors.end())
    throw_error(Code::kNotFound, "tensor '" + name + "' is not in checkpoint " + path_);
  return it->second;
}

std::map<std::string, Tensor> load_checkpoint(const std::string& path) {
  CheckpointReader reader(path);
  std::map<std::string, Tensor> out;
  for (const std::string& name : reader.names()) out[name] = reader.read(name);
  return out;
}

// ------------------------------------------------------------- restoring

std::vector<std::string> split_scopes(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = std::min(list.find(',', start), list.size());
    std::string item = list.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

bool in_scopes(const std::string& name, const std::vector<std::string>& scopes) {
  for (const std::string& s : scopes)
    if (name.rfind(s, 0) == 0) return true;
  return false;
}

std::map<std::string, Tensor> read_variables(const CheckpointReader& checkpoint,
                                             const std::map<std::string, TensorSpec>& variables,
                                             const RestoreOptions& o) {
  std::map<std::string, Tensor> out;
  const std::string source = o.what + " " + checkpoint.path();
  for (const auto& [name, want] : variables) {
    if (in_scopes(name, o.exclude_scopes)) continue;
    std::string key = name;
    if (o.moving_averages && checkpoint.contains(ExponentialMovingAverage::average_name(name)))
      key = ExponentialMovingAverage::average_name(name);
    if (!checkpoint.contains(key)) {
      if (o.ignore_missing) {
        HUB_LOG(Warning) << "variable " << name << " is missing from " << source << "; keeping its initial value";
        continue;
      }
      throw_error(Code::kNotFound, "variable '" + name + "' is missing from " + source +
                                       " (use --checkpoint_exclude_scopes or --ignore_missing_vars)");
    }
    TensorSpec got = checkpoint.spec(key);
    if (got.dtype != want.dtype || got.shape != want.shape)
      throw_error(Code::kInvalidArgument, source + " has " + got.to_string() + " for '" + key +
                                              "', the graph expects " + want.to_string() + " for '" + name +
                                              "' (exclude it with --checkpoint_exclude_scopes to train it anew)");
    out[name] = checkpoint.read(key);
  }
  return out;
}

}  // namespace hub::train
