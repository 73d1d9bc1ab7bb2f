// Downloads over real loopback sockets against a fault-injecting server.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>

#include "fetch_testutil.h"
#include "http_server.h"
#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/resolver/cache.h"
#include "hub/resolver/resolver.h"
#include "resolver_testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("fetch: first resolve downloads, second is a cache hit with no connection") {
  Sandbox sb;
  HttpServer server;
  server.route("/m.tar.gz", [](const HttpRequest& r, HttpConn& c) { serve_body(r, c, good_archive()); });
  auto o = sb.options();
  fs::path dir = resolve_dir(server.url("/m.tar.gz"), o);
  CHECK(dir == sb.cache / resolver::cache_key(server.url("/m.tar.gz")) / "module");
  CHECK(read_file(dir / "assets/labels.txt") == "cat\ndog\n");
  CHECK(server.connections() == 1);
  auto log = server.log("/m.tar.gz");
  REQUIRE(log.size() == 1);
  CHECK(log[0].header("user-agent") == std::string("hub/") + HUB_VERSION);

  fs::path again = resolve_dir(server.url("/m.tar.gz"), o);
  CHECK(again == dir);
  CHECK(server.connections() == 1);

  // The descriptor records the digest of what was downloaded.
  resolver::Cache cache(sb.cache);
  auto entries = cache.list();
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].handle == server.url("/m.tar.gz"));
  CHECK(entries[0].sha256 == hub::sha256_hex(good_archive()));
  CHECK(entries[0].size == good_archive().size());
  CHECK(entries[0].complete);
  CHECK(list_tree(sb.cache / ".tmp").empty());
  CHECK(!fs::exists(sb.cache / (entries[0].key + ".lock")));
}

TEST_CASE("fetch: #sha256 and the expected digest are enforced; mismatch leaves nothing") {
  Sandbox sb;
  HttpServer server;
  server.route("/m.tar.gz", [](const HttpRequest& r, HttpConn& c) { serve_body(r, c, good_archive()); });
  const std::string good = hub::sha256_hex(good_archive());
  const std::string bad = hub::sha256_hex("something else");
  auto o = sb.options();
  Error e = resolve_error(server.url("/m.tar.gz") + "#sha256=" + bad, o);
  CHECK(e.code() == Code::kDataLoss);
  CHECK(contains(e, "expected " + bad));
  CHECK(contains(e, "got " + good));
  CHECK(contains(e, "module '" + server.url("/m.tar.gz") + "'"));
  check_cache_empty(sb);

  CHECK(resolve_error(server.url("/m.tar.gz"), o, bad).code() == Code::kDataLoss);
  check_cache_empty(sb);

  CHECK(resolve_error(server.url("/m.tar.gz") + "#sha256=" + bad, o, good).code() == Code::kInvalidArgument);
  CHECK_NOTHROW(resolve_dir(server.url("/m.tar.gz") + "#sha256=" + good, o, good));
  CHECK(resolve_error(server.url("/m.tar.gz"), o, "xyz").code() == Code::kInvalidArgument);
}

TEST_CASE("fetch: truncated body (no Content-Length, early close) fails as a corrupt archive") {
  Sandbox sb;
  HttpServer server;
  auto entries = module_entries();
  entries.push_back({"weights.bin", TarEntry::kFile, noise(20000)});
  const std::string a = make_tar(entries);
  server.route("/t.tar.gz", [&](const HttpRequest&, HttpConn& c) {
    c.send(http_head(200, {}));  // body delimited by close
    c.send(std::string_view(a).substr(0, a.size() / 2));
  });
  Error e = resolve_error(server.url("/t.tar.gz"), sb.options());
  CHECK(e.code() == Code::kCorruption);
  CHECK(contains(e, "module '" + server.url("/t.tar.gz") + "'"));
  check_cache_empty(sb);
}

TEST_CASE("fetch: Content-Length larger than the body is retried, then reported as data loss") {
  Sandbox sb;
  HttpServer server;
  server.route("/cl.tar.gz", [](const HttpRequest&, HttpConn& c) {
    const std::string& a = good_archive();
    c.send(http_head(200, {{"Content-Length", std::to_string(a.size() + 100)}}));
    c.send(a);
  });
  auto o = sb.options();
  o.fetch.max_retries = 1;
  Error e = resolve_error(server.url("/cl.tar.gz"), o);
  CHECK(e.code() == Code::kDataLoss);
  CHECK(contains(e, "connection dropped after " + std::to_string(good_archive().size()) + " bytes of " +
                        std::to_string(good_archive().size() + 100)));
  CHECK(server.requests("/cl.tar.gz") == 2);
  check_cache_empty(sb);
}

TEST_CASE("fetch: 500 then 200 is retried; 429 honours Retry-After") {
  Sandbox sb;
  HttpServer server;
  std::atomic<int> n{0};
  server.route("/flaky.tar.gz", [&](const HttpRequest& r, HttpConn& c) {
    if (n++ == 0) {
      c.send(http_head(500, {{"Content-Length", "5"}}) + "oops!");
    } else {
      serve_body(r, c, good_archive());
    }
  });
  CHECK_NOTHROW(resolve_dir(server.url("/flaky.tar.gz"), sb.options()));
  CHECK(server.requests("/flaky.tar.gz") == 2);

  std::atomic<int> m{0};
  server.route("/busy.tar.gz", [&](const HttpRequest& r, HttpConn& c) {
    if (m++ == 0) {
      c.send(http_head(429, {{"Retry-After", "1"}, {"Content-Length", "0"}}));
    } else {
      serve_body(r, c, good_archive());
    }
  });
  auto t0 = std::chrono::steady_clock::now();
  CHECK_NOTHROW(resolve_dir(server.url("/busy.tar.gz"), sb.options()));
  CHECK(seconds_since(t0) >= 0.9);  // waited as told, not the 10 ms backoff
  CHECK(server.requests("/busy.tar.gz") == 2);
}

TEST_CASE("fetch: persistent 503 gives up after the configured retries") {
  Sandbox sb;
  HttpServer server;
  server.route("/down.tar.gz", [](const HttpRequest&, HttpConn& c) {
    c.send(http_head(503, {{"Content-Length", "0"}}));
  });
  auto o = sb.options();
  o.fetch.max_retries = 2;
  Error e = resolve_error(server.url("/down.tar.gz"), o);
  CHECK(e.code() == Code::kUnavailable);
  CHECK(contains(e, "HTTP 503"));
  CHECK(contains(e, "after 3 attempts"));
  CHECK(server.requests("/down.tar.gz") == 3);
  check_cache_empty(sb);
}

TEST_CASE("fetch: 404 is a clear error after exactly one request") {
  Sandbox sb;
  HttpServer server;
  Error e = resolve_error(server.url("/missing.tar.gz"), sb.options());
  CHECK(e.code() == Code::kNotFound);
  CHECK(contains(e, "HTTP 404"));
  CHECK(contains(e, server.url("/missing.tar.gz")));
  CHECK(server.requests("/missing.tar.gz") == 1);
  CHECK(server.connections() == 1);
  check_cache_empty(sb);
}

TEST_CASE("fetch: redirect chain is followed; credentials are not sent to another host") {
  Sandbox sb;
  HttpServer server;
  const std::string other_host = "http://localhost:" + std::to_string(server.port());
  server.route("/r1", [](const HttpRequest&, HttpConn& c) {
    c.send(http_head(301, {{"Location", "/r2"}, {"Content-Length", "0"}}));
  });
  server.route("/r2", [&](const HttpRequest&, HttpConn& c) {
    c.send(http_head(302, {{"Location", other_host + "/final.tar.gz"}, {"Content-Length", "0"}}));
  });
  server.route("/final.tar.gz", [](const HttpRequest& r, HttpConn& c) { serve_body(r, c, good_archive()); });
  const std::string url = "http://user:secret@127.0.0.1:" + std::to_string(server.port()) + "/r1";
  fs::path dir = resolve_dir(url, sb.options());
  CHECK(fs::is_regular_file(dir / "module.pb"));
  REQUIRE(server.log("/r1").size() == 1);
  CHECK(!server.log("/r1")[0].header("authorization").empty());  // same host: sent
  REQUIRE(server.log("/final.tar.gz").size() == 1);
  CHECK(server.log("/final.tar.gz")[0].header("authorization").empty());  // other host: not
  resolver::Cache cache(sb.cache);
  CHECK(cache.list().at(0).url == other_host + "/final.tar.gz");
}

TEST_CASE("fetch: redirect to file:// is refused") {
  Sandbox sb;
  HttpServer server;
  write_file(sb.root / "local.tar.gz", good_archive());
  const std::string target = "file://" + (sb.root / "local.tar.gz").string();
  server.route("/evil", [&](const HttpRequest&, HttpConn& c) {
    c.send(http_head(302, {{"Location", target}, {"Content-Length", "0"}}));
  });
  Error e = resolve_error(server.url("/evil"), sb.options());
  CHECK(e.code() == Code::kPermissionDenied);
  CHECK(contains(e, "redirect to a scheme other than http/https refused"));
  CHECK(server.requests("/evil") == 1);
  check_cache_empty(sb);
}

TEST_CASE("fetch: endless redirects stop at the bound") {
  Sandbox sb;
  HttpServer server;
  server.route("/loop", [](const HttpRequest&, HttpConn& c) {
    c.send(http_head(302, {{"Location", "/loop"}, {"Content-Length", "0"}}));
  });
  auto o = sb.options();
  o.fetch.max_redirects = 5;
  Error e = resolve_error(server.url("/loop"), o);
  CHECK(e.code() == Code::kUnavailable);
  CHECK(contains(e, "more than 5 redirects"));
  CHECK(server.requests("/loop") == 6);  // the first request + 5 followed redirects
}

TEST_CASE("fetch: a server dripping one byte per second hits the low-speed timeout") {
  Sandbox sb;
  HttpServer server;
  server.route("/drip.tar.gz", [](const HttpRequest&, HttpConn& c) {
    const std::string& a = good_archive();
    if (!c.send(http_head(200, {{"Content-Length", std::to_string(a.size())}}))) return;
    for (char ch : a) {
      if (!c.send(std::string_view(&ch, 1)) || !c.sleep_ms(1000)) return;
    }
  });
  auto o = sb.options();
  o.fetch.max_retries = 0;
  auto t0 = std::chrono::steady_clock::now();
  Error e = resolve_error(server.url("/drip.tar.gz"), o);
  double took = seconds_since(t0);
  CHECK(e.code() == Code::kDeadlineExceeded);
  CHECK(contains(e, "timed out after 1 s"));
  CHECK(took < 5);
  check_cache_empty(sb);
}

TEST_CASE("fetch: body over the size cap is refused (declared and undeclared length)") {
  Sandbox sb;
  HttpServer server;
  server.route("/big.tar.gz", [](const HttpRequest& r, HttpConn& c) { serve_body(r, c, good_archive()); });
  server.route("/big-nolen.tar.gz", [](const HttpRequest&, HttpConn& c) {
    c.send(http_head(200, {}));
    c.send(good_archive());
  });
  auto o = sb.options();
  o.fetch.max_bytes = 100;
  Error e = resolve_error(server.url("/big.tar.gz"), o);
  CHECK(e.code() == Code::kResourceExhausted);
  CHECK(contains(e, "download size limit of 100 bytes"));
  CHECK(server.requests("/big.tar.gz") == 1);
  Error e2 = resolve_error(server.url("/big-nolen.tar.gz"), o);
  CHECK(e2.code() == Code::kResourceExhausted);
  CHECK(server.requests("/big-nolen.tar.gz") == 1);
  check_cache_empty(sb);
}

TEST_CASE("fetch: connection dropped midway is resumed with Range and If-Range") {
  Sandbox sb;
  HttpServer server;
  // A bigger archive so "midway" is meaningful.
  auto entries = module_entries();
  std::string blob;
  for (int i = 0; i < 50000; ++i) blob += std::to_string(i * 7919 % 10007) + ",";
  entries.push_back({"blob.txt", TarEntry::kFile, blob});
  const std::string archive = make_tar(entries);
  const size_t cut = archive.size() / 3;
  std::atomic<int> n{0};
  server.route("/resume.tar.gz", [&](const HttpRequest& r, HttpConn& c) {
    serve_body(r, c, archive, "\"v1\"", n++ == 0 ? cut : static_cast<size_t>(-1));
  });
  fs::path dir = resolve_dir(server.url("/resume.tar.gz"), sb.options());
  CHECK(read_file(dir / "blob.txt") == blob);
  auto log = server.log("/resume.tar.gz");
  REQUIRE(log.size() == 2);
  CHECK(log[0].header("range").empty());
  CHECK(log[1].header("range") == "bytes=" + std::to_string(cut) + "-");
  CHECK(log[1].header("if-range") == "\"v1\"");
  resolver::Cache cache(sb.cache);
  CHECK(cache.list().at(0).sha256 == hub::sha256_hex(archive));
}

TEST_CASE("fetch: changed resource during resume (If-Range mismatch) restarts from zero") {
  Sandbox sb;
  HttpServer server;
  std::string v1 = make_tar(module_entries());
  auto e2 = module_entries();
  e2.push_back({"new.txt", TarEntry::kFile, "version 2"});
  std::string v2 = make_tar(e2);
  std::atomic<int> n{0};
  server.route("/changed.tar.gz", [&](const HttpRequest& r, HttpConn& c) {
    if (n++ == 0) {
      serve_body(r, c, v1, "\"v1\"", v1.size() / 2);
    } else {
      serve_body(r, c, v2, "\"v2\"");  // If-Range "v1" does not match: full 200
    }
  });
  auto o = sb.options();
  fs::path dir = resolve_dir(server.url("/changed.tar.gz"), o, hub::sha256_hex(v2));
  CHECK(read_file(dir / "new.txt") == "version 2");
  CHECK(server.requests("/changed.tar.gz") == 2);
}

TEST_CASE("fetch: Fetcher interface can be replaced (no network at all)") {
  struct FakeFetcher : resolver::Fetcher {
    int calls = 0;
    resolver::FetchResult fetch(const std::string& url, const fs::path& dest, const resolver::FetchOptions&,
                                const resolver::ProgressFn& p, resolver::ResumeState*) override {
      ++calls;
      write_file(dest, good_archive());
      if (p) p(good_archive().size(), good_archive().size());
      resolver::FetchResult r;
      r.bytes = good_archive().size();
      r.sha256 = hub::sha256_file(dest);
      r.effective_url = url;
      r.attempts = 1;
      return r;
    }
  };
  auto fake = std::make_shared<FakeFetcher>();
  Sandbox sb;
  auto o = sb.options();
  o.fetcher = fake;
  fs::path dir = resolve_dir("https://example.invalid/m.tar.gz", o);
  CHECK(fs::is_regular_file(dir / "module.pb"));
  resolve_dir("https://example.invalid/m.tar.gz", o);
  CHECK(fake->calls == 1);
}

TEST_CASE("fetch: DNS failure and refused connection are named") {
  Sandbox sb;
  auto o = sb.options();
  o.fetch.max_retries = 0;
  Error dns = resolve_error("http://no-such-host.invalid/m.tar.gz", o);
  // Without any resolver configured the lookup may also hit the 2 s connect
  // timeout instead of failing at once; both must say so.
  CHECK((dns.code() == Code::kUnavailable || dns.code() == Code::kDeadlineExceeded));
  CHECK((contains(dns, "DNS lookup failed") || contains(dns, "esolv")));
  int port = 0;
  {
    HttpServer s;  // learn a free port, then close it
    port = s.port();
  }
  Error refused = resolve_error("http://127.0.0.1:" + std::to_string(port) + "/m.tar.gz", o);
  CHECK(refused.code() == Code::kUnavailable);
  CHECK(contains(refused, "cannot connect"));
}

TEST_CASE("fetch: a server that accepts and never answers times out") {
  Sandbox sb;
  HttpServer server;
  server.route("/silent.tar.gz", [](const HttpRequest&, HttpConn& c) { c.sleep_ms(10000); });
  auto o = sb.options();
  o.fetch.max_retries = 0;
  auto t0 = std::chrono::steady_clock::now();
  Error e = resolve_error(server.url("/silent.tar.gz"), o);
  CHECK(e.code() == Code::kDeadlineExceeded);
  CHECK(contains(e, "timed out after 1 s"));
  CHECK(contains(e, "stalled at 0 bytes"));
  CHECK(seconds_since(t0) < 5);
  check_cache_empty(sb);
}
