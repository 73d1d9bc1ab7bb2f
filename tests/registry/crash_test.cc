// kill -9 of a registry server process in the middle of an upload: after a
// restart no version is visible, no row exists and no temp file is left.
#include <doctest/doctest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "hub/core/digest.h"
#include "registry/client/client.h"
#include "registry_testutil.h"
#include "subprocess.h"

namespace fs = std::filesystem;
using namespace hub::registry;
using namespace hub::registry::testing;

namespace {

// A registry server on `args[0]` in a fresh process (tests/subprocess.h):
// writes its port as one line, then serves until killed.
HUB_TEST_CHILD_MODE(registry_server) {
  RegistryServerOptions opt;
  opt.root = args.at(0);
  opt.http.worker_threads = 2;
  RegistryServer server(opt);
  server.start();
  std::printf("%05d\n", server.port());
  std::fflush(stdout);
  while (true) ::pause();
}

int64_t count_rows(const fs::path& db_path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM versions", -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  int64_t n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return n;
}

}  // namespace

TEST_CASE("kill -9 during an upload leaves no visible version, row or temp file") {
  TempDir dir;
  fs::path root = dir.path / "root";
  std::string token;
  {
    Store store(root);
    token = store.create_token("acme");
  }
  hub::testing::Child server_process = hub::testing::Child::self("registry_server", {root.string()});
  const int port = std::stoi(server_process.read_exactly(6, 60));

  // First a complete publish, which must survive the crash.
  std::string done = module_archive("done");
  std::string req = http_request("PUT", "/v1/modules/acme/net/1.0.0",
                                 {{"Authorization", "Bearer " + token}, {"X-Hub-SHA256", hub::sha256_hex(done)}}, done);
  REQUIRE(raw_request(port, req).status == 201);

  // Then an upload cut off half-way by kill -9.
  // An incompressible ~1 MiB module so the upload takes many reads.
  std::string noise(1 << 20, '\0');
  uint64_t x = 88172645463325252ull;
  for (char& c : noise) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  make_module_dir(dir.path / "bigmod", "big");
  std::ofstream(dir.path / "bigmod" / "assets" / "noise.bin", std::ios::binary) << noise;
  pack_module_dir(dir.path / "bigmod", dir.path / "big.tar.gz");
  std::string big = read_file(dir.path / "big.tar.gz");
  REQUIRE(big.size() > (1u << 20));
  int fd = connect_loopback(port);
  std::string head = "PUT /v1/modules/acme/net/2.0.0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
                     "\r\nX-Hub-SHA256: " + hub::sha256_hex(big) + "\r\nContent-Length: " + std::to_string(big.size()) +
                     "\r\n\r\n" + big.substr(0, big.size() / 2);
  REQUIRE(::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size()));
  // Wait until the server has spooled part of it to a temp file.
  bool spooled = false;
  for (int i = 0; i < 200 && !spooled; ++i) {
    for (const auto& e : fs::directory_iterator(root / "tmp"))
      if (fs::file_size(e.path()) > 0) spooled = true;
    if (!spooled) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(spooled);
  server_process.kill(SIGKILL);
  CHECK(server_process.wait(10, "registry server").signal == SIGKILL);
  ::close(fd);
  CHECK(count_rows(root / "registry.db") == 1);

  // Restart in-process on the same root.
  RegistryServerOptions opt;
  opt.root = root;
  opt.http.worker_threads = 2;
  RegistryServer server(opt);
  server.start();
  int tmp_files = 0;
  for (const auto& e : fs::directory_iterator(root / "tmp")) {
    (void)e;
    ++tmp_files;
  }
  CHECK(tmp_files == 0);
  CHECK(count_rows(root / "registry.db") == 1);
  CHECK_FALSE(server.store().has_version("acme", "net", "2.0.0"));
  auto versions = server.store().versions("acme", "net");
  REQUIRE(versions.size() == 1);
  CHECK(versions[0].version == "1.0.0");
  RawResponse got = raw_request(server.port(), http_request("GET", "/v1/modules/acme/net/1.0.0/archive", {}));
  CHECK(got.body == done);
  CHECK(raw_request(server.port(), http_request("GET", "/v1/modules/acme/net/2.0.0", {})).status == 404);
  // Every blob on disk is referenced by a row.
  int blobs = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "blobs"))
    if (e.is_regular_file()) ++blobs;
  CHECK(blobs == 1);
  // And the interrupted version can now be published.
  std::string again = http_request("PUT", "/v1/modules/acme/net/2.0.0",
                                   {{"Authorization", "Bearer " + token}, {"X-Hub-SHA256", hub::sha256_hex(big)}}, big);
  CHECK(raw_request(server.port(), again).status == 201);
}
