// The static export served by Debian's nginx (run unprivileged on loopback
// with a temp prefix and config), read through the normal client.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "hub/core/digest.h"
#include "registry/client/client.h"
#include "registry/server/export_static.h"
#include "registry_testutil.h"
#include "subprocess.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub::registry;
using namespace hub::registry::testing;

namespace {

const char* kNginx = "/usr/sbin/nginx";

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool port_open(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

TEST_CASE("static export served by nginx") {
  HUB_SKIP_UNLESS(fs::exists(kNginx), std::string(kNginx) + " not installed (Debian package nginx-light)");
  TestRegistry reg;
  std::string v1 = module_archive("static-1");
  std::string v2 = module_archive("static-2");
  REQUIRE(reg.put("acme/vision", "1.0.0", v1).status == 201);
  REQUIRE(reg.put("acme/vision", "1.1.0", v2).status == 201);
  TempDir site;
  fs::path out = site.path / "www";
  ExportStats stats = export_static(reg.server->store(), out);
  CHECK(stats.modules == 1);
  CHECK(stats.versions == 2);
  CHECK(stats.blobs == 2);
  CHECK(fs::exists(out / "v1" / "index.json"));
  CHECK(fs::exists(out / "v1" / "modules" / "acme" / "vision" / "versions.json"));
  CHECK(export_static(reg.server->store(), out).blobs == 0);  // re-export is incremental

  // nginx with everything under a temp prefix; master_process off keeps it one
  // unprivileged process (no user switch), daemon off keeps it our child.
  int port = free_port();
  fs::path prefix = site.path / "nginx";
  fs::create_directories(prefix / "logs");
  std::ofstream(prefix / "nginx.conf")
      << "master_process off;\ndaemon off;\nworker_processes 1;\npid " << (prefix / "nginx.pid").string()
      << ";\nerror_log " << (prefix / "logs" / "error.log").string() << " warn;\n"
      << "events { worker_connections 64; }\n"
      << "http {\n  access_log off;\n"
      << "  client_body_temp_path " << (prefix / "body").string() << ";\n"
      << "  proxy_temp_path " << (prefix / "proxy").string() << ";\n"
      << "  fastcgi_temp_path " << (prefix / "fastcgi").string() << ";\n"
      << "  uwsgi_temp_path " << (prefix / "uwsgi").string() << ";\n"
      << "  scgi_temp_path " << (prefix / "scgi").string() << ";\n"
      << "  types { application/json json; }\n  default_type application/octet-stream;\n"
      << "  server {\n    listen 127.0.0.1:" << port << ";\n    root " << out.string() << ";\n  }\n}\n";
  hub::testing::Child nginx =
      hub::testing::Child::spawn({kNginx, "-p", prefix.string() + "/", "-c", (prefix / "nginx.conf").string()});
  bool up = false;
  for (int i = 0; i < 100 && !up; ++i) {
    up = port_open(port);
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!up) MESSAGE("nginx error log: " << read_file(prefix / "logs" / "error.log"));
  CHECK(up);
  if (up) {
    std::string url = "http://127.0.0.1:" + std::to_string(port);
    ResolvedModule latest = resolve_registry_handle(url, "acme/vision@latest");
    CHECK(latest.version == "1.1.0");
    CHECK(latest.sha256 == hub::sha256_hex(v2));
    CHECK(latest.download_url == url + "/v1/blobs/sha256/" + hub::sha256_hex(v2));
    download_to_file(latest.download_url, site.path / "got.tar.gz", latest.sha256);
    CHECK(read_file(site.path / "got.tar.gz") == v2);
    ResolvedModule old = resolve_registry_handle(url, "acme/vision@1.0.0");
    download_to_file(old.download_url, site.path / "old.tar.gz", old.sha256);
    CHECK(read_file(site.path / "old.tar.gz") == v1);
    // Search falls back to the index on a static registry.
    auto found = search_modules(url, "VISION");
    REQUIRE(found["modules"].size() == 1);
    CHECK(found["modules"][0]["latest"] == "1.1.0");
    CHECK(list_versions(url, "acme/vision")["versions"].size() == 2);
    // Ranges come from nginx itself.
    RawResponse r =
        raw_request(port, http_request("GET", "/v1/blobs/sha256/" + hub::sha256_hex(v1), {{"Range", "bytes=0-9"}}));
    CHECK(r.status == 206);
    CHECK(r.body == v1.substr(0, 10));
  }
  nginx.kill(SIGTERM);
  nginx.wait(10, "nginx");
}
