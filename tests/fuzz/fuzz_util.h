// Shared by the libFuzzer harnesses (tests/fuzz/run.sh builds and runs them).
//
// A harness feeds its input to one reader and accepts any hub::Error: a
// reader must refuse bad input with an error, never crash, hang, leak or use
// more memory than its limits allow (run.sh sets -rss_limit_mb).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace hub::fuzz {

inline std::string_view bytes(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

// A private directory for this process, created once (libFuzzer runs one
// harness per process) and removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/hub-fuzz-XXXXXX";
    if (!::mkdtemp(templ.data())) std::abort();
    static const std::string keep = templ;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(keep, ec);
    });
    return std::filesystem::path(templ);
  }();
  return dir;
}

// Splits an input made of several files: each but the last is a 4-byte
// little-endian length L then L bytes; the last is the rest. Empty when the
// lengths do not fit (the input is then skipped).
inline std::vector<std::string_view> split_parts(const uint8_t* data, size_t size, size_t parts) {
  std::vector<std::string_view> out;
  std::string_view rest = bytes(data, size);
  for (size_t i = 0; i + 1 < parts; ++i) {
    uint32_t n = 0;
    if (rest.size() < 4) return {};
    std::memcpy(&n, rest.data(), 4);
    if (n > rest.size() - 4) return {};
    out.push_back(rest.substr(4, n));
    rest.remove_prefix(4 + static_cast<size_t>(n));
  }
  out.push_back(rest);
  return out;
}

// Writes `data` to `path` (truncating); aborts on failure (not the input's fault).
inline void write_input(const std::filesystem::path& path, std::string_view data) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (!data.empty() && std::fwrite(data.data(), 1, data.size(), f) != data.size()) || std::fclose(f) != 0)
    std::abort();
}
inline void write_input(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  write_input(path, bytes(data, size));
}

}  // namespace hub::fuzz
