#include "retrain/bottleneck_cache.h"

#include <unistd.h>

#include <cstring>
#include <fstream>

#include "hub/core/crc32c.h"
#include "hub/core/digest.h"
#include "hub/core/error.h"

namespace fs = std::filesystem;

namespace hub::retrain {

namespace {
constexpr char kMagic[8] = {'H', 'U', 'B', 'B', 'O', 'T', 'L', '1'};
constexpr size_t kHeader = 8 + 4 + 4 + 4;

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
}  // namespace

std::string module_tag(const std::string& handle) {
  std::string t;
  for (size_t i = 0; i < handle.size(); ++i) {
    if (handle.compare(i, 3, "://") == 0) {
      t += '~';
      i += 2;
    } else if (handle[i] == '/' || handle[i] == ':' || handle[i] == '\\') {
      t += '~';
    } else {
      t += handle[i];
    }
  }
  if (t.size() > 96) t = t.substr(t.size() - 64) + "~" + sha1_hex(handle).substr(0, 16);
  return t;
}

BottleneckCache::BottleneckCache(fs::path dir, const std::string& module_handle, const std::string& fingerprint)
    : dir_(std::move(dir)), tag_(module_tag(module_handle)), fingerprint_(crc32c::value(fingerprint)) {}

fs::path BottleneckCache::path(const std::string& class_dir, const std::string& file) const {
  return dir_ / class_dir / (file + "_" + tag_ + ".bottleneck");
}

std::optional<std::vector<float>> BottleneckCache::load(const std::string& class_dir, const std::string& file,
                                                        size_t expected_dim) const {
  std::ifstream in(path(class_dir, file), std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() != kHeader + expected_dim * 4 || std::memcmp(bytes.data(), kMagic, 8) != 0) return std::nullopt;
  if (get_u32(bytes.data() + 8) != fingerprint_ || get_u32(bytes.data() + 12) != expected_dim) return std::nullopt;
  const char* data = bytes.data() + kHeader;
  if (crc32c::value(data, expected_dim * 4) != get_u32(bytes.data() + 16)) return std::nullopt;
  std::vector<float> v(expected_dim);
  std::memcpy(v.data(), data, expected_dim * 4);
  return v;
}

void BottleneckCache::store(const std::string& class_dir, const std::string& file,
                            const std::vector<float>& values) const {
  fs::path target = path(class_dir, file);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) throw_error(Code::kIOError, "cannot create " + target.parent_path().string() + ": " + ec.message());
  std::string bytes(kMagic, 8);
  put_u32(bytes, fingerprint_);
  put_u32(bytes, static_cast<uint32_t>(values.size()));
  put_u32(bytes, crc32c::value(values.data(), values.size() * 4));
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  fs::path tmp = target;
  tmp += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      fs::remove(tmp, ec);
      throw_error(Code::kIOError, "cannot write bottleneck " + tmp.string());
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw_error(Code::kIOError, "cannot rename bottleneck into " + target.string());
  }
}

}  // namespace hub::retrain
