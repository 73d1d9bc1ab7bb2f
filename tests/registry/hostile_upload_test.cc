// Issue 13: JSON nested deep enough to overflow a recursive reader, from a
// registry (client side) and inside an upload (server side), and damaged
// gzip streams in uploads. Neither process may crash; both refuse with a
// clear error and nothing is published.
#include <doctest/doctest.h>

#include <string>

#include "../hub/resolver/http_server.h"
#include "hub/core/error.h"
#include "registry/client/client.h"
#include "registry_testutil.h"

namespace fs = std::filesystem;
using namespace hub::registry;
using namespace hub::registry::testing;

namespace {

// 100000 levels: 200 KB of text that gzip turns into about 1 KB.
std::string deep_array() { return std::string(100000, '[') + std::string(100000, ']'); }

void serve_json(hub::testing::HttpServer& server, const std::string& path, int status, const std::string& body) {
  server.route(path, [status, body](const hub::testing::HttpRequest&, hub::testing::HttpConn& conn) {
    conn.send(hub::testing::http_head(
                  status, {{"Content-Type", "application/json"}, {"Content-Length", std::to_string(body.size())}}) +
              body);
  });
}

template <class F>
std::string error_of(hub::Code code, F&& f) {
  try {
    f();
  } catch (const hub::Error& e) {
    CHECK_MESSAGE(e.code() == code, e.what());
    CHECK(std::string(e.what()).size() < 600);  // the document is never quoted
    return e.what();
  }
  FAIL("no error");
  return "";
}

}  // namespace

TEST_CASE("deeply nested registry responses are refused as Corruption, without crashing") {
  hub::testing::HttpServer server;
  const std::string base = server.url("");
  serve_json(server, "/v1/modules/acme/deep/versions.json", 200, R"({"versions": )" + deep_array() + "}");
  serve_json(server, "/v1/search", 200, R"({"modules": )" + deep_array() + "}");
  serve_json(server, "/v1/modules/acme/gone/versions.json", 404, R"({"error": )" + deep_array() + "}");
  serve_json(server, "/v1/modules/acme/text/versions.json", 200, std::string(100000, '['));

  CHECK(error_of(hub::Code::kCorruption, [&] { list_versions(base, "acme/deep"); }).find("nested deeper than") !=
        std::string::npos);
  CHECK(error_of(hub::Code::kCorruption, [&] {
          resolve_registry_handle(base, "acme/deep@latest");
        }).find("nested deeper than") != std::string::npos);
  CHECK(error_of(hub::Code::kCorruption, [&] { search_modules(base, "x"); }).find("nested deeper than") !=
        std::string::npos);
  CHECK(error_of(hub::Code::kCorruption, [&] { list_versions(base, "acme/text"); }).find("nested deeper than") !=
        std::string::npos);
  // An error body that is not a usable error document: the status still decides the code.
  error_of(hub::Code::kNotFound, [&] { list_versions(base, "acme/gone"); });
}

TEST_CASE("an upload whose weights file nests JSON deeply is refused, and the server keeps serving") {
  TestRegistry reg;
  TempDir work;
  make_module_dir(work.path / "m", "deep");
  // Replace the weights with a header whose shape nests 100000 arrays.
  const std::string header = R"({"a":{"dtype":"F32","shape":[)" + deep_array() + R"(],"data_offsets":[0,4]}})";
  std::string weights;
  for (int i = 0; i < 8; ++i) weights += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  weights += header + std::string(4, '\0');
  const std::string bytes = make_tar({{"module.pb", TarEntry::kFile, read_file(work.path / "m" / "module.pb")},
                                      {"variables.safetensors", TarEntry::kFile, weights}});
  CHECK(bytes.size() < 4096);  // small on the wire
  RawResponse r = reg.put("acme/deep", "1.0.0", bytes);
  CHECK(r.status == 400);
  CHECK(r.body.find("nested deeper than") != std::string::npos);
  CHECK(r.body.size() < 2000);
  CHECK(reg.server->store().versions("acme", "deep").empty());
  CHECK(reg.temp_files() == 0);
  // Still serving: a health check and a good publish.
  CHECK(raw_request(reg.server->port(), http_request("GET", "/healthz", {})).status == 200);
  CHECK(reg.put("acme/good", "1.0.0", module_archive("good")).status == 201);
}

TEST_CASE("uploads whose gzip stream is damaged are refused and nothing is published") {
  TestRegistry reg;
  const std::string good = module_archive("gzip");
  // pack_module_dir writes one gzip member with nothing after it.
  REQUIRE(good.size() > 8);
  std::string crc = good;
  crc[crc.size() - 8] = static_cast<char>(crc[crc.size() - 8] ^ 1);
  std::string isize = good;
  isize[isize.size() - 4] = static_cast<char>(isize[isize.size() - 4] + 1);
  struct Case {
    std::string what, bytes, needle;
  };
  for (const Case& c :
       {Case{"crc", crc, "CRC-32"}, Case{"isize", isize, "ISIZE"}, Case{"trailing", good + "junk", "trailing data"}}) {
    CAPTURE(c.what);
    RawResponse r = reg.put("acme/damaged", "1.0.0", c.bytes);
    CHECK(r.status == 400);
    CHECK(r.body.find(c.needle) != std::string::npos);
    CHECK(reg.server->store().versions("acme", "damaged").empty());
    CHECK(reg.temp_files() == 0);
  }
  CHECK(reg.put("acme/damaged", "1.0.0", good).status == 201);
}
