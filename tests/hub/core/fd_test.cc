// Fd and the write/sync helpers of hub/core/fd.h.
#include "hub/core/fd.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "hub/core/fileio.h"
#include "testutil.h"

namespace hub {
namespace {

using testing::expect_error;
using testing::TempDir;

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST_CASE("Fd: owns one descriptor, closes it once, moves ownership") {
  TempDir tmp("fd");
  int raw = -1;
  {
    Fd fd = open_fd(tmp.path / "f", O_WRONLY | O_CREAT, 0600);
    raw = fd.get();
    CHECK(is_open(raw));
    CHECK((::fcntl(raw, F_GETFD) & FD_CLOEXEC) != 0);
    Fd moved = std::move(fd);
    CHECK(!fd);
    CHECK(moved.get() == raw);
    Fd other;
    other = std::move(moved);
    CHECK(is_open(raw));
  }
  CHECK(!is_open(raw));
  Fd fd = open_fd(tmp.path / "f", O_RDONLY);
  raw = fd.get();
  fd.close("f");
  CHECK(!fd);
  CHECK(!is_open(raw));
  fd.close("f");  // closing an empty Fd is a no-op
}

TEST_CASE("open_fd: errors carry the code and the path") {
  TempDir tmp("fd");
  expect_error(
      Code::kNotFound, [&] { open_fd(tmp.path / "nope", O_RDONLY); }, "nope");
  write_file_atomic(tmp / "x", "1");
  expect_error(
      Code::kAlreadyExists, [&] { open_fd(tmp.path / "x", O_WRONLY | O_CREAT | O_EXCL, 0600); }, "x");
  expect_error(
      Code::kNotFound, [&] { fsync_dir(tmp.path / "nope"); }, "nope");
  CHECK_NOTHROW(fsync_dir(tmp.path));
}

TEST_CASE("write_all: every byte arrives through short writes") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  Fd r(p[0]), w(p[1]);
  std::string data(1 << 20, '\0');  // far more than a pipe buffer: many short writes
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + 3);
  std::string got;
  std::thread reader([&] {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(r.get(), buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  });
  write_all(w.get(), data, "pipe");
  w.close("pipe");
  reader.join();
  CHECK(got == data);
  // A full disk (ENOSPC) becomes IOError naming the file.
  Fd full = open_fd("/dev/full", O_WRONLY);
  expect_error(
      Code::kIOError, [&] { write_all(full.get(), "x", "the disk"); }, "cannot write the disk");
}

TEST_CASE("write_new_file_synced and pwrite_all") {
  TempDir tmp("fd");
  write_new_file_synced(tmp.path / "a", "hello");
  CHECK(read_file_bytes(tmp / "a") == "hello");
  expect_error(
      Code::kAlreadyExists, [&] { write_new_file_synced(tmp.path / "a", "again"); }, "a");
  CHECK(read_file_bytes(tmp / "a") == "hello");
  Fd fd = open_fd(tmp.path / "b", O_RDWR | O_CREAT, 0644);
  pwrite_all(fd.get(), "world", 5, 3, "b");
  pwrite_all(fd.get(), "abc", 3, 0, "b");
  fd.close("b");
  CHECK(read_file_bytes(tmp / "b") == std::string("abcworld"));
}

}  // namespace
}  // namespace hub
