// Whole-file reads and writes with hub::Error reporting.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "hub/core/fd.h"

namespace hub {

// Opens `path` read-only (close-on-exec) and fstat()s it into *st. Throws NotFound when `path` does not exist,
// InvalidArgument when it is a directory, IOError otherwise, naming the path.
Fd open_for_reading(const std::string& path, struct stat* st);

// Reads the whole file. Throws NotFound when `path` does not exist,
// InvalidArgument when it is a directory, IOError otherwise, naming the path.
// Files larger than `max_bytes` are refused with ResourceExhausted before reading.
std::string read_file_bytes(const std::string& path, int64_t max_bytes = int64_t{1} << 30);

// Writes `bytes` to a temporary sibling of `path`, flushes it and renames it
// over `path`, so readers never see a partial file and a failed write leaves
// nothing behind. Throws IOError naming the path.
void write_file_atomic(const std::string& path, std::string_view bytes);

// A directory written under a temporary sibling name (".<name>.tmp-<pid>-<n>"
// beside `target`) and renamed into place by commit(), so `target` appears
// complete or not at all. The constructor refuses an existing `target`
// (AlreadyExists) and creates the parent folders and the temporary directory
// (IOError naming the path). commit() renames without replacing anything
// that appeared meanwhile (AlreadyExists). Unless committed, the destructor
// removes the temporary directory and everything in it.
class StagingDir {
 public:
  explicit StagingDir(const std::string& target);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  // The temporary directory to write into.
  const std::string& path() const { return tmp_; }
  void commit();

 private:
  std::string target_, tmp_;
  bool committed_ = false;
};

}  // namespace hub
