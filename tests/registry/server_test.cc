// The registry server end to end on loopback: publish/search/versions/download,
// auth, immutability, races, hostile uploads, ranges (slow clients: slow_clients_test.cc).
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/module/module.h"
#include "registry/client/client.h"
#include "registry_testutil.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace hub::registry;
using namespace hub::registry::testing;

namespace {
json body_json(const RawResponse& r) {
  json j = json::parse(r.body, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), "not JSON: " << r.body);
  return j;
}
std::string error_code(const RawResponse& r) { return body_json(r)["error"]["code"].get<std::string>(); }
}  // namespace

TEST_CASE("publish, search, versions, download round trip") {
  TestRegistry reg;
  TempDir work;
  make_module_dir(work.path / "net", "v1");
  PublishOptions opt;
  opt.registry_url = reg.url;
  opt.module = "Acme/Image-Net";  // normalized to acme/image-net
  opt.version = "1.0.0";
  opt.token = reg.token;
  opt.description = "An image feature vector";
  json pub = publish_module(work.path / "net", opt);
  CHECK(pub["handle"] == "acme/image-net@1.0.0");
  // The recorded digest is the digest of what was packed (independently recomputed).
  pack_module_dir(work.path / "net", work.path / "again.tar.gz");
  std::string local_sha = hub::sha256_file(work.path / "again.tar.gz");
  CHECK(pub["sha256"] == local_sha);

  // A second version published from an archive file.
  make_module_dir(work.path / "net2", "v2");
  pack_module_dir(work.path / "net2", work.path / "net2.tar.gz");
  opt.version = "1.10.0";
  opt.description = "";
  publish_module(work.path / "net2.tar.gz", opt);
  opt.version = "1.2.0";
  make_module_dir(work.path / "net3", "v3");
  publish_module(work.path / "net3", opt);

  // A 2 MiB prerelease: large enough that curl uses Expect: 100-continue, and
  // @latest must still prefer the highest release.
  make_module_dir(work.path / "big", "big");
  {
    std::string noise(2 << 20, '\0');
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (char& c : noise) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = static_cast<char>(x);
    }
    std::ofstream(work.path / "big" / "assets" / "noise.bin", std::ios::binary) << noise;
  }
  opt.version = "3.0.0-rc.1";
  json big = publish_module(work.path / "big", opt);
  CHECK(big["size"].get<uint64_t>() > (2u << 20));
  opt.version = "1.2.0";

  json found = search_modules(reg.url, "image");
  REQUIRE(found["modules"].size() == 1);
  CHECK(found["modules"][0]["module"] == "acme/image-net");
  CHECK(found["modules"][0]["latest"] == "1.10.0");
  CHECK(found["modules"][0]["num_versions"] == 4);
  // Descriptions come from the module's metadata; search matches the latest one.
  CHECK(found["modules"][0]["description"] == "module v2");
  CHECK(search_modules(reg.url, "MODULE V2")["modules"].size() == 1);
  CHECK(search_modules(reg.url, "module v1")["modules"].size() == 0);
  CHECK(search_modules(reg.url, "nothing-like-this")["modules"].empty());

  json versions = list_versions(reg.url, "acme/image-net");
  REQUIRE(versions["versions"].size() == 4);
  CHECK(versions["versions"][0]["version"] == "3.0.0-rc.1");
  versions["versions"].erase(0);
  CHECK(versions["versions"][0]["version"] == "1.10.0");
  CHECK(versions["versions"][1]["version"] == "1.2.0");
  CHECK(versions["versions"][2]["version"] == "1.0.0");
  CHECK(versions["versions"][2]["description"] == "module v1");
  const json& sig = versions["versions"][2]["signatures"];
  REQUIRE(sig.size() == 1);
  CHECK(sig[0]["name"] == "default");
  CHECK(sig[0]["inputs"]["x"]["dtype"] == "float32");
  CHECK(sig[0]["outputs"].contains("y"));
  CHECK(versions["versions"][2]["size"] == fs::file_size(work.path / "again.tar.gz"));
  CHECK(versions["versions"][2]["published_at"].get<std::string>().size() == 20);

  ResolvedModule latest = resolve_registry_handle(reg.url, "acme/image-net@latest");
  CHECK(latest.version == "1.10.0");
  CHECK(latest.sha256 == hub::sha256_file(work.path / "net2.tar.gz"));
  ResolvedModule exact = resolve_registry_handle(reg.url, "acme/image-net@1.0.0");
  CHECK(exact.sha256 == local_sha);
  CHECK_THROWS_AS(resolve_registry_handle(reg.url, "acme/image-net@9.9.9"), hub::Error);
  CHECK_THROWS_AS(resolve_registry_handle(reg.url, "acme/missing"), hub::Error);

  download_to_file(exact.download_url, work.path / "dl.tar.gz", exact.sha256);
  CHECK(hub::sha256_file(work.path / "dl.tar.gz") == local_sha);
  CHECK(read_file(work.path / "dl.tar.gz") == read_file(work.path / "again.tar.gz"));
  CHECK(reg.temp_files() == 0);

  // The library never picks a registry by itself ($HUB_REGISTRY is the CLI's).
  ::setenv("HUB_REGISTRY", reg.url.c_str(), 1);
  CHECK_THROWS_AS(resolve_registry_handle("", "acme/image-net@1.2.0"), hub::Error);
  ::unsetenv("HUB_REGISTRY");

  RawResponse health = raw_request(reg.server->port(), http_request("GET", "/healthz", {}));
  CHECK(health.status == 200);
  CHECK(body_json(health)["status"] == "ok");
}

TEST_CASE("publishing needs a token for the right publisher") {
  TestRegistry reg;
  std::string other = reg.server->store().create_token("other");
  std::string bytes = module_archive("auth");
  RawResponse none = reg.put("acme/net", "1.0.0", bytes, "");
  CHECK(none.status == 401);
  CHECK(none.headers.count("www-authenticate") == 1);
  std::string wrong = reg.token;
  wrong[wrong.size() - 1] = wrong.back() == 'a' ? 'b' : 'a';  // right id, wrong secret
  CHECK(reg.put("acme/net", "1.0.0", bytes, wrong).status == 401);
  CHECK(reg.put("acme/net", "1.0.0", bytes, "garbage").status == 401);
  RawResponse forbidden = reg.put("acme/net", "1.0.0", bytes, other);
  CHECK(forbidden.status == 403);
  CHECK(error_code(forbidden) == "forbidden");
  CHECK(reg.put("other/net", "1.0.0", bytes, other).status == 201);
  CHECK(raw_request(reg.server->port(), http_request("GET", "/v1/modules/acme/net/versions.json", {})).status == 404);
  // Only the hash is stored.
  CHECK(read_file(reg.root() / "registry.db").find(reg.token) == std::string::npos);
  // The client maps refusals to PermissionDenied.
  TempDir work;
  make_module_dir(work.path / "m", "auth");
  PublishOptions opt{reg.url, "acme/net", "1.0.0", other, "", false};
  try {
    publish_module(work.path / "m", opt);
    FAIL("published with a foreign token");
  } catch (const hub::Error& e) {
    CHECK(e.code() == hub::Code::kPermissionDenied);
  }
}

TEST_CASE("versions are immutable") {
  TestRegistry reg;
  std::string first = module_archive("first");
  std::string second = module_archive("second");
  REQUIRE(reg.put("acme/net", "1.0.0", first).status == 201);
  RawResponse again = reg.put("acme/net", "1.0.0", second);
  CHECK(again.status == 409);
  CHECK(error_code(again) == "already_exists");
  CHECK(reg.put("acme/net", "1.0.0", first).status == 409);
  RawResponse got = raw_request(reg.server->port(), http_request("GET", "/v1/modules/acme/net/1.0.0/archive", {}));
  CHECK(got.status == 200);
  CHECK(got.body == first);
  std::string etag = hub::sha256_hex(first);
  etag.insert(etag.begin(), '"');
  etag.push_back('"');
  CHECK(got.headers["etag"] == etag);
  CHECK(reg.temp_files() == 0);
}

TEST_CASE("racing publishes of one version: exactly one wins") {
  TestRegistry reg;
  constexpr int kRacers = 8;
  std::vector<std::string> bodies;
  for (int i = 0; i < kRacers; ++i) bodies.push_back(module_archive("racer" + std::to_string(i)));
  std::vector<int> status(kRacers);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kRacers; ++i) {
    threads.emplace_back([&, i] {
      ready++;
      while (ready.load() < kRacers) std::this_thread::yield();
      status[i] = reg.put("acme/race", "2.0.0", bodies[i]).status;
    });
  }
  for (auto& t : threads) t.join();
  int created = 0, conflicts = 0, winner = -1;
  for (int i = 0; i < kRacers; ++i) {
    if (status[i] == 201) {
      ++created;
      winner = i;
    }
    if (status[i] == 409) ++conflicts;
  }
  CHECK(created == 1);
  CHECK(conflicts == kRacers - 1);
  REQUIRE(winner >= 0);
  auto rec = reg.server->store().version("acme", "race", "2.0.0");
  REQUIRE(rec);
  CHECK(rec->sha256 == hub::sha256_hex(bodies[winner]));
  RawResponse got = raw_request(reg.server->port(), http_request("GET", "/v1/blobs/sha256/" + rec->sha256, {}));
  CHECK(got.body == bodies[winner]);
  CHECK(reg.server->store().versions("acme", "race").size() == 1);
  CHECK(reg.temp_files() == 0);
}

TEST_CASE("hostile uploads are refused and leave nothing behind") {
  RegistryServerOptions opt;
  opt.max_upload_bytes = 4 << 20;
  hub::resolver::UnpackLimits limits;
  limits.max_total_bytes = 8 << 20;
  opt.validator = default_module_validator(limits);
  TestRegistry reg(opt);
  TempDir work;
  make_module_dir(work.path / "real", "real");
  const std::string pb = read_file(work.path / "real" / "module.pb");
  const std::string weights = read_file(work.path / "real" / "variables.safetensors");
  auto refused = [&](const std::string& bytes, int want_status, const std::string& version) {
    RawResponse r = reg.put("acme/evil", version, bytes);
    CHECK(r.status == want_status);
    if (r.status >= 400) CHECK(body_json(r).contains("error"));
    return r;
  };

  SUBCASE("path traversal") {
    // The same module is accepted without the hostile entry.
    std::string clean =
        make_tar({{"module.pb", TarEntry::kFile, pb}, {"variables.safetensors", TarEntry::kFile, weights}});
    refused(make_tar({{"module.pb", TarEntry::kFile, pb},
                      {"variables.safetensors", TarEntry::kFile, weights},
                      {"../../etc/evil", TarEntry::kFile, "x"}}),
            400, "1.0.0");
    refused(make_tar({{"module.pb", TarEntry::kFile, pb},
                      {"variables.safetensors", TarEntry::kFile, weights},
                      {"/abs/evil", TarEntry::kFile, "x"}}),
            400, "1.0.1");
    refused(make_tar({{"module.pb", TarEntry::kFile, pb},
                      {"variables.safetensors", TarEntry::kFile, weights},
                      {"link", TarEntry::kSymlink, "", "../../etc/passwd"}}),
            400, "1.0.2");
    refused(make_tar({{"module.pb", TarEntry::kFile, pb},
                      {"variables.safetensors", TarEntry::kFile, weights},
                      {"hard", TarEntry::kHardlink, "", "/etc/passwd"}}),
            400, "1.0.3");
    CHECK(fs::exists("/etc/passwd"));
    CHECK(reg.put("acme/clean", "1.0.0", clean).status == 201);
    CHECK(reg.server->store().versions("acme", "evil").empty());
    CHECK(reg.temp_files() == 0);
    return;  // the checks below expect an empty registry
  }
  SUBCASE("decompression bomb") {
    std::string bomb = make_tar({{"module.pb", TarEntry::kFile, pb},
                                 {"variables.safetensors", TarEntry::kFile, weights},
                                 {"assets/zeros.bin", TarEntry::kFile, std::string(64 << 20, '\0')}});
    CHECK(bomb.size() < opt.max_upload_bytes);  // small on the wire, 64 MiB unpacked
    RawResponse r = refused(bomb, 413, "1.0.0");
    CHECK(error_code(r) == "too_large");
  }
  SUBCASE("not a module") {
    refused(make_tar({{"README", TarEntry::kFile, "hello"}}), 400, "1.0.0");
    refused(make_tar({{"sub/module.pb", TarEntry::kFile, pb}}), 400, "1.0.1");
    refused(make_tar({{"module.pb", TarEntry::kFile, "\xff\xff\xff\xff"}}), 400, "1.0.2");  // not protobuf
    refused(make_tar({{"module.pb", TarEntry::kFile, pb}}), 400, "1.0.4");                  // weights missing
    refused(std::string(5000, 'z'), 400, "1.0.3");                                          // not an archive
  }
  SUBCASE("wrong digest") {
    std::string good = module_archive("x");
    RawResponse r = reg.put("acme/evil", "1.0.0", good, "\x01", hub::sha256_hex("something else"));
    CHECK(r.status == 400);
    CHECK(body_json(r)["error"]["message"].get<std::string>().find("mismatch") != std::string::npos);
    CHECK(reg.put("acme/evil", "1.0.0", good, "\x01", "not-hex").status == 400);
  }
  SUBCASE("body shorter than declared") {
    std::string good = module_archive("short");
    int fd = connect_loopback(reg.server->port());
    std::string head = "PUT /v1/modules/acme/evil/1.0.0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + reg.token +
                       "\r\nX-Hub-SHA256: " + hub::sha256_hex(good) +
                       "\r\nContent-Length: " + std::to_string(good.size()) + "\r\n\r\n";
    std::string partial = head + good.substr(0, good.size() / 2);
    REQUIRE(::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(partial.size()));
    ::shutdown(fd, SHUT_WR);
    RawResponse r = read_response(fd);
    ::close(fd);
    CHECK(r.status == 400);
  }
  SUBCASE("body longer than declared") {
    std::string good = module_archive("long");
    std::string req = "PUT /v1/modules/acme/evil/1.0.0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + reg.token +
                      "\r\nX-Hub-SHA256: " + hub::sha256_hex(good) +
                      "\r\nContent-Length: " + std::to_string(good.size() - 100) + "\r\n\r\n" + good;
    RawResponse r = raw_request(reg.server->port(), req);
    CHECK(r.status == 400);  // the declared length cuts the archive: digest mismatch
  }
  SUBCASE("2 GB declared is refused before the body is read") {
    std::string req = "PUT /v1/modules/acme/evil/1.0.0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + reg.token +
                      "\r\nX-Hub-SHA256: " + std::string(64, 'a') +
                      "\r\nContent-Length: 2147483648\r\nExpect: 100-continue\r\n\r\n";
    auto t0 = std::chrono::steady_clock::now();
    RawResponse r = raw_request(reg.server->port(), req, 5000);
    CHECK(r.status == 413);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(4));
    std::string plain = req;
    plain.replace(plain.find("Expect: 100-continue\r\n"), 22, "");
    CHECK(raw_request(reg.server->port(), plain + std::string(1000, 'x'), 5000).status == 413);
  }
  SUBCASE("no Content-Length / chunked") {
    std::string req = "PUT /v1/modules/acme/evil/1.0.0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + reg.token +
                      "\r\nX-Hub-SHA256: " + std::string(64, 'a') + "\r\n\r\n";
    CHECK(raw_request(reg.server->port(), req).status == 411);
    std::string chunked =
        "PUT /v1/modules/acme/evil/1.0.0 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
    CHECK(raw_request(reg.server->port(), chunked).status == 411);
  }
  SUBCASE("malformed JSON where JSON is accepted") {
    int port = reg.server->port();
    CHECK(raw_request(port, http_request("POST", "/v1/search", {}, "{\"query\": ")).status == 400);
    CHECK(raw_request(port, http_request("POST", "/v1/search", {}, "[1,2]")).status == 400);
    CHECK(raw_request(port, http_request("POST", "/v1/search", {}, "{\"query\": 5}")).status == 400);
    CHECK(raw_request(port, http_request("POST", "/v1/search", {}, std::string(100000, ' '))).status == 413);
    RawResponse ok = raw_request(port, http_request("POST", "/v1/search", {}, "{\"query\": \"x\"}"));
    CHECK(ok.status == 200);
    std::string good = module_archive("meta");
    std::string req = http_request("PUT", "/v1/modules/acme/evil/1.0.0",
                                   {{"Authorization", "Bearer " + reg.token},
                                    {"X-Hub-SHA256", hub::sha256_hex(good)},
                                    {"X-Hub-Metadata", "{\"description\": "}},
                                   good);
    CHECK(raw_request(port, req).status == 400);
  }
  SUBCASE("bad names and versions") {
    std::string good = module_archive("names");
    CHECK(reg.put("acme/..%2Fx", "1.0.0", good).status == 400);
    CHECK(reg.put("acme/A%20B", "1.0.0", good).status == 400);
    CHECK(reg.put("acme/.hidden", "1.0.0", good).status == 400);
    CHECK(reg.put("acme/net", "1.0", good).status == 400);
    CHECK(raw_request(reg.server->port(), "GET /v1/modules/acme/../../etc/passwd HTTP/1.1\r\n\r\n").status == 400);
    CHECK(raw_request(reg.server->port(), "GARBAGE\r\n\r\n").status == 400);
    CHECK(raw_request(reg.server->port(), http_request("GET", "/v1/blobs/sha256/zz", {})).status == 400);
    CHECK(raw_request(reg.server->port(), http_request("GET", "/v1/blobs/sha256/" + std::string(64, 'a'), {})).status ==
          404);
  }
  SUBCASE("oversized request head") {
    std::string req = "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n";
    CHECK(raw_request(reg.server->port(), req).status == 431);
  }
  CHECK(reg.server->store().search("").empty());
  CHECK(reg.temp_files() == 0);
  // The server still works after all that.
  CHECK(reg.put("acme/fine", "1.0.0", module_archive("fine")).status == 201);
}

TEST_CASE("downloads: ranges, If-Range, ETag, HEAD, 50 concurrent clients") {
  TestRegistry reg;
  std::string bytes = module_archive("ranges");
  REQUIRE(reg.put("acme/net", "1.0.0", bytes).status == 201);
  const int port = reg.server->port();
  const std::string sha = hub::sha256_hex(bytes);
  const std::string path = "/v1/blobs/sha256/" + sha;
  const std::string etag = "\"" + sha + "\"";
  const size_t n = bytes.size();

  RawResponse r = raw_request(port, http_request("GET", path, {{"Range", "bytes=10-19"}}));
  CHECK(r.status == 206);
  CHECK(r.body == bytes.substr(10, 10));
  CHECK(r.headers["content-range"] == "bytes 10-19/" + std::to_string(n));
  r = raw_request(port, http_request("GET", path, {{"Range", "bytes=-7"}}));
  CHECK(r.status == 206);
  CHECK(r.body == bytes.substr(n - 7));
  r = raw_request(port, http_request("GET", path, {{"Range", "bytes=5-"}, {"If-Range", etag}}));
  CHECK(r.status == 206);
  CHECK(r.body == bytes.substr(5));
  r = raw_request(port, http_request("GET", path, {{"Range", "bytes=5-"}, {"If-Range", "\"stale\""}}));
  CHECK(r.status == 200);
  CHECK(r.body == bytes);
  r = raw_request(port, http_request("GET", path, {{"Range", "bytes=" + std::to_string(n) + "-"}}));
  CHECK(r.status == 416);
  CHECK(r.headers["content-range"] == "bytes */" + std::to_string(n));
  r = raw_request(port, http_request("GET", path, {{"If-None-Match", etag}}));
  CHECK(r.status == 304);
  r = raw_request(port, http_request("HEAD", path, {}));
  CHECK(r.status == 200);
  CHECK(r.headers["content-length"] == std::to_string(n));

  // Keep-alive: two requests on one connection.
  int fd = connect_loopback(port);
  std::string one = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(fd, one.data(), one.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(one.size()));
  RawResponse first = read_response(fd);
  CHECK(first.status == 200);
  CHECK(first.headers["connection"] == "keep-alive");
  std::string two = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(fd, two.data(), two.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(two.size()));
  RawResponse second = read_response(fd);
  ::close(fd);
  CHECK(second.status == 200);
  CHECK(second.body == bytes);

  // 50 concurrent downloads through the client library, each verified.
  TempDir work;
  ResolvedModule mod = resolve_registry_handle(reg.url, "acme/net@1.0.0");
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 50; ++i) {
    threads.emplace_back([&, i] {
      try {
        fs::path out = work.path / ("dl" + std::to_string(i));
        download_to_file(mod.download_url, out, mod.sha256);
        if (read_file(out) == bytes) ok++;
      } catch (const std::exception& e) {
        MESSAGE("download failed: " << e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok.load() == 50);
}
