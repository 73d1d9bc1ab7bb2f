// Issue 13, item 11: archive entry names. Refused: paths deeper than 64
// components, control characters, backslashes, invalid UTF-8 (in names and
// link targets), names that collide case-insensitively, and hard links that
// carry data. Messages name the archive entry, never a temporary path.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>

#include "hub/core/error.h"
#include "hub/resolver/unpack.h"
#include "resolver_testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

// Unpacks `bytes`; checks the refusal's code and text, that no temporary
// path is quoted, and that nothing is left behind.
void expect_refused(const std::string& bytes, Code code, const std::string& needle) {
  Sandbox sb;
  write_file(sb.root / "in.tar", bytes);
  fs::create_directories(sb.root / "x");
  try {
    resolver::unpack_archive(sb.root / "in.tar", sb.root / "x" / "dest");
    FAIL("accepted; expected a refusal mentioning '" << needle << "'");
  } catch (const Error& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK(e.code() == code);
    CHECK(message.find(needle) != std::string::npos);
    CHECK(message.find((sb.root / "x").string()) == std::string::npos);
  }
  CHECK(list_tree(sb.root / "x").empty());
  CHECK_THROWS_AS(resolver::inspect_archive(sb.root / "in.tar"), Error);
}

std::vector<TarEntry> with(TarEntry extra) {
  auto e = module_entries();
  e.push_back(std::move(extra));
  return e;
}

// One raw ustar header block (for what libarchive's writer will not produce).
std::string ustar_header(const std::string& name, char type, size_t size, const std::string& link = "") {
  std::string h(512, '\0');
  std::memcpy(&h[0], name.data(), std::min<size_t>(name.size(), 100));
  std::snprintf(&h[100], 8, "%07o", 0644);
  std::snprintf(&h[108], 8, "%07o", 0);
  std::snprintf(&h[116], 8, "%07o", 0);
  std::snprintf(&h[124], 12, "%011zo", size);
  std::snprintf(&h[136], 12, "%011o", 0);
  h[156] = type;
  std::memcpy(&h[157], link.data(), std::min<size_t>(link.size(), 100));
  std::memcpy(&h[257],
              "ustar\0"
              "00",
              8);
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(&h[148], 8, "%06o", sum);
  return h;
}

std::string padded(const std::string& data) { return data + std::string((512 - data.size() % 512) % 512, '\0'); }

}  // namespace

TEST_CASE("archive names: paths deeper than 64 components are refused") {
  std::string deep;
  for (int i = 0; i < 65; ++i) deep += "d/";
  deep += "f";
  expect_refused(make_tar(with({deep, TarEntry::kFile, "x"})), Code::kPermissionDenied,
                 "66 path components (the limit is 64)");
  std::string ok;
  for (int i = 0; i < 63; ++i) ok += "d/";
  ok += "f";  // 64 components: fine
  Sandbox sb;
  write_file(sb.root / "ok.tar", make_tar(with({ok, TarEntry::kFile, "x"})));
  CHECK_NOTHROW(resolver::unpack_archive(sb.root / "ok.tar", sb.root / "out"));
}

TEST_CASE("archive names: control characters, backslashes and invalid UTF-8 are refused") {
  expect_refused(make_tar(with({"assets/evil\nname", TarEntry::kFile, "x"})), Code::kPermissionDenied,
                 "'assets/evil\\x0aname': control character");
  expect_refused(make_tar(with({"assets/esc\x1b[2J", TarEntry::kFile, "x"})), Code::kPermissionDenied,
                 "control character");
  expect_refused(make_tar(with({"assets\\..\\..\\evil", TarEntry::kFile, "x"})), Code::kPermissionDenied, "backslash");
  expect_refused(make_tar(with({"assets/bad\xff.txt", TarEntry::kFile, "x"})), Code::kPermissionDenied,
                 "not valid UTF-8");
  expect_refused(make_tar(with({"assets/over\xc0\xaf", TarEntry::kFile, "x"})), Code::kPermissionDenied,
                 "not valid UTF-8");
  // In link targets too.
  expect_refused(make_tar(with({"assets/l", TarEntry::kSymlink, "", "labels.txt\x7f"})), Code::kPermissionDenied,
                 "control character");
  expect_refused(make_tar(with({"assets/l", TarEntry::kSymlink, "", "..\\labels.txt"})), Code::kPermissionDenied,
                 "backslash");
  // UTF-8 itself is fine.
  Sandbox sb;
  write_file(sb.root / "ok.tar", make_tar(with({"assets/\xc3\xa9t\xc3\xa9.txt", TarEntry::kFile, "x"})));
  CHECK_NOTHROW(resolver::unpack_archive(sb.root / "ok.tar", sb.root / "out"));
  CHECK(fs::exists(sb.root / "out/assets/\xc3\xa9t\xc3\xa9.txt"));
}

TEST_CASE("archive names: entries that collide case-insensitively are refused") {
  expect_refused(make_tar(with({"Module.pb", TarEntry::kFile, "x"})), Code::kCorruption,
                 "entry 'Module.pb' and entry 'module.pb' differ only in case");
  expect_refused(make_tar(with({"ASSETS/x", TarEntry::kFile, "x"})), Code::kCorruption, "differ only in case");
  expect_refused(make_tar(with({"assets/LABELS.TXT", TarEntry::kSymlink, "", "labels.txt"})), Code::kCorruption,
                 "differ only in case");
}

TEST_CASE("archive names: a hard link that carries data gets its own refusal") {
  // module.pb, then "copy": a hard link to it with a 5-byte body. pax allows
  // the body (a pax "size" record); other tools would write it into module.pb.
  const std::string pb = ustar_header("module.pb", '0', 7) + padded("test pb");
  const std::string record = "10 size=5\n";  // length of the record, space, key=value, newline
  const std::string pax = ustar_header("PaxHeader/copy", 'x', record.size()) + padded(record);
  const std::string link = ustar_header("copy", '1', 5, "module.pb") + padded("hello");
  expect_refused(pb + pax + link + std::string(1024, '\0'), Code::kPermissionDenied,
                 "hard link 'copy' carries 5 bytes of data");
  // Plain ustar: readers skip no body for a hard link, so the body reads as a
  // broken header.
  expect_refused(pb + link + std::string(1024, '\0'), Code::kCorruption, "malformed archive");
}

TEST_CASE("archive names: a validator's message names the entry, not the unpack folder") {
  Sandbox sb;
  auto e = module_entries();
  for (TarEntry& t : e)
    if (t.path == "module.pb") t.data = "";
  write_file(sb.root / "m.tar", make_tar(e));
  try {
    resolver::unpack_archive(sb.root / "m.tar", sb.root / "dest");
    FAIL("accepted");
  } catch (const Error& err) {
    const std::string message = err.what();
    CAPTURE(message);
    CHECK(message.find("not a module: module.pb is empty") != std::string::npos);
    CHECK(message.find((sb.root / "dest").string()) == std::string::npos);
  }
}
