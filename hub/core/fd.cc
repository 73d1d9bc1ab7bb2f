#include "hub/core/fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hub/core/error.h"

namespace hub {
namespace {

Code open_error_code(int err) {
  switch (err) {
    case ENOENT:
      return Code::kNotFound;
    case EEXIST:
      return Code::kAlreadyExists;
    case EACCES:
    case EPERM:
      return Code::kPermissionDenied;
    default:
      return Code::kIOError;
  }
}

}  // namespace

void Fd::reset(int fd) noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

void Fd::close(const std::string& what) {
  int fd = release();
  if (fd >= 0 && ::close(fd) != 0 && errno != EINTR)
    throw_error(Code::kIOError, "cannot close " + what + ": " + std::strerror(errno));
}

Fd open_fd(const std::filesystem::path& path, int flags, mode_t mode) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) {
    int err = errno;
    throw_error(open_error_code(err), "cannot open " + path.string() + ": " + std::strerror(err));
  }
  return Fd(fd);
}

Fd open_fd_at(int dir_fd, const std::string& name, int flags, mode_t mode, const std::string& display) {
  int fd = ::openat(dir_fd, name.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) {
    int err = errno;
    throw_error(open_error_code(err), "cannot open " + display + ": " + std::strerror(err));
  }
  return Fd(fd);
}

void write_all(int fd, std::string_view data, const std::string& what) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_error(Code::kIOError, "cannot write " + what + ": " + std::strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void pwrite_all(int fd, const void* data, size_t size, int64_t offset, const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::pwrite(fd, p, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_error(Code::kIOError, "cannot write " + what + ": " + std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
}

size_t pread_full(int fd, void* data, size_t size, int64_t offset, const std::string& what) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, p + done, size - done, static_cast<off_t>(offset) + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_error(Code::kIOError, "cannot read " + what + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

void fsync_fd(int fd, const std::string& what) {
  if (::fsync(fd) != 0) throw_error(Code::kIOError, "cannot sync " + what + ": " + std::strerror(errno));
}

void fsync_dir(const std::filesystem::path& dir) {
  Fd fd = open_fd(dir, O_RDONLY | O_DIRECTORY);
  fsync_fd(fd.get(), "directory " + dir.string());
  fd.close("directory " + dir.string());
}

void write_new_file_synced(const std::filesystem::path& path, std::string_view data, mode_t mode) {
  Fd fd = open_fd(path, O_WRONLY | O_CREAT | O_EXCL, mode);
  try {
    write_all(fd.get(), data, path.string());
    fsync_fd(fd.get(), path.string());
    fd.close(path.string());
  } catch (...) {
    fd.reset();
    ::unlink(path.c_str());
    throw;
  }
}

}  // namespace hub
