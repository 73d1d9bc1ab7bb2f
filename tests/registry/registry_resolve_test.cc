// Registry names through hub::resolver::Resolver wired with a RegistryClient
// (issue 15: explicit wiring; issue 13 item 3: cache identity). Real
// registries on loopback.
#include <doctest/doctest.h>

#include <memory>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/module/module.h"
#include "hub/resolver/cache.h"
#include "hub/resolver/resolver.h"
#include "registry/client/client.h"
#include "registry_testutil.h"

namespace fs = std::filesystem;
using namespace hub::registry;
using namespace hub::registry::testing;
using hub::resolver::Resolution;
using hub::resolver::Resolver;
using hub::resolver::ResolverOptions;

namespace {

ResolverOptions options_for(const fs::path& cache, const std::string& registry_url) {
  ResolverOptions o;
  o.cache_dir = cache;
  o.quiet = true;
  o.offline = false;
  o.fetch = hub::resolver::FetchOptions{};
  o.fetch.connect_timeout_s = 2;
  o.fetch.low_speed_time_s = 1;
  o.fetch.max_retries = 1;
  o.fetch.backoff_initial_s = 0.01;
  if (!registry_url.empty()) o.registry = std::make_shared<RegistryClient>(registry_url, o.fetch);
  return o;
}

std::string description(const Resolution& r) { return hub::load_module_spec(r.dir.string()).metadata().description; }

}  // namespace

TEST_CASE("registry names resolve only through a Resolver given a registry") {
  TestRegistry reg;
  REQUIRE(reg.put("acme/half", "1.0.0", module_archive("one")).status == 201);
  TempDir cache;
  // No registry wired in: the name is not a path and nothing asks a registry.
  try {
    Resolver(options_for(cache.path, "")).resolve("acme/half@1.0.0");
    FAIL("resolved without a registry");
  } catch (const hub::Error& e) {
    CHECK(e.code() == hub::Code::kNotFound);
    CHECK(std::string(e.what()).find("--registry") != std::string::npos);
  }
  Resolver resolver(options_for(cache.path, reg.url));
  Resolution r = resolver.resolve("acme/half@1.0.0");
  CHECK(description(r) == "module one");
  CHECK(r.resolved == "acme/half@1.0.0");
  CHECK(r.registry == reg.url);
  CHECK(!r.cached);
  CHECK(resolver.load("acme/half@1.0.0").metadata().description == "module one");
  CHECK_THROWS_AS(resolver.resolve("acme/half@9.0.0"), hub::Error);
}

TEST_CASE("two registries never share a cache entry for the same name and version") {
  TestRegistry first, second;
  REQUIRE(first.put("acme/net", "1.0.0", module_archive("from first")).status == 201);
  REQUIRE(second.put("acme/net", "1.0.0", module_archive("from second")).status == 201);
  TempDir cache;
  Resolution a = Resolver(options_for(cache.path, first.url)).resolve("acme/net@1.0.0");
  Resolution b = Resolver(options_for(cache.path, second.url)).resolve("acme/net@1.0.0");
  CHECK(description(a) == "module from first");
  CHECK(description(b) == "module from second");
  CHECK(a.dir != b.dir);
  CHECK(!b.cached);
  // Each is a hit afterwards, for its own registry, with no lookup at all:
  // a stopped registry does not matter for a pinned version.
  first.server->stop();
  Resolution again = Resolver(options_for(cache.path, first.url)).resolve("acme/net@1.0.0");
  CHECK(again.dir == a.dir);
  CHECK(again.cached);
  hub::resolver::Cache c(cache.path);
  auto entries = c.list();
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].handle == "acme/net@1.0.0");
  CHECK(entries[0].version == "1.0.0");
  CHECK(entries[0].registry != entries[1].registry);
  CHECK(c.remove("acme/net@1.0.0") == 2);
}

TEST_CASE("@latest is asked again on every online resolve and served from the cache offline") {
  TestRegistry reg;
  REQUIRE(reg.put("acme/net", "1.0.0", module_archive("v1")).status == 201);
  TempDir cache;
  Resolver online(options_for(cache.path, reg.url));
  Resolution r1 = online.resolve("acme/net@latest");
  CHECK(r1.resolved == "acme/net@1.0.0");
  CHECK(description(r1) == "module v1");
  REQUIRE(reg.put("acme/net", "1.1.0", module_archive("v2")).status == 201);
  Resolution r2 = online.resolve("acme/net@latest");
  CHECK(r2.resolved == "acme/net@1.1.0");
  CHECK(description(r2) == "module v2");
  CHECK(r2.dir != r1.dir);
  // The same version again: resolved by the registry, but no new download.
  Resolution r3 = online.resolve("acme/net@latest");
  CHECK(r3.dir == r2.dir);
  CHECK(r3.cached);
  // Pinning the old version still gives the old module, from the cache.
  CHECK(online.resolve("acme/net@1.0.0").dir == r1.dir);

  // Offline (and with the registry gone): what @latest last resolved to.
  reg.server->stop();
  ResolverOptions off = options_for(cache.path, reg.url);
  off.offline = true;
  Resolution r4 = Resolver(off).resolve("acme/net@latest");
  CHECK(r4.dir == r2.dir);
  CHECK(r4.resolved == "acme/net@1.1.0");
  CHECK(r4.offline);
  // Online with the registry gone: a moving reference needs the registry.
  CHECK_THROWS_AS(online.resolve("acme/net@latest"), hub::Error);
  // Another registry's @latest is not this one's, offline either.
  ResolverOptions other = options_for(cache.path, "http://127.0.0.1:9");
  other.offline = true;
  CHECK_THROWS_AS(Resolver(other).resolve("acme/net@latest"), hub::Error);
}

TEST_CASE("the registry's digest is enforced and must agree with a #sha256 fragment") {
  TestRegistry reg;
  const std::string archive = module_archive("digest");
  REQUIRE(reg.put("acme/net", "1.0.0", archive).status == 201);
  TempDir cache;
  Resolver resolver(options_for(cache.path, reg.url));
  try {
    resolver.resolve("acme/net@1.0.0#sha256=" + std::string(64, 'a'));
    FAIL("accepted");
  } catch (const hub::Error& e) {
    CHECK(e.code() == hub::Code::kDataLoss);
  }
  CHECK(hub::resolver::Cache(cache.path).list().empty());
  CHECK(resolver.resolve("acme/net@1.0.0#sha256=" + hub::sha256_hex(archive)).sha256 == hub::sha256_hex(archive));
}
