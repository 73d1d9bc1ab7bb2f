#include "hub/core/fileio.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "hub/core/error.h"

namespace hub {

int open_for_reading(const std::string& path, struct stat* st) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    throw_error(err == ENOENT ? Code::kNotFound : Code::kIOError,
                "cannot open '" + path + "': " + std::strerror(err));
  }
  if (::fstat(fd, st) != 0) {
    int err = errno;
    ::close(fd);
    throw_error(Code::kIOError, "cannot stat '" + path + "': " + std::strerror(err));
  }
  if (S_ISDIR(st->st_mode)) {
    ::close(fd);
    throw_error(Code::kInvalidArgument, "'" + path + "' is a directory");
  }
  return fd;
}

std::string read_file_bytes(const std::string& path, int64_t max_bytes) {
  struct stat st {};
  int fd = open_for_reading(path, &st);
  if (st.st_size > max_bytes) {
    ::close(fd);
    throw_error(Code::kResourceExhausted, "'" + path + "': file of " + std::to_string(st.st_size) +
                                              " bytes exceeds the limit of " + std::to_string(max_bytes));
  }
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      throw_error(Code::kIOError, "cannot read '" + path + "': " + std::strerror(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  static std::atomic<unsigned> counter{0};
  std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throw_error(Code::kIOError, "cannot create '" + tmp + "': " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw_error(Code::kIOError, "cannot write '" + path + "': " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  int sync_rc = ::fsync(fd);
  int sync_err = errno;
  if (::close(fd) != 0 && sync_rc == 0) {
    sync_rc = -1;
    sync_err = errno;
  }
  if (sync_rc != 0) {
    int err = sync_err;
    ::unlink(tmp.c_str());
    throw_error(Code::kIOError, "cannot write '" + path + "': " + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw_error(Code::kIOError, "cannot rename into '" + path + "': " + std::strerror(err));
  }
}

StagingDir::StagingDir(const std::string& target) {
  namespace fs = std::filesystem;
  if (target.empty()) throw_error(Code::kInvalidArgument, "empty output path");
  struct stat st;
  if (::lstat(target.c_str(), &st) == 0)
    throw_error(Code::kAlreadyExists, "'" + target + "' already exists; refusing to overwrite it");
  fs::path t = fs::path(target).lexically_normal();
  if (t.filename().empty()) t = t.parent_path();
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
  target_ = t.string();
  tmp_ = tmp.string();
}

StagingDir::~StagingDir() {
  if (committed_) return;
  std::error_code ec;
  std::filesystem::remove_all(tmp_, ec);
}

void StagingDir::commit() {
  if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE) != 0) {
    const int err = errno;
    if (err == EEXIST || err == ENOTEMPTY)
      throw_error(Code::kAlreadyExists, "'" + target_ + "' already exists; refusing to overwrite it");
    throw_error(Code::kIOError, "cannot rename '" + tmp_ + "' to '" + target_ + "': " + std::strerror(err));
  }
  committed_ = true;
}

}  // namespace hub
