// TLS verification and the connect timeout, on loopback only: a self-signed
// certificate made by the `openssl` CLI, an HTTPS server (`openssl s_server
// -WWW`) serving a real module archive, and a listening socket whose accept
// queue is full so that further SYNs are dropped.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "fetch_testutil.h"
#include "hub/core/error.h"
#include "hub/module/module.h"
#include "hub/module/module_testutil.h"
#include "hub/resolver/resolver.h"
#include "resolver_testutil.h"
#include "subprocess.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

// A real module (half_plus_two with a = 0.5, b = 2) as a tar.gz.
std::string half_plus_two_archive(const fs::path& work) {
  Module m(create_module_spec(half_plus_two));
  m.variable_map().at("a").assign(0.5f);
  m.variable_map().at("b").assign(2.0f);
  const fs::path dir = work / "hp2";
  m.export_to(dir.string());
  return make_tar(dir_entries(dir));
}

// `openssl s_server -WWW` in `dir` on a free 127.0.0.1 port, killed on destruction.
class TlsServer {
 public:
  TlsServer(const fs::path& dir, const fs::path& cert, const fs::path& key) {
    const fs::path log = dir / "s_server.log";
    const std::string cmd = "cd '" + dir.string() + "' && exec openssl s_server -accept 127.0.0.1:0 -cert '" +
                            cert.string() + "' -key '" + key.string() + "' -WWW > '" + log.string() + "' 2>&1";
    server_ = hub::testing::Child::spawn({"/bin/sh", "-c", cmd}, {.env = {}, .capture_stdout = false});
    // It prints "ACCEPT 127.0.0.1:PORT" once listening.
    for (int i = 0; i < 200 && port_ == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
      std::string text = read_file(log);
      size_t at = text.find("ACCEPT 127.0.0.1:");
      if (at != std::string::npos && text.find('\n', at) != std::string::npos)
        port_ = std::atoi(text.c_str() + at + 17);
    }
    if (port_ == 0) FAIL("openssl s_server did not start: " << read_file(log));
  }
  std::string url(const std::string& path) const { return "https://127.0.0.1:" + std::to_string(port_) + path; }

 private:
  hub::testing::Child server_;  // killed with its process group on destruction
  int port_ = 0;
};

}  // namespace

TEST_CASE("fetch over TLS: an untrusted certificate is refused; trusting it as the CA bundle works") {
  REQUIRE_MESSAGE(hub::testing::run_shell("openssl version > /dev/null 2>&1") == 0,
                  "the openssl CLI (Debian package 'openssl') is needed by this test");
  Sandbox sb;
  const fs::path www = sb.root / "www";
  fs::create_directories(www);
  const fs::path cert = sb.root / "cert.pem", key = sb.root / "key.pem";
  // A self-signed certificate for the IP address 127.0.0.1 (CN and subjectAltName).
  const std::string req =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
      " -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout '" +
      key.string() + "' -out '" + cert.string() + "' > /dev/null 2>&1";
  REQUIRE(hub::testing::run_shell(req) == 0);
  write_file(www / "m.tar.gz", half_plus_two_archive(sb.root));
  TlsServer server(www, cert, key);
  const std::string url = server.url("/m.tar.gz");
  auto o = sb.options();
  o.fetch.max_retries = 0;

  SUBCASE("the system CAs do not trust a self-signed certificate") {
    Error e = resolve_error(url, o);
    CHECK(e.code() == Code::kUnavailable);
    CHECK_MESSAGE(contains(e, "module '" + url + "'"), e.what());
    CHECK_MESSAGE(contains(e, "certificate verification failed"), e.what());
    CHECK_MESSAGE((contains(e, "self-signed") || contains(e, "self signed")), e.what());
    CHECK_MESSAGE(contains(e, "SSL_CERT_FILE"), e.what());
    check_cache_empty(sb);
  }
  SUBCASE("a CA bundle holding the certificate: the fetch succeeds and the module loads") {
    o.fetch.ca_bundle = cert.string();
    fs::path dir = resolve_dir(url, o);
    Module m(load_module_spec(dir.string()));
    CHECK(m({4, -2}).to_vector<float>() == std::vector<float>{4, 1});
    // A second resolve is a cache hit: the same directory.
    CHECK(resolve_dir(url, o) == dir);
  }
  SUBCASE("the bundle is also taken from $SSL_CERT_FILE; an unreadable one is named") {
    const char* before = std::getenv("SSL_CERT_FILE");
    const std::string saved = before ? before : "";
    ::setenv("SSL_CERT_FILE", cert.c_str(), 1);
    CHECK(resolver::FetchOptions::from_env().ca_bundle == cert.string());
    ::unsetenv("SSL_CERT_FILE");
    CHECK(resolver::FetchOptions::from_env().ca_bundle.empty());
    if (before) ::setenv("SSL_CERT_FILE", saved.c_str(), 1);
    o.fetch.ca_bundle = (sb.root / "missing.pem").string();
    Error e = resolve_error(url, o);
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK_MESSAGE(contains(e, "missing.pem"), e.what());
    CHECK_MESSAGE(contains(e, "CA bundle"), e.what());
    check_cache_empty(sb);
  }
}

TEST_CASE("fetch: a server whose accept queue is full times out connecting after the configured time") {
  // listen(fd, 0): Linux keeps one connection in the accept queue and then
  // drops SYNs, so a further connect() gets no answer at all.
  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(lfd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(lfd, 0) == 0);
  socklen_t len = sizeof addr;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  // Fill the queue with connections nobody accepts, until one gets no answer.
  std::vector<int> fillers;
  bool silent = false;
  for (int i = 0; i < 16 && !silent; ++i) {
    int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    REQUIRE(c >= 0);
    fillers.push_back(c);
    ::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    pollfd p{c, POLLOUT, 0};
    silent = ::poll(&p, 1, 300) == 0;  // no SYN-ACK within 300 ms
  }
  REQUIRE_MESSAGE(silent, "the kernel answered every connection to a full accept queue");

  Sandbox sb;
  auto o = sb.options();
  o.fetch.max_retries = 0;
  o.fetch.connect_timeout_s = 1;
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/m.tar.gz";
  auto t0 = std::chrono::steady_clock::now();
  Error e = resolve_error(url, o);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(e.code() == Code::kDeadlineExceeded);
  CHECK_MESSAGE(contains(e, "module '" + url + "'"), e.what());
  CHECK_MESSAGE(contains(e, "timed out after 1 s connecting"), e.what());
  CHECK(took >= 0.9);
  CHECK(took < 4);
  check_cache_empty(sb);
  for (int c : fillers) ::close(c);
  ::close(lfd);
}
