#include "modules/train/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <vector>

#include "hub/core/error.h"
#include "hub/module/safetensors.h"

namespace fs = std::filesystem;

namespace hub::train {

namespace {
const char* kIndex = "checkpoint";

std::string file_name(int64_t step) { return "model.ckpt-" + std::to_string(step) + ".safetensors"; }

std::vector<std::string> indexed(const std::string& dir) {
  std::vector<std::string> out;
  std::ifstream in(fs::path(dir) / kIndex);
  std::string line;
  std::regex entry(R"re(^all_model_checkpoint_paths:\s*"([^"]+)"\s*$)re");
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_match(line, m, entry)) out.push_back(m[1]);
  return out;
}
}  // namespace

int64_t checkpoint_step(const std::string& path) {
  std::smatch m;
  std::string name = fs::path(path).filename().string();
  if (std::regex_match(name, m, std::regex(R"(model\.ckpt-(\d+)\.safetensors)"))) return std::stoll(m[1]);
  return -1;
}

void save_checkpoint(const std::string& train_dir, int64_t step, const std::map<std::string, Tensor>& tensors,
                     int max_to_keep) {
  std::error_code ec;
  fs::create_directories(train_dir, ec);
  if (ec) throw_error(Code::kIOError, "cannot create --train_dir " + train_dir + ": " + ec.message());
  std::string name = file_name(step);
  write_safetensors((fs::path(train_dir) / name).string(), tensors, {{"global_step", std::to_string(step)}});
  std::vector<std::string> all = indexed(train_dir);
  all.erase(std::remove(all.begin(), all.end(), name), all.end());
  all.push_back(name);
  while (static_cast<int>(all.size()) > std::max(1, max_to_keep)) {
    fs::remove(fs::path(train_dir) / all.front(), ec);
    all.erase(all.begin());
  }
  std::string text = "model_checkpoint_path: \"" + name + "\"\n";
  for (const std::string& a : all) text += "all_model_checkpoint_paths: \"" + a + "\"\n";
  fs::path tmp = fs::path(train_dir) / (std::string(kIndex) + ".tmp" + std::to_string(::getpid()));
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out) {
      fs::remove(tmp, ec);
      throw_error(Code::kIOError, "cannot write checkpoint index in " + train_dir);
    }
  }
  fs::rename(tmp, fs::path(train_dir) / kIndex, ec);
  if (ec) throw_error(Code::kIOError, "cannot update checkpoint index in " + train_dir + ": " + ec.message());
}

std::optional<std::string> latest_checkpoint(const std::string& dir) {
  std::vector<std::string> all = indexed(dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    fs::path p = fs::path(dir) / *it;
    if (fs::exists(p)) return p.string();
  }
  return std::nullopt;
}

std::string resolve_checkpoint(const std::string& path_or_dir) {
  std::error_code ec;
  if (fs::is_directory(path_or_dir, ec)) {
    auto latest = latest_checkpoint(path_or_dir);
    if (!latest) throw_error(Code::kNotFound, "no checkpoint in " + path_or_dir + " (no 'checkpoint' index)");
    return *latest;
  }
  if (!fs::exists(path_or_dir, ec)) throw_error(Code::kNotFound, "checkpoint " + path_or_dir + " does not exist");
  return path_or_dir;
}

std::map<std::string, Tensor> load_checkpoint(const std::string& path) {
  return map_safetensors(path).tensors;
}

}  // namespace hub::train
