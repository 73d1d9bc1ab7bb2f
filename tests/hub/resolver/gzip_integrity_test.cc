// Issue 13, item 2: a gzip stream is read to its end and checked: the deflate
// data, the CRC-32 and ISIZE trailer, and nothing after the stream. A damaged
// archive is refused by the unpacker (nothing cached) and by inspect.
#include <doctest/doctest.h>

#include "fetch_testutil.h"
#include "http_server.h"
#include "hub/core/error.h"
#include "hub/resolver/unpack.h"
#include "resolver_testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

// A module archive stored without compression (gzip level 0): a flipped byte
// in a file's data then changes only that file's bytes, so only the CRC can
// tell. (The variables file is 3000 bytes of 'w'.)
// (One gzip member with nothing after it: libarchive's writer would pad it.)
std::string stored_archive() { return gzip_bytes(make_tar(module_entries(), /*gzip=*/false), /*level=*/0); }

// The variants a damaged download can take, each with what the error says.
struct Damage {
  std::string what;
  std::string bytes;
  std::string needle;
};

std::vector<Damage> damages() {
  std::vector<Damage> out;
  const std::string good = stored_archive();
  {
    std::string b = good;
    size_t at = b.find(std::string(64, 'w'));  // inside variables.safetensors' data
    REQUIRE(at != std::string::npos);
    b[at + 10] = 'x';
    out.push_back({"a flipped byte in the file data", b, "CRC-32"});
  }
  {
    std::string b = gzip_bytes(make_tar(module_entries(), false), 9);
    b[b.size() / 2] = static_cast<char>(b[b.size() / 2] ^ 0x55);
    out.push_back({"a flipped byte in compressed data", b, "gzip"});
  }
  {
    std::string b = good;
    b[b.size() - 8] = static_cast<char>(b[b.size() - 8] ^ 1);  // CRC-32, little-endian
    out.push_back({"a flipped CRC-32", b, "CRC-32"});
  }
  {
    std::string b = good;
    b[b.size() - 4] = static_cast<char>(b[b.size() - 4] + 1);  // ISIZE
    out.push_back({"a wrong ISIZE", b, "length"});
  }
  out.push_back({"trailing garbage", good + "garbage!", "trailing"});
  out.push_back({"garbage after NUL padding", good + std::string(512, '\0') + "x", "trailing"});
  out.push_back({"a missing trailer", good.substr(0, good.size() - 8), "truncated"});
  return out;
}

}  // namespace

TEST_CASE("gzip: the good archive unpacks, also as two gzip members and with NUL padding") {
  Sandbox sb;
  write_file(sb.root / "m.tar.gz", stored_archive());
  CHECK(resolver::unpack_archive(sb.root / "m.tar.gz", sb.root / "out").entries == 4);
  // gzip allows concatenated members (`cat a.gz b.gz`): one tar split across two.
  const std::string tar = make_tar(module_entries(), /*gzip=*/false);
  write_file(sb.root / "two.tar.gz", gzip_bytes(tar.substr(0, 1000)) + gzip_bytes(tar.substr(1000)));
  CHECK(resolver::unpack_archive(sb.root / "two.tar.gz", sb.root / "out2").entries == 4);
  CHECK(read_file(sb.root / "out2/variables.safetensors") == std::string(3000, 'w'));
  // Tar writers pad their last block with NULs after the gzip stream; gzip accepts that.
  write_file(sb.root / "padded.tar.gz", gzip_bytes(tar) + std::string(10240, '\0'));
  CHECK(resolver::unpack_archive(sb.root / "padded.tar.gz", sb.root / "out3").entries == 4);
}

TEST_CASE("gzip: every kind of damage is refused by unpack and inspect, leaving nothing") {
  for (const Damage& d : damages()) {
    CAPTURE(d.what);
    Sandbox sb;
    write_file(sb.root / "m.tar.gz", d.bytes);
    try {
      resolver::unpack_archive(sb.root / "m.tar.gz", sb.root / "out");
      FAIL("accepted");
    } catch (const Error& e) {
      const std::string message = e.what();
      CAPTURE(message);
      CHECK(e.code() == Code::kCorruption);
      CHECK(message.find(d.needle) != std::string::npos);
    }
    CHECK(!fs::exists(sb.root / "out"));
    CHECK_THROWS_AS(resolver::inspect_archive(sb.root / "m.tar.gz"), Error);
  }
}

TEST_CASE("gzip: a damaged download over HTTP is refused and nothing is cached") {
  HttpServer server;
  std::vector<Damage> all = damages();
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string bytes = all[i].bytes;
    server.route("/d" + std::to_string(i) + ".tar.gz",
                 [bytes](const HttpRequest& req, HttpConn& conn) { serve_body(req, conn, bytes); });
  }
  for (size_t i = 0; i < all.size(); ++i) {
    CAPTURE(all[i].what);
    Sandbox sb;
    Error e = resolve_error(server.url("/d" + std::to_string(i) + ".tar.gz"), sb.options());
    CHECK(e.code() == Code::kCorruption);
    check_cache_empty(sb);
  }
}
