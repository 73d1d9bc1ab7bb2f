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
#include <filesystem>
#include <string>
#include <string_view>

namespace hub::fuzz {

inline std::string_view bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

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

// Writes `data` to `path` (truncating); aborts on failure (not the input's fault).
inline void write_input(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) std::abort();
}

}  // namespace hub::fuzz
