#include "hub/core/fileio.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "hub/core/error.h"
#include "hub/core/fd.h"

namespace hub {

Fd open_for_reading(const std::string& path, struct stat* st) {
  Fd fd = open_fd(path, O_RDONLY);
  if (::fstat(fd.get(), st) != 0) throw_error(Code::kIOError, "cannot stat '" + path + "': " + std::strerror(errno));
  if (S_ISDIR(st->st_mode)) throw_error(Code::kInvalidArgument, "'" + path + "' is a directory");
  return fd;
}

std::string read_file_bytes(const std::string& path, int64_t max_bytes) {
  struct stat st {};
  Fd fd = open_for_reading(path, &st);
  if (st.st_size > max_bytes) {
    throw_error(Code::kResourceExhausted, "'" + path + "': file of " + std::to_string(st.st_size) +
                                              " bytes exceeds the limit of " + std::to_string(max_bytes));
  }
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_error(Code::kIOError, "cannot read '" + path + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    if (static_cast<int64_t>(out.size()) + n > max_bytes)  // grew while we read
      throw_error(Code::kResourceExhausted,
                  "'" + path + "': file exceeds the limit of " + std::to_string(max_bytes) + " bytes");
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  static std::atomic<unsigned> counter{0};
  std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  try {
    write_new_file_synced(tmp, bytes);
  } catch (const Error& e) {
    throw Error(Code::kIOError, e.message());  // the contract: any failure to write is IOError
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw_error(Code::kIOError, "cannot rename into '" + path + "': " + std::strerror(err));
  }
}

namespace {

bool is_empty_dir(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  std::error_code ec;
  return std::filesystem::is_empty(path, ec) && !ec;
}

// `target` normalised, without a trailing slash; InvalidArgument for paths
// that name no new folder.
std::filesystem::path normal_target(const std::string& target) {
  if (target.empty()) throw_error(Code::kInvalidArgument, "empty output path");
  std::filesystem::path t = std::filesystem::path(target).lexically_normal();
  if (t.filename().empty()) t = t.parent_path();
  if (t.filename().empty() || t.filename() == "." || t.filename() == "..")
    throw_error(Code::kInvalidArgument, "'" + target + "' cannot be replaced: name a new folder");
  return t;
}

[[noreturn]] void refuse(const std::string& target, ExistingTarget existing) {
  throw_error(Code::kAlreadyExists, "'" + target +
                                        (existing == ExistingTarget::kReplaceEmptyDir
                                             ? "' already exists and is not an empty folder; refusing to replace it"
                                             : "' already exists; refusing to overwrite it"));
}

}  // namespace

void check_target(const std::string& target, ExistingTarget existing) {
  const std::string t = normal_target(target).string();
  struct stat st;
  if (::lstat(t.c_str(), &st) == 0 && existing != ExistingTarget::kReplace &&
      !(existing == ExistingTarget::kReplaceEmptyDir && is_empty_dir(t)))
    refuse(t, existing);
}

StagingDir::StagingDir(const std::string& target, ExistingTarget existing) : existing_(existing) {
  namespace fs = std::filesystem;
  check_target(target, existing);
  const fs::path t = normal_target(target);
  target_ = t.string();
  const fs::path parent = t.has_parent_path() ? t.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw_error(Code::kIOError, "cannot create '" + parent.string() + "': " + ec.message());
  static std::atomic<unsigned> counter{0};
  std::string name(1, '.');
  name += t.filename().string();
  name += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const fs::path tmp = parent / name;
  if (!fs::create_directory(tmp, ec) || ec)
    throw_error(Code::kIOError, "cannot create '" + tmp.string() + "': " + ec.message());
  tmp_ = tmp.string();
}

StagingDir::~StagingDir() {
  if (committed_) return;
  std::error_code ec;
  std::filesystem::remove_all(tmp_, ec);
}

void StagingDir::commit() {
  // rename(2) replaces exactly an empty folder; RENAME_NOREPLACE nothing;
  // RENAME_EXCHANGE swaps whatever is there with the new folder.
  int rc = 0;
  switch (existing_) {
    case ExistingTarget::kRefuse:
      rc = ::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE);
      break;
    case ExistingTarget::kReplaceEmptyDir:
      rc = ::rename(tmp_.c_str(), target_.c_str());
      break;
    case ExistingTarget::kReplace:
      rc = ::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE);
      if (rc != 0 && errno == ENOENT)
        rc = ::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE);
      break;
  }
  if (rc != 0) {
    const int err = errno;
    if (err == EEXIST || err == ENOTEMPTY || err == ENOTDIR || err == EISDIR) refuse(target_, existing_);
    throw_error(Code::kIOError, "cannot rename '" + tmp_ + "' to '" + target_ + "': " + std::strerror(err));
  }
  committed_ = true;
  // After an exchange the temporary name holds what was at the target.
  std::error_code ec;
  std::filesystem::remove_all(tmp_, ec);
  if (ec)
    throw_error(Code::kIOError,
                "'" + target_ + "' was replaced, but removing the old copy '" + tmp_ + "' failed: " + ec.message());
}

}  // namespace hub
