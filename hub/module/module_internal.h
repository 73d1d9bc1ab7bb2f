// Private to hub/module: what the module's source files share (the parts of
// a ModuleSpec, file names, message helpers). Not installed.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hub/core/error.h"
#include "hub/module/module.h"

namespace hub {

struct ModuleTagSet {
  TagSet tags;
  Graph graph;
  std::map<std::string, SignatureInfo> signatures;
};

struct ModuleSpec::Impl {
  std::vector<ModuleTagSet> tag_sets;
  std::vector<VariableInfo> variables;
  TensorMap weights;
  std::map<std::string, AttachedValue> attached;
  ModuleMetadata metadata;
  std::string source;
  std::string assets_dir;
  std::map<std::string, std::string> asset_files;
  std::optional<QuantizationInfo> quantization;
};

namespace module_internal {

inline constexpr const char* kModuleFile = "module.pb";
inline constexpr const char* kVariablesFile = "variables.safetensors";
inline constexpr const char* kAssetsDir = "assets";

[[noreturn]] inline void corrupt(const std::string& where, const std::string& what) {
  throw_error(Code::kCorruption, where + ": " + what);
}

// "a, b, c", or "none".
inline std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

template <class M>
std::vector<std::string> keys(const M& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

}  // namespace module_internal
}  // namespace hub
