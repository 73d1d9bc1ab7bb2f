// On-disk cache of bottleneck vectors (the feature-vector module's output for
// one image), one small binary file per image and module:
//
//   <bottleneck_dir>/<class dir>/<image file>_<module tag>.bottleneck
//
// where the module tag is the module handle with "://", "/", ":" and "\"
// turned into "~" (retrain.py's rule; long handles are shortened with a hash).
// File layout (little-endian):
//   8 bytes  magic "HUBBOTL1"
//   u32      module fingerprint (CRC-32C of the module's identity string)
//   u32      dimension D
//   u32      CRC-32C of the D float32 values
//   D * 4    float32 values
// A file that is short, has another magic, fingerprint or dimension, or fails
// its CRC is treated as missing (and rewritten). Writes go to a temporary
// file renamed into place, so readers never see a partial vector.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hub::retrain {

std::string module_tag(const std::string& module_handle);

class BottleneckCache {
 public:
  // fingerprint: anything that changes when the module's weights change
  // (e.g. the module's content digest).
  BottleneckCache(std::filesystem::path dir, const std::string& module_handle, const std::string& fingerprint);
  std::filesystem::path path(const std::string& class_dir, const std::string& file) const;
  // The cached vector, or nullopt if absent or damaged.
  std::optional<std::vector<float>> load(const std::string& class_dir, const std::string& file,
                                         size_t expected_dim) const;
  void store(const std::string& class_dir, const std::string& file, const std::vector<float>& values) const;

 private:
  std::filesystem::path dir_;
  std::string tag_;
  uint32_t fingerprint_;
};

}  // namespace hub::retrain
