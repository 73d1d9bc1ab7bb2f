// Issue 13, item 9: a cache directory others can write to is refused, and a
// symbolic link planted inside the cache is never followed (entries,
// completion markers, locks, .tmp/ and refs/).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch_testutil.h"
#include "http_server.h"
#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/resolver/cache.h"
#include "resolver_testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

// A loopback server with the good archive at /m.tar.gz.
struct Served {
  HttpServer server;
  Served() {
    server.route("/m.tar.gz", [](const HttpRequest& r, HttpConn& c) { serve_body(r, c, good_archive()); });
  }
  std::string url() const { return server.url("/m.tar.gz"); }
};

// A folder outside the cache that looks like a complete entry with other content.
fs::path fake_entry(const Sandbox& sb) {
  fs::path fake = sb.outside / "fake";
  fs::create_directories(fake / "module");
  write_file(fake / "module" / "module.pb", "planted");
  write_file(fake / "complete", hub::sha256_hex(good_archive()) + "\n");
  return fake;
}

}  // namespace

TEST_CASE("cache security: a cache directory writable by group or others is refused with the fix") {
  Sandbox sb;
  Served s;
  fs::create_directories(sb.cache);
  for (mode_t mode : {0777, 0775, 0757}) {
    CAPTURE(mode);
    REQUIRE(::chmod(sb.cache.c_str(), mode) == 0);
    Error e = resolve_error(s.url(), sb.options());
    CHECK(e.code() == Code::kPermissionDenied);
    CHECK(contains(e, "writable by group or others"));
    CHECK(contains(e, "chmod go-w " + sb.cache.string()));
    CHECK_THROWS_AS(resolver::Cache(sb.cache).list(), Error);
  }
  CHECK(s.server.connections() == 0);
  REQUIRE(::chmod(sb.cache.c_str(), 0755) == 0);
  CHECK(fs::exists(resolve_dir(s.url(), sb.options()) / "module.pb"));
  // A cache the resolver creates is private.
  Sandbox fresh;
  resolve_dir(s.url(), fresh.options());
  struct stat st;
  REQUIRE(::stat(fresh.cache.c_str(), &st) == 0);
  CHECK((st.st_mode & 077) == 0);
}

TEST_CASE("cache security: an entry that is a symlink is not used, and is replaced by a real one") {
  Sandbox sb;
  Served s;
  fs::create_directories(sb.cache);
  const fs::path fake = fake_entry(sb);
  const std::string key = resolver::cache_key(s.url());
  fs::create_directory_symlink(fake, sb.cache / key);
  fs::path dir = resolve_dir(s.url(), sb.options());
  CHECK(read_file(dir / "module.pb") != "planted");
  CHECK(!fs::is_symlink(sb.cache / key));
  CHECK(s.server.requests("/m.tar.gz") == 1);
  // The planted target is untouched.
  CHECK(read_file(fake / "module" / "module.pb") == "planted");
}

TEST_CASE("cache security: a completion marker or module folder that is a symlink counts as damage") {
  Sandbox sb;
  Served s;
  const fs::path fake = fake_entry(sb);
  fs::path dir = resolve_dir(s.url(), sb.options());
  const fs::path entry = dir.parent_path();
  fs::remove(entry / "complete");
  fs::create_symlink(fake / "complete", entry / "complete");
  CHECK(!resolver::Cache(sb.cache).complete_sha256(resolver::cache_key(s.url())));
  resolve_dir(s.url(), sb.options());
  CHECK(!fs::is_symlink(entry / "complete"));
  CHECK(s.server.requests("/m.tar.gz") == 2);
  fs::remove_all(entry / "module");
  fs::create_directory_symlink(fake / "module", entry / "module");
  CHECK(read_file(resolve_dir(s.url(), sb.options()) / "module.pb") != "planted");
  CHECK(s.server.requests("/m.tar.gz") == 3);
}

TEST_CASE("cache security: a lock planted as a symlink is never written through") {
  Sandbox sb;
  Served s;
  fs::create_directories(sb.cache);
  write_file(sb.outside / "victim", "precious");
  fs::create_symlink(sb.outside / "victim", sb.cache / (resolver::cache_key(s.url()) + ".lock"));
  auto o = sb.options();
  o.lock_stale_s = 0.2;  // the planted "lock" ages out like a dead one
  CHECK(fs::exists(resolve_dir(s.url(), o) / "module.pb"));
  CHECK(read_file(sb.outside / "victim") == "precious");
  CHECK(!fs::exists(fs::symlink_status(sb.cache / (resolver::cache_key(s.url()) + ".lock"))));
}

TEST_CASE("cache security: .tmp and refs planted as symlinks are replaced, nothing is written outside") {
  Sandbox sb;
  Served s;
  fs::create_directories(sb.cache);
  fs::create_directories(sb.outside / "tmp");
  fs::create_directories(sb.outside / "refs");
  fs::create_directory_symlink(sb.outside / "tmp", sb.cache / ".tmp");
  fs::create_directory_symlink(sb.outside / "refs", sb.cache / "refs");
  CHECK(fs::exists(resolve_dir(s.url(), sb.options()) / "module.pb"));
  resolver::Cache cache(sb.cache);
  cache.write_ref({"acme/net@latest", "http://registry", "1.0.0", std::string(64, 'a'), ""});
  CHECK(cache.read_ref("http://registry", "acme/net@latest")->version == "1.0.0");
  CHECK(!fs::is_symlink(sb.cache / ".tmp"));
  CHECK(!fs::is_symlink(sb.cache / "refs"));
  CHECK(list_tree(sb.outside) == std::vector<std::string>{"refs", "tmp"});
}
