// hub/core/fileio StagingDir: a folder written under a temporary sibling
// appears complete at its target on commit(), or not at all.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "hub/core/fileio.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using hub::testing::expect_error;
using hub::testing::TempDir;

namespace {
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_CASE("StagingDir: commit renames into place, anything else leaves nothing") {
  TempDir dir("staging");
  {
    StagingDir s(dir / "a/b/out");  // parents are created
    CHECK(fs::is_directory(s.path()));
    CHECK(fs::path(s.path()).parent_path() == dir.path / "a/b");
    CHECK(fs::path(s.path()).filename().string().rfind(".out.tmp-", 0) == 0);
    std::ofstream(fs::path(s.path()) / "f.txt") << "x";
    CHECK_FALSE(fs::exists(dir.path / "a/b/out"));
    s.commit();
  }
  CHECK(entries(dir.path / "a/b") == std::vector<std::string>{"out"});
  CHECK(entries(dir.path / "a/b/out") == std::vector<std::string>{"f.txt"});
  {
    StagingDir s(dir / "abandoned");
    std::ofstream(fs::path(s.path()) / "f.txt") << "x";
  }
  CHECK(entries(dir.path) == std::vector<std::string>{"a"});
  std::string message(1, '\'');
  message += dir / "a";
  message += "' already exists";
  expect_error(
      Code::kAlreadyExists, [&] { StagingDir s(dir / "a"); }, message);
  {
    // The target appears while the folder is written: never replaced.
    StagingDir s(dir / "race");
    fs::create_directory(dir.path / "race");
    std::ofstream(dir.path / "race" / "theirs.txt") << "y";
    expect_error(
        Code::kAlreadyExists, [&] { s.commit(); }, "already exists");
  }
  CHECK(entries(dir.path) == std::vector<std::string>{"a", "race"});
  CHECK(entries(dir.path / "race") == std::vector<std::string>{"theirs.txt"});
}

TEST_CASE("StagingDir: an empty folder, or with kReplace anything, is replaced in one rename") {
  TempDir dir("staging");
  auto write = [](const fs::path& p, const char* text) { std::ofstream(p) << text; };
  fs::create_directory(dir.path / "empty");
  {
    StagingDir s(dir / "empty", ExistingTarget::kReplaceEmptyDir);
    write(fs::path(s.path()) / "new.txt", "n");
    s.commit();
  }
  CHECK(entries(dir.path / "empty") == std::vector<std::string>{"new.txt"});
  // Now it is not empty: refused, at construction or (when it fills
  // meanwhile) at commit, and left as it is.
  expect_error(
      Code::kAlreadyExists, [&] { StagingDir s(dir / "empty", ExistingTarget::kReplaceEmptyDir); },
      "already exists and is not an empty folder");
  write(dir.path / "file", "f");
  expect_error(
      Code::kAlreadyExists, [&] { StagingDir s(dir / "file", ExistingTarget::kReplaceEmptyDir); },
      "not an empty folder");
  fs::create_directory(dir.path / "fills");
  {
    StagingDir s(dir / "fills", ExistingTarget::kReplaceEmptyDir);
    write(dir.path / "fills" / "theirs.txt", "t");
    expect_error(
        Code::kAlreadyExists, [&] { s.commit(); }, "not an empty folder");
  }
  CHECK(entries(dir.path / "fills") == std::vector<std::string>{"theirs.txt"});

  // kReplace: a full folder, a file, a link (the link itself), or nothing.
  fs::create_directory(dir.path / "elsewhere");
  write(dir.path / "elsewhere" / "keep.txt", "k");
  fs::create_directory_symlink(dir.path / "elsewhere", dir.path / "link");
  for (const char* name : {"empty", "file", "link", "absent"}) {
    CAPTURE(name);
    StagingDir s(dir / name, ExistingTarget::kReplace);
    write(fs::path(s.path()) / "replaced.txt", "r");
    s.commit();
    CHECK_FALSE(fs::is_symlink(dir.path / name));
    CHECK(entries(dir.path / name) == std::vector<std::string>{"replaced.txt"});
  }
  CHECK(entries(dir.path / "elsewhere") == std::vector<std::string>{"keep.txt"});
  CHECK(entries(dir.path) == std::vector<std::string>{"absent", "elsewhere", "empty", "file", "fills", "link"});
  for (const char* bad : {".", "..", "/", "a/.."})
    expect_error(
        Code::kInvalidArgument, [&] { StagingDir s(bad, ExistingTarget::kReplace); }, "name a new folder");
}
