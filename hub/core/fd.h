// Fd: the one owner of a POSIX file descriptor, and the write/sync helpers
// every writer of files uses (no hand-written write loops or close calls).
//
// An Fd closes its descriptor when destroyed, so every early return and
// exception path releases it. Errors that matter for durability (a failed
// write, fsync or close of a file being written) are reported by close() and
// the helpers as hub::Error(kIOError) naming the file; the destructor closes
// silently, for the paths that are already failing.
//
// Thread safety: an Fd is a value owned by one thread; the helpers are
// thread-safe on distinct descriptors.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace hub {

class Fd {
 public:
  Fd() = default;
  // Takes ownership of `fd` (-1: empty).
  explicit Fd(int fd) noexcept : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int release() noexcept {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes the current descriptor (errors ignored) and owns `fd` instead.
  void reset(int fd = -1) noexcept;
  // Closes now; throws IOError naming `what` when close(2) reports an error
  // (on NFS and some file systems, a deferred write error shows up here).
  void close(const std::string& what);

 private:
  int fd_ = -1;
};

// open(2) with O_CLOEXEC added. Throws NotFound (ENOENT), AlreadyExists
// (EEXIST), PermissionDenied (EACCES/EPERM), IOError otherwise, naming `path`.
Fd open_fd(const std::filesystem::path& path, int flags, mode_t mode = 0);
// openat(2) relative to `dir_fd` with O_CLOEXEC added; errors as open_fd,
// naming `display` (the path as the user knows it).
Fd open_fd_at(int dir_fd, const std::string& name, int flags, mode_t mode, const std::string& display);

// Writes all of `data` (retrying short writes and EINTR). Throws IOError
// naming `what`.
void write_all(int fd, std::string_view data, const std::string& what);
// pwrite(2) of all of `data` at `offset`. Throws IOError naming `what`.
void pwrite_all(int fd, const void* data, size_t size, int64_t offset, const std::string& what);
// pread(2) of up to `size` bytes at `offset` (retrying short reads and
// EINTR); returns the bytes read, fewer than `size` only at the end of the
// file. Thread-safe on one descriptor. Throws IOError naming `what`.
size_t pread_full(int fd, void* data, size_t size, int64_t offset, const std::string& what);
// fsync(2); throws IOError naming `what`.
void fsync_fd(int fd, const std::string& what);
// Makes a rename or create inside `dir` durable: fsync(2) of the directory.
// Throws IOError naming the directory.
void fsync_dir(const std::filesystem::path& dir);

// Creates `path` (O_EXCL, `mode`), writes `data`, fsyncs and closes it.
// Throws as open_fd when it cannot be created (AlreadyExists when it exists),
// IOError naming the path for the rest. On failure the partial file is removed.
void write_new_file_synced(const std::filesystem::path& path, std::string_view data, mode_t mode = 0644);

}  // namespace hub
