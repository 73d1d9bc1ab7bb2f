// The cache: handles, offline mode, concurrency across processes, killed
// writers, stale locks, list/rm/verify.
#include "hub/resolver/cache.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <thread>

#include "fetch_testutil.h"
#include "http_server.h"
#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/resolver/resolver.h"
#include "resolver_testutil.h"
#include "subprocess.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

// resolve() in a fresh process (tests/subprocess.h): prints the path, or
// "ERR <message>" and exits 1. Options are the sandbox's fast ones for the
// cache dir, with the lock stale time and low-speed time passed along.
HUB_TEST_CHILD_MODE(resolve) {
  resolver::ResolverOptions o = fast_options(args.at(1));
  o.lock_stale_s = std::stod(args.at(2));
  o.fetch.low_speed_time_s = std::stol(args.at(3));
  try {
    std::printf("%s", resolve_dir(args.at(0), o).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::printf("ERR %s", e.what());
    return 1;
  }
}

Child spawn_resolve(const std::string& handle, const resolver::ResolverOptions& o) {
  return Child::self("resolve", {handle, o.cache_dir.string(), std::to_string(o.lock_stale_s),
                                 std::to_string(o.fetch.low_speed_time_s)});
}

}  // namespace

TEST_CASE("cache: root comes from HUB_CACHE_DIR, XDG_CACHE_HOME, HOME in that order") {
  std::string saved_hub = std::getenv("HUB_CACHE_DIR") ? std::getenv("HUB_CACHE_DIR") : "";
  std::string saved_xdg = std::getenv("XDG_CACHE_HOME") ? std::getenv("XDG_CACHE_HOME") : "";
  std::string saved_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  ::setenv("HUB_CACHE_DIR", "/a/hub", 1);
  ::setenv("XDG_CACHE_HOME", "/b", 1);
  ::setenv("HOME", "/c", 1);
  CHECK(resolver::default_cache_dir() == fs::path("/a/hub"));
  ::unsetenv("HUB_CACHE_DIR");
  CHECK(resolver::default_cache_dir() == fs::path("/b/hub"));
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(resolver::default_cache_dir() == fs::path("/c/.cache/hub"));
  auto restore = [](const char* k, const std::string& v) {
    if (v.empty())
      ::unsetenv(k);
    else
      ::setenv(k, v.c_str(), 1);
  };
  restore("HUB_CACHE_DIR", saved_hub);
  restore("XDG_CACHE_HOME", saved_xdg);
  restore("HOME", saved_home);
  // Folder = SHA-1 of the handle (fragment excluded).
  CHECK(resolver::cache_key("http://x/m.tar.gz#sha256=ab") == hub::sha1_hex("http://x/m.tar.gz"));
  CHECK(hub::sha1_hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST_CASE("cache: local directory used in place; local archive and file:// unpacked into the cache") {
  Sandbox sb;
  fs::path mod = sb.root / "mod";
  fs::create_directories(mod);
  write_file(mod / "module.pb", "pb");
  CHECK(resolve_dir(mod.string(), sb.options()) == mod);
  CHECK(!fs::exists(sb.cache));
  fs::create_directories(sb.root / "empty");
  CHECK_THROWS_WITH_AS(resolve_dir((sb.root / "empty").string(), sb.options()), doctest::Contains("no module.pb"),
                       Error);

  write_file(sb.root / "m.tar.gz", good_archive());
  fs::path a = resolve_dir((sb.root / "m.tar.gz").string(), sb.options());
  fs::path b = resolve_dir("file://" + (sb.root / "m.tar.gz").string(), sb.options());
  CHECK(a != b);  // different handles, different folders
  CHECK(read_file(a / "module.pb") == read_file(b / "module.pb"));
  CHECK(a.parent_path().parent_path() == sb.cache);

  try {
    resolve_dir((sb.root / "nope").string(), sb.options());
    FAIL("resolved a missing path");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kNotFound);
    CHECK(std::string(e.what()).find("module '" + (sb.root / "nope").string() + "'") == 0);
  }
  CHECK_THROWS_AS(resolve_dir("ftp://example.com/m.tar.gz", sb.options()), Error);
}

TEST_CASE("cache: offline mode serves hits and names the handle on a miss") {
  Sandbox sb;
  HttpServer server;
  server.route("/m.tar.gz", [](const HttpRequest& r, HttpConn& c) { serve_body(r, c, good_archive()); });
  auto o = sb.options();
  o.offline = true;
  try {
    resolve_dir(server.url("/m.tar.gz"), o);
    FAIL("offline resolve of an uncached handle succeeded");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kUnavailable);
    CHECK(std::string(e.what()).find("module '" + server.url("/m.tar.gz") + "'") == 0);
    CHECK(std::string(e.what()).find("offline") != std::string::npos);
  }
  CHECK(server.connections() == 0);
  o.offline = false;
  fs::path dir = resolve_dir(server.url("/m.tar.gz"), o);
  ::setenv("HUB_OFFLINE", "1", 1);
  o.offline.reset();  // from the environment
  CHECK(resolve_dir(server.url("/m.tar.gz"), o) == dir);
  CHECK_THROWS_AS(resolve_dir(server.url("/other.tar.gz"), o), Error);
  ::unsetenv("HUB_OFFLINE");
  CHECK(server.connections() == 1);
}

TEST_CASE("cache: 8 processes fetch the same handle at once: one download, one path") {
  Sandbox sb;
  HttpServer server;
  server.route("/m.tar.gz", [](const HttpRequest& r, HttpConn& c) {
    c.sleep_ms(300);  // keep the download in flight while the others start
    serve_body(r, c, good_archive());
  });
  auto o = sb.options();
  std::vector<Child> kids;
  for (int i = 0; i < 8; ++i) kids.push_back(spawn_resolve(server.url("/m.tar.gz"), o));
  std::set<std::string> paths;
  for (auto& k : kids) {
    ChildResult r = k.wait(60, "resolve child");
    INFO(r.output);
    CHECK(r.exited);
    CHECK(r.code == 0);
    paths.insert(r.output);
  }
  CHECK(paths.size() == 1);
  CHECK(server.requests("/m.tar.gz") == 1);
  CHECK(fs::is_regular_file(fs::path(*paths.begin()) / "module.pb"));
  CHECK(list_tree(sb.cache / ".tmp").empty());
}

TEST_CASE("cache: racing writers without the lock still leave one complete module") {
  // Two writers that each believe they hold the lock (stale-lock takeover
  // race): simulated by a zero stale timeout, so every waiter takes over.
  Sandbox sb;
  HttpServer server;
  // Each response waits (10 s at most) until a second writer has asked too, so the writers overlap however
  // slowly the machine starts them.
  server.route("/m.tar.gz", [&server](const HttpRequest& r, HttpConn& c) {
    for (int waited = 0; waited < 10000 && server.requests("/m.tar.gz") < 2; waited += 50)
      if (!c.sleep_ms(50)) return;
    serve_body(r, c, good_archive());
  });
  auto o = sb.options();
  o.lock_stale_s = 0;
  std::vector<Child> kids;
  for (int i = 0; i < 4; ++i) kids.push_back(spawn_resolve(server.url("/m.tar.gz"), o));
  std::set<std::string> paths;
  for (auto& k : kids) {
    ChildResult r = k.wait(60, "resolve child");
    INFO(r.output);
    CHECK(r.code == 0);
    paths.insert(r.output);
  }
  CHECK(paths.size() == 1);
  CHECK(server.requests("/m.tar.gz") >= 2);  // the lock really was ignored
  resolver::Cache cache(sb.cache);
  auto v = cache.verify();
  REQUIRE(v.size() == 1);
  CHECK(v[0].ok);
  CHECK(list_tree(sb.cache / ".tmp").empty());
}

TEST_CASE("cache: a writer killed mid-download leaves nothing visible; next fetch recovers") {
  Sandbox sb;
  HttpServer server;
  std::atomic<bool> first{true};
  std::atomic<bool> half_sent{false};
  server.route("/m.tar.gz", [&](const HttpRequest& r, HttpConn& c) {
    if (first.exchange(false)) {
      const std::string& a = good_archive();
      c.send(http_head(200, {{"Content-Length", std::to_string(a.size())}}));
      c.send(std::string_view(a).substr(0, a.size() / 2));
      half_sent = true;
      while (c.sleep_ms(20)) {
        if (!c.send(std::string_view())) break;  // hold the connection open
      }
      return;
    }
    serve_body(r, c, good_archive());
  });
  auto o = sb.options();
  o.fetch.low_speed_time_s = 30;  // the child must be stuck, not time out
  const std::string handle = server.url("/m.tar.gz");
  const std::string key = resolver::cache_key(handle);
  // Watch the entry folder for the child's whole life: it must never appear.
  std::atomic<bool> watching{true}, ever_visible{false};
  std::thread watcher([&] {
    while (watching) {
      if (fs::exists(sb.cache / key)) ever_visible = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  Child k = spawn_resolve(handle, o);
  for (int i = 0; i < 500 && !half_sent; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(half_sent);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Mid-download: a lock and a work folder exist, no entry folder.
  CHECK(fs::exists(sb.cache / (key + ".lock")));
  CHECK(!fs::exists(sb.cache / key));
  CHECK(!list_tree(sb.cache / ".tmp").empty());
  k.kill(SIGKILL);
  CHECK(k.wait(10, "killed resolve child").signal == SIGKILL);
  watching = false;
  watcher.join();
  CHECK(!ever_visible);
  CHECK(!fs::exists(sb.cache / key));
  CHECK(fs::exists(sb.cache / (key + ".lock")));  // stale: its owner is dead

  o.lock_stale_s = 600;  // recovery must come from the dead pid, not the timeout
  auto t0 = std::chrono::steady_clock::now();
  fs::path dir = resolve_dir(handle, o);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  CHECK(fs::is_regular_file(dir / "module.pb"));
  CHECK(list_tree(sb.cache / ".tmp").empty());  // the dead writer's folder was cleaned
  CHECK(!fs::exists(sb.cache / (key + ".lock")));
}

TEST_CASE("cache: a lock older than the stale timeout is taken over") {
  Sandbox sb;
  write_file(sb.root / "m.tar.gz", good_archive());
  const std::string handle = (sb.root / "m.tar.gz").string();
  fs::create_directories(sb.cache);
  // Alive owner (us, on another "host"), but not refreshed for a long time.
  write_file(sb.cache / (resolver::cache_key(handle) + ".lock"), "1 some-other-host 0 x\n");
  auto o = sb.options();
  o.lock_stale_s = 0.2;
  auto t0 = std::chrono::steady_clock::now();
  CHECK_NOTHROW(resolve_dir(handle, o));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
}

TEST_CASE("cache: a folder without the completion marker is treated as absent and repaired") {
  Sandbox sb;
  HttpServer server;
  server.route("/m.tar.gz", [](const HttpRequest& r, HttpConn& c) { serve_body(r, c, good_archive()); });
  const std::string handle = server.url("/m.tar.gz");
  fs::path dir = resolve_dir(handle, sb.options());
  fs::remove(dir.parent_path() / "complete");
  fs::remove(dir / "module.pb");  // damage that the marker's absence covers
  fs::path again = resolve_dir(handle, sb.options());
  CHECK(again == dir);
  CHECK(fs::is_regular_file(again / "module.pb"));
  CHECK(server.requests("/m.tar.gz") == 2);
}

TEST_CASE("cache: list, verify (detects damage), rm, clear") {
  Sandbox sb;
  write_file(sb.root / "a.tar.gz", good_archive());
  auto e2 = module_entries();
  e2.push_back({"extra.txt", TarEntry::kFile, "extra"});
  write_file(sb.root / "b.tar.gz", make_tar(e2));
  const std::string ha = (sb.root / "a.tar.gz").string(), hb = (sb.root / "b.tar.gz").string();
  fs::path da = resolve_dir(ha, sb.options());
  resolve_dir(hb, sb.options());
  resolver::Cache cache(sb.cache);
  auto list = cache.list();
  REQUIRE(list.size() == 2);
  CHECK(list[0].handle == ha);
  CHECK(list[0].unpacked_bytes == 7 + 3000 + 8);
  CHECK(list[0].fetched_at.size() == 20);  // 2026-01-01T00:00:00Z
  for (const auto& v : cache.verify()) CHECK(v.ok);

  { std::ofstream(da / "assets/labels.txt", std::ios::app) << "tampered"; }
  auto verdicts = cache.verify();
  REQUIRE(verdicts.size() == 2);
  CHECK(!verdicts[0].ok);
  CHECK(verdicts[0].problem.find("content changed") != std::string::npos);
  CHECK(verdicts[1].ok);

  CHECK(cache.remove(ha));
  CHECK(!cache.remove(ha));
  CHECK(!fs::exists(da));
  CHECK(cache.list().size() == 1);
  CHECK(cache.clear() == 1);
  CHECK(cache.list().empty());
}

TEST_CASE("cache: hostile archive over HTTP leaves nothing in the cache or outside") {
  Sandbox sb;
  HttpServer server;
  auto e = module_entries();
  e.push_back({"../../../outside/pwned", TarEntry::kFile, "evil"});
  const std::string bad = make_tar(e);
  server.route("/bad.tar.gz", [&](const HttpRequest& r, HttpConn& c) { serve_body(r, c, bad); });
  try {
    resolve_dir(server.url("/bad.tar.gz"), sb.options());
    FAIL("accepted");
  } catch (const Error& err) {
    CHECK(err.code() == Code::kPermissionDenied);
    CHECK(std::string(err.what()).find("'../../../outside/pwned'") != std::string::npos);
  }
  check_cache_empty(sb);
  CHECK(list_tree(sb.outside).empty());
}
