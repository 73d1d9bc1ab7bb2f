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
  expect_error(Code::kAlreadyExists, [&] { StagingDir s(dir / "a"); }, message);
  {
    // The target appears while the folder is written: never replaced.
    StagingDir s(dir / "race");
    fs::create_directory(dir.path / "race");
    std::ofstream(dir.path / "race" / "theirs.txt") << "y";
    expect_error(Code::kAlreadyExists, [&] { s.commit(); }, "already exists");
  }
  CHECK(entries(dir.path) == std::vector<std::string>{"a", "race"});
  CHECK(entries(dir.path / "race") == std::vector<std::string>{"theirs.txt"});
}
