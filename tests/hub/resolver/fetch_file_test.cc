// Resolver::fetch_file: a plain file (a data set's source archive) downloaded
// into the cache as it is, over real HTTP on loopback.
#include <doctest/doctest.h>

#include <atomic>
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

// Across runs: each "run" is a new Resolver whose fetcher does not retry, so a
// connection cut after `cut` bytes ends it; what arrived waits in the cache's
// .partial/<key>/ for the next run.
namespace {

struct CutServer {
  HttpServer server;
  std::string body, etag;
  std::atomic<size_t> cut{static_cast<size_t>(-1)};  // body bytes the next response sends
  explicit CutServer(const std::string& b, const std::string& e) : body(b), etag(e) {
    server.route("/cut/data.tgz", [this](const HttpRequest& r, HttpConn& c) {
      serve_body(r, c, body, etag, cut);
      cut = static_cast<size_t>(-1);
    });
  }
  std::string url() const { return server.url("/cut/data.tgz"); }
};

resolver::ResolverOptions one_attempt(const Sandbox& sb) {
  auto o = sb.options();
  o.fetch.max_retries = 0;
  return o;
}

fs::path partial_dir(const Sandbox& sb, const std::string& url) {
  return sb.cache / ".partial" / resolver::file_cache_key(url);
}

// A run cut after `cut` bytes: fails, adds no entry, keeps the bytes.
void cut_run(const Sandbox& sb, CutServer& s, size_t cut, const std::string& sha256) {
  s.cut = cut;
  CHECK_THROWS_AS(resolver::Resolver(one_attempt(sb)).fetch_file(s.url(), sha256), Error);
  CHECK(resolver::Cache(sb.cache).list().empty());
}

}  // namespace

TEST_CASE("fetch_file: a download cut in one run is continued by the next with Range and If-Range") {
  Sandbox sb;
  CutServer s(noise(300000, 7), "\"v1\"");
  cut_run(sb, s, 120000, sha256_hex(s.body));
  const fs::path kept = partial_dir(sb, s.url());
  CHECK(read_file(kept / "body.part") == s.body.substr(0, 120000));
  CHECK(read_file(kept / "state.json").find("\"validator\": \"\\\"v1\\\"\"") != std::string::npos);

  resolver::FileResolution f = resolver::Resolver(one_attempt(sb)).fetch_file(s.url(), sha256_hex(s.body));
  CHECK_FALSE(f.cached);
  CHECK(f.sha256 == sha256_hex(s.body));
  CHECK(read_file(f.path) == s.body);
  auto log = s.server.log("/cut/data.tgz");
  REQUIRE(log.size() == 2);
  CHECK(log[0].header("range").empty());
  CHECK(log[1].header("range") == "bytes=120000-");
  CHECK(log[1].header("if-range") == "\"v1\"");
  CHECK_FALSE(fs::exists(kept));
  CHECK(resolver::Cache(sb.cache).verify().at(0).ok);
}

TEST_CASE("fetch_file: a changed validator or size restarts from zero; no validator and no pin keeps nothing") {
  Sandbox sb;
  const std::string v1 = noise(100000, 1), v2 = noise(100000, 2);
  SUBCASE("the ETag changed: If-Range does not match, the server sends all of v2") {
    CutServer s(v1, "\"v1\"");
    cut_run(sb, s, 40000, sha256_hex(v2));
    s.body = v2;
    s.etag = "\"v2\"";
    resolver::FileResolution f = resolver::Resolver(one_attempt(sb)).fetch_file(s.url(), sha256_hex(v2));
    CHECK(read_file(f.path) == v2);
    auto log = s.server.log("/cut/data.tgz");
    REQUIRE(log.size() == 2);
    CHECK(log[1].header("range") == "bytes=40000-");
    CHECK(log[1].header("if-range") == "\"v1\"");
  }
  SUBCASE("no validator, a pinned digest: continued when the size is the same") {
    CutServer s(v1, "");
    cut_run(sb, s, 40000, sha256_hex(v1));
    resolver::FileResolution f = resolver::Resolver(one_attempt(sb)).fetch_file(s.url(), sha256_hex(v1));
    CHECK(read_file(f.path) == v1);
    auto log = s.server.log("/cut/data.tgz");
    REQUIRE(log.size() == 2);
    CHECK(log[1].header("range") == "bytes=40000-");
    CHECK(log[1].header("if-range").empty());
  }
  SUBCASE("no validator, a pinned digest: another size restarts from zero") {
    CutServer s(v1, "");
    cut_run(sb, s, 40000, sha256_hex(v1 + "x"));
    s.body = v1 + "x";
    auto o = sb.options();  // one retry: the 206 of another total is refused, then all of it is fetched
    resolver::FileResolution f = resolver::Resolver(o).fetch_file(s.url(), sha256_hex(v1 + "x"));
    CHECK(read_file(f.path) == v1 + "x");
    auto log = s.server.log("/cut/data.tgz");
    REQUIRE(log.size() == 3);
    CHECK(log[1].header("range") == "bytes=40000-");
    CHECK(log[2].header("range").empty());
  }
  SUBCASE("no validator and no pinned digest: nothing is kept") {
    CutServer s(v1, "");
    cut_run(sb, s, 40000, "");
    CHECK_FALSE(fs::exists(partial_dir(sb, s.url())));
    resolver::FileResolution f = resolver::Resolver(one_attempt(sb)).fetch_file(s.url());
    CHECK(read_file(f.path) == v1);
    CHECK(s.server.log("/cut/data.tgz").at(1).header("range").empty());
  }
  SUBCASE("the server ignores Range: 200, from zero") {
    CutServer s(v1, "\"v1\"");
    cut_run(sb, s, 40000, sha256_hex(v1));
    s.server.route("/cut/data.tgz", [&](const HttpRequest&, HttpConn& c) {
      c.send(http_head(200, {{"Content-Length", std::to_string(v1.size())}, {"ETag", "\"v1\""}}) + v1);
    });
    resolver::FileResolution f = resolver::Resolver(one_attempt(sb)).fetch_file(s.url(), sha256_hex(v1));
    CHECK(read_file(f.path) == v1);
    CHECK(s.server.log("/cut/data.tgz").at(1).header("range") == "bytes=40000-");
  }
  CHECK(resolver::Cache(sb.cache).list().size() == 1);
  CHECK(list_tree(sb.cache / ".partial").empty());
}

TEST_CASE("fetch_file: a corrupted kept body fails the digest, is deleted, and the next run starts afresh") {
  Sandbox sb;
  CutServer s(noise(100000, 3), "\"v1\"");
  const std::string sha = sha256_hex(s.body);
  cut_run(sb, s, 50000, sha);
  const fs::path kept = partial_dir(sb, s.url()) / "body.part";
  std::string bytes = read_file(kept);
  bytes[1000] ^= 0x55;  // disk damage the server's validator cannot see
  write_file(kept, bytes);
  try {
    resolver::Resolver(one_attempt(sb)).fetch_file(s.url(), sha);
    FAIL("a corrupted continued download was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kDataLoss);
    CHECK(contains(e, "sha256 mismatch: expected " + sha));
    CHECK(contains(e, "it continued 50000 bytes kept from an interrupted earlier run, now deleted"));
  }
  check_cache_empty(sb);
  CHECK(list_tree(sb.cache / ".partial").empty());
  resolver::FileResolution f = resolver::Resolver(one_attempt(sb)).fetch_file(s.url(), sha);
  CHECK(read_file(f.path) == s.body);
  auto log = s.server.log("/cut/data.tgz");
  REQUIRE(log.size() == 3);
  CHECK(log[1].header("range") == "bytes=50000-");
  CHECK(log[2].header("range").empty());
}

TEST_CASE("fetch_file: a kept body that does not match its state, or is for another URL, is dropped") {
  Sandbox sb;
  CutServer s(noise(60000, 4), "\"v1\"");
  cut_run(sb, s, 20000, sha256_hex(s.body));
  const fs::path kept = partial_dir(sb, s.url());
  write_file(kept / "body.part", s.body.substr(0, 19999));  // one byte lost since
  resolver::FileResolution f = resolver::Resolver(one_attempt(sb)).fetch_file(s.url(), sha256_hex(s.body));
  CHECK(read_file(f.path) == s.body);
  CHECK(s.server.log("/cut/data.tgz").at(1).header("range").empty());
  CHECK_FALSE(fs::exists(kept));
  resolver::Cache cache(sb.cache);
  fs::create_directories(kept);
  write_file(kept / "body.part", "abc");
  write_file(kept / "state.json", R"({"url": "http://elsewhere/x", "validator": "\"v1\"", "total": 9, "bytes": 3})");
  CHECK_FALSE(cache.take_partial(resolver::file_cache_key(s.url()), s.url(), sb.cache / "moved"));
  CHECK_FALSE(fs::exists(kept));
  CHECK_FALSE(fs::exists(sb.cache / "moved"));
  // A link planted as the body is never followed nor moved; the file it names stays.
  fs::create_directories(kept);
  write_file(sb.outside / "target", "abc");
  fs::create_symlink(sb.outside / "target", kept / "body.part");
  write_file(kept / "state.json",
             R"({"url": ")" + s.url() + R"(", "validator": "\"v1\"", "total": 60000, "bytes": 3})");
  CHECK_FALSE(cache.take_partial(resolver::file_cache_key(s.url()), s.url(), sb.cache / "moved"));
  CHECK_FALSE(fs::exists(fs::symlink_status(kept)));
  CHECK_FALSE(fs::exists(fs::symlink_status(sb.cache / "moved")));
  CHECK(read_file(sb.outside / "target") == "abc");
  CHECK(cache.clear() == 1);
  CHECK_FALSE(fs::exists(sb.cache / ".partial"));
}

TEST_CASE("fetch_file: a download refused rather than cut (size cap) keeps nothing") {
  Sandbox sb;
  CutServer s(noise(50000, 5), "\"v1\"");
  auto o = one_attempt(sb);
  o.fetch.max_bytes = 20000;
  try {
    resolver::Resolver(o).fetch_file(s.url(), sha256_hex(s.body));
    FAIL("a body over the size cap was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kResourceExhausted);
  }
  CHECK_FALSE(fs::exists(partial_dir(sb, s.url())));
  check_cache_empty(sb);
}
