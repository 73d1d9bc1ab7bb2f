// Resolver::fetch_file: a plain file (a data set's source archive) downloaded
// into the cache as it is, over real HTTP on loopback.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "fetch_testutil.h"
#include "http_server.h"
#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/resolver/cache.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

TEST_CASE("fetch_file: kept as it is under file/, cached, listed and verified; a module of the same URL apart") {
  Sandbox sb;
  HttpServer server;
  const std::string body = noise(5000);
  server.route("/d/data.bin", [&](const HttpRequest& r, HttpConn& c) { serve_body(r, c, body); });
  resolver::Resolver res(sb.options());
  const std::string url = server.url("/d/data.bin");
  resolver::FileResolution f = res.fetch_file(url + "#sha256=" + sha256_hex(body));
  CHECK_FALSE(f.cached);
  CHECK(f.path.filename() == "data.bin");
  CHECK(f.path.parent_path().filename() == "file");
  CHECK(f.url == url);
  CHECK(f.sha256 == sha256_hex(body));
  CHECK(read_file(f.path) == body);
  resolver::FileResolution again = res.fetch_file(url, sha256_hex(body));
  CHECK(again.cached);
  CHECK(again.path == f.path);
  CHECK(server.requests("/d/data.bin") == 1);

  resolver::Cache cache(sb.cache);
  auto entries = cache.list();
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].key == resolver::file_cache_key(url));
  CHECK(entries[0].key != resolver::cache_key(url));
  CHECK(entries[0].module_dir == f.path.parent_path());
  auto verdicts = cache.verify();
  REQUIRE(verdicts.size() == 1);
  CHECK(verdicts[0].ok);
  // The same URL as a module handle is its own entry (and this body is no archive).
  CHECK_THROWS_AS(resolve_dir(url, sb.options()), Error);
  CHECK(cache.list().size() == 1);
}

TEST_CASE("fetch_file: a digest mismatch adds nothing; a cut download is resumed with Range") {
  Sandbox sb;
  HttpServer server;
  const std::string body = noise(200000);
  int calls = 0;
  server.route("/big.tgz", [&](const HttpRequest& r, HttpConn& c) {
    serve_body(r, c, body, "\"v1\"", ++calls == 1 ? 70000 : static_cast<size_t>(-1));
  });
  resolver::Resolver res(sb.options());
  try {
    res.fetch_file(server.url("/big.tgz"), std::string(64, '0'));
    FAIL("a wrong digest was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kDataLoss);
    CHECK(contains(e, "file '" + server.url("/big.tgz") + "'"));
    CHECK(contains(e, "sha256 mismatch"));
  }
  check_cache_empty(sb);
  calls = 0;
  resolver::FileResolution f = res.fetch_file(server.url("/big.tgz"), sha256_hex(body));
  CHECK(read_file(f.path) == body);
  auto log = server.log("/big.tgz");
  REQUIRE(log.size() >= 2);
  CHECK(log.back().header("range") == "bytes=70000-");
}

TEST_CASE("fetch_file: offline names the URL; only http(s) URLs that name a file") {
  Sandbox sb;
  HttpServer server;
  server.route("/x.gz", [](const HttpRequest& r, HttpConn& c) { serve_body(r, c, "abc"); });
  auto o = sb.options();
  o.offline = true;
  try {
    resolver::Resolver(o).fetch_file(server.url("/x.gz"));
    FAIL("offline fetch of an uncached file succeeded");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kUnavailable);
    CHECK(std::string(e.what()).find("file '" + server.url("/x.gz") + "': offline mode") == 0);
  }
  CHECK(server.connections() == 0);
  resolver::Resolver online(sb.options());
  for (const std::string& bad : {std::string("/tmp/x.gz"), std::string("ftp://h/x.gz"), server.url("/")}) {
    try {
      online.fetch_file(bad);
      FAIL("accepted " << bad);
    } catch (const Error& e) {
      CHECK(e.code() == Code::kInvalidArgument);
    }
  }
  CHECK(server.connections() == 0);
}
