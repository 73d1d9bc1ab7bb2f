// Issue 13, item 7: credentials in a handle's URL are redacted everywhere
// they could be printed or stored: errors, descriptor.json, the cache listing,
// the Resolution.
#include <doctest/doctest.h>

#include "fetch_testutil.h"
#include "http_server.h"
#include "hub/core/error.h"
#include "hub/resolver/cache.h"
#include "resolver_testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {
// Every file under `dir` (recursively), concatenated.
std::string all_bytes(const fs::path& dir) {
  std::string out;
  for (const auto& it : fs::recursive_directory_iterator(dir))
    if (it.is_regular_file() && !it.is_symlink()) out += read_file(it.path());
  return out;
}
}  // namespace

TEST_CASE("redaction: a fetched URL's credentials are stored and reported redacted") {
  Sandbox sb;
  HttpServer server;
  server.route("/m.tar.gz", [](const HttpRequest& r, HttpConn& c) { serve_body(r, c, good_archive()); });
  const std::string port = std::to_string(server.port());
  const std::string url = "http://alice:s3cr3t-pw@127.0.0.1:" + port + "/m.tar.gz";
  resolver::Resolution r = resolver::Resolver(sb.options()).resolve(url);
  CHECK(r.handle == "http://***@127.0.0.1:" + port + "/m.tar.gz");
  CHECK(r.resolved.find("s3cr3t") == std::string::npos);
  // The credentials were sent (basic auth) ...
  REQUIRE(server.log("/m.tar.gz").size() == 1);
  CHECK(server.log("/m.tar.gz")[0].header("authorization").rfind("Basic ", 0) == 0);
  // ... and are nowhere in the cache: descriptor, markers, refs.
  CHECK(all_bytes(sb.cache).find("s3cr3t") == std::string::npos);
  CHECK(all_bytes(sb.cache).find("alice") == std::string::npos);
  auto entries = resolver::Cache(sb.cache).list();
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].handle == r.handle);
  CHECK(entries[0].url.find("s3cr3t") == std::string::npos);
}

TEST_CASE("redaction: errors never quote the credentials") {
  Sandbox sb;
  HttpServer server;
  server.route("/gone.tar.gz", [](const HttpRequest&, HttpConn& c) {
    c.send(http_head(404, {{"Content-Length", "0"}}));
  });
  server.route("/bad.tar.gz", [](const HttpRequest& r, HttpConn& c) { serve_body(r, c, "not an archive"); });
  for (const std::string& url : {server.url("/gone.tar.gz"), server.url("/bad.tar.gz")}) {
    const std::string with_creds = "http://bob:hunter2@" + url.substr(7);
    Error e = resolve_error(with_creds, sb.options());
    CAPTURE(e.what());
    CHECK(!contains(e, "hunter2"));
    CHECK(contains(e, "http://***@127.0.0.1"));
  }
  // A digest mismatch names the URL too.
  server.route("/m.tar.gz", [](const HttpRequest& r, HttpConn& c) { serve_body(r, c, good_archive()); });
  Error e =
      resolve_error("http://bob:hunter2@" + server.url("/m.tar.gz").substr(7), sb.options(), std::string(64, '0'));
  CHECK(e.code() == Code::kDataLoss);
  CHECK(!contains(e, "hunter2"));
  check_cache_empty(sb);
}
