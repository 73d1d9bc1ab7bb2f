// Whole-file reads and writes with hub::Error reporting.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "hub/core/fd.h"

namespace hub {

// Opens `path` read-only (close-on-exec) and fstat()s it into *st. Throws NotFound when `path` does
// not exist, InvalidArgument when it is a directory, IOError otherwise, naming the path.
Fd open_for_reading(const std::string& path, struct stat* st);

// Reads the whole file. Throws NotFound when `path` does not exist,
// InvalidArgument when it is a directory, IOError otherwise, naming the path.
// Files larger than `max_bytes` are refused with ResourceExhausted before reading.
std::string read_file_bytes(const std::string& path, int64_t max_bytes = int64_t{1} << 30);

// Writes `bytes` to a temporary sibling of `path`, flushes it and renames it
// over `path`, so readers never see a partial file and a failed write leaves
// nothing behind. Throws IOError naming the path.
void write_file_atomic(const std::string& path, std::string_view bytes);

// What a StagingDir may do with something already at its target.
enum class ExistingTarget {
  kRefuse,           // anything there is AlreadyExists
  kReplaceEmptyDir,  // an empty folder is replaced; anything else is AlreadyExists
  kReplace,          // whatever is there (a link itself, never followed) is replaced
};

// Throws what StagingDir(target, existing) would for what is at `target`
// now (AlreadyExists naming it; InvalidArgument for ".", "..", "/"), so a
// long computation can fail before it starts.
void check_target(const std::string& target, ExistingTarget existing);

// A directory written under a temporary sibling name (".<name>.tmp-<pid>-<n>"
// beside `target`) and renamed into place by commit(), so `target` appears
// complete or not at all. The constructor refuses an existing `target` as
// `existing` says (AlreadyExists naming it) and creates the parent folders
// and the temporary directory (IOError naming the path). commit() renames
// atomically and never replaces more than `existing` allows, even when
// something appeared meanwhile (AlreadyExists); with kReplace the old
// target is swapped out in one rename and then removed. Unless committed,
// the destructor removes the temporary directory and everything in it.
class StagingDir {
 public:
  explicit StagingDir(const std::string& target, ExistingTarget existing = ExistingTarget::kRefuse);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  // The temporary directory to write into.
  const std::string& path() const { return tmp_; }
  void commit();

 private:
  std::string target_, tmp_;
  ExistingTarget existing_;
  bool committed_ = false;
};

}  // namespace hub
