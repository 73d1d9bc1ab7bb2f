// Test fixtures with no test-framework dependency (benchmarks use them too):
// temporary directories, file reading, tar archives built entry by entry.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace hub::testing {

// A fresh directory `<temp dir>/<prefix>_XXXXXX` (mkdtemp), readable by
// other users (a web server the test starts, e.g. nginx's worker), removed
// with everything in it on destruction.
struct TempDir {
  explicit TempDir(const std::string& prefix = "hub_test");  // throws std::runtime_error
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // path / name as a string.
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  std::filesystem::path path;
};

// The bytes of a file ("" if it cannot be read).
std::string read_file(const std::filesystem::path& path);

// One entry of a tar archive built by make_tar: any type, any name (nothing
// is sanitized, so tests can build hostile archives).
struct TarEntry {
  enum Type { kFile, kDir, kSymlink, kHardlink, kCharDevice, kFifo, kSocket };
  TarEntry(std::string p, Type t = kFile, std::string d = "", std::string tgt = "")
      : path(std::move(p)), type(t), data(std::move(d)), target(std::move(tgt)) {}
  std::string path;
  Type type = kFile;
  std::string data;            // file content
  std::string target;          // symlink / hard link target
  int64_t declared_size = -1;  // header size when >= 0 (data written may differ)
};
// tar (pax) or tar.gz bytes. gzip_level applies when gzip.
std::string make_tar(const std::vector<TarEntry>& entries, bool gzip = true, int gzip_level = 1);
// The files and folders under `dir` as entries (paths relative to it).
std::vector<TarEntry> dir_entries(const std::filesystem::path& dir);

}  // namespace hub::testing
