// The shipped nginx front end (registry/nginx/hub-registry.conf, path in
// HUB_NGINX_CONF) in front of `hub registry serve` (HUB_EXE), both started
// here: Debian's nginx runs unprivileged on loopback with a temp prefix and a
// self-signed certificate made by the openssl command; a module is published
// and fetched through HTTPS by the hub binary, trusting that certificate
// through $SSL_CERT_FILE.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "registry_testutil.h"
#include "subprocess.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub::registry::testing;
using hub::testing::Child;
using hub::testing::ChildOptions;

namespace {

const char* kNginx = "/usr/sbin/nginx";

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

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

bool wait_for_port(int port) {
  for (int i = 0; i < 200; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

struct Ran {
  int code = -1;
  std::string out, err;
};

// Runs a program to completion; stderr goes to a file read back afterwards.
Ran run(const fs::path& work, std::vector<std::string> argv,
        std::vector<std::pair<std::string, std::string>> env = {}) {
  fs::path err = work / "stderr.txt";
  env.emplace_back("HUB_TEST_STDERR", err.string());
  argv.insert(argv.begin(), {"/bin/sh", "-c", "exec \"$@\" 2>\"$HUB_TEST_STDERR\"", "sh"});
  ChildOptions opt;
  opt.env = env;
  auto result = Child::spawn(argv, opt).wait(60, argv[4]);
  return {result.exited ? result.code : -1, result.output, read_file(err)};
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

}  // namespace

TEST_CASE("hub registry serve behind the shipped nginx configuration, over HTTPS") {
  const std::string hub = env_or_empty("HUB_EXE"), conf_template = env_or_empty("HUB_NGINX_CONF");
  REQUIRE_MESSAGE(!hub.empty(), "HUB_EXE is not set (run through meson test)");
  REQUIRE_MESSAGE(!conf_template.empty(), "HUB_NGINX_CONF is not set (run through meson test)");
  HUB_SKIP_UNLESS(fs::exists(kNginx), std::string(kNginx) + " not installed (Debian package nginx-light)");
  HUB_SKIP_UNLESS(fs::exists("/usr/bin/openssl"), "/usr/bin/openssl not installed (Debian package openssl)");
  TempDir dir;
  const fs::path work = dir.path;

  // A self-signed certificate for 127.0.0.1.
  Ran cert = run(work, {"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
                        (work / "key.pem").string(), "-out", (work / "cert.pem").string()});
  REQUIRE_MESSAGE(cert.code == 0, cert.err);

  // hub registry serve, on a port it picks.
  Ran token_run =
      run(work, {hub, "registry", "token", "create", "--root", (work / "root").string(), "--publisher", "acme"});
  REQUIRE_MESSAGE(token_run.code == 0, token_run.err);
  const std::string token = token_run.out.substr(0, token_run.out.find('\n'));
  REQUIRE(token.rfind("hubt_", 0) == 0);
  Child server = Child::spawn({hub, "registry", "serve", "--root", (work / "root").string(), "--port", "0",
                               "--trusted_proxy", "127.0.0.1", "--max_connections_per_client", "512"});
  std::string line;
  while (line.empty() || line.back() != '\n') line += server.read_exactly(1, 30);
  const std::string prefix_line = "listening on http://127.0.0.1:";
  REQUIRE_MESSAGE(line.rfind(prefix_line, 0) == 0, line);
  const std::string hub_addr = "127.0.0.1:" + std::to_string(std::stoi(line.substr(prefix_line.size())));

  // nginx: the shipped file with its placeholders filled in, included in a
  // minimal unprivileged main configuration (no master process, no daemon,
  // everything under the temp prefix).
  const int https_port = free_port(), http_port = free_port();
  fs::path prefix = work / "nginx";
  fs::create_directories(prefix / "logs");
  const fs::path access_log = prefix / "logs" / "access.log";
  std::string site = read_file(conf_template);
  for (auto [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"@SERVER_NAME@", "127.0.0.1"},
                                                        {"@HTTPS_LISTEN@", "127.0.0.1:" + std::to_string(https_port)},
                                                        {"@HTTP_LISTEN@", "127.0.0.1:" + std::to_string(http_port)},
                                                        {"@TLS_CERT@", (work / "cert.pem").string()},
                                                        {"@TLS_KEY@", (work / "key.pem").string()},
                                                        {"@HUB_ADDR@", hub_addr},
                                                        {"@ACCESS_LOG@", access_log.string()}})
    site = replace_all(site, key, value);
  REQUIRE_MESSAGE(site.find('@') == std::string::npos, "unfilled placeholder in " << conf_template);
  std::ofstream(prefix / "hub-registry.conf") << site;
  std::ofstream(prefix / "nginx.conf") << "master_process off;\ndaemon off;\nworker_processes 1;\npid "
                                       << (prefix / "nginx.pid").string() << ";\n"
                                       << "error_log " << (prefix / "logs" / "error.log").string() << " warn;\n"
                                       << "events { worker_connections 256; }\n"
                                       << "http {\n"
                                       << "  client_body_temp_path " << (prefix / "body").string() << ";\n"
                                       << "  proxy_temp_path " << (prefix / "proxy").string() << ";\n"
                                       << "  fastcgi_temp_path " << (prefix / "fastcgi").string() << ";\n"
                                       << "  uwsgi_temp_path " << (prefix / "uwsgi").string() << ";\n"
                                       << "  scgi_temp_path " << (prefix / "scgi").string() << ";\n"
                                       << "  include " << (prefix / "hub-registry.conf").string() << ";\n}\n";
  Child nginx = Child::spawn({kNginx, "-p", prefix.string() + "/", "-c", (prefix / "nginx.conf").string()});
  bool up = wait_for_port(https_port);
  if (!up) MESSAGE("nginx error log: " << read_file(prefix / "logs" / "error.log"));
  REQUIRE(up);
  const std::string url = "https://127.0.0.1:" + std::to_string(https_port);
  const std::pair<std::string, std::string> trust{"SSL_CERT_FILE", (work / "cert.pem").string()};

  // Publish through HTTPS. The module is large enough (2 MiB of noise) that
  // nginx buffers the upload in a temp file before hub sees it.
  make_module_dir(work / "module", "nginx");
  {
    std::string noise(2 << 20, '\0');
    uint64_t x = 0x2545F4914F6CDD1Dull;
    for (char& c : noise) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = static_cast<char>(x);
    }
    std::ofstream(work / "module" / "assets" / "noise.bin", std::ios::binary) << noise;
  }
  Ran pub = run(work,
                {hub, "publish", (work / "module").string(), "--registry", url, "--name", "acme/tls", "--version",
                 "1.0.0", "--token", token},
                {trust});
  REQUIRE_MESSAGE(pub.code == 0, pub.err);
  CHECK(pub.out == "acme/tls@1.0.0\n");

  // Fetch it back through HTTPS into a fresh cache: the same files.
  Ran fetch = run(work, {hub, "fetch", "-q", "acme/tls@1.0.0"},
                  {trust, {"HUB_REGISTRY", url}, {"HUB_CACHE_DIR", (work / "cache").string()}});
  REQUIRE_MESSAGE(fetch.code == 0, fetch.err);
  fs::path fetched = fetch.out.substr(0, fetch.out.find('\n'));
  CHECK(read_file(fetched / "module.pb") == read_file(work / "module" / "module.pb"));
  CHECK(read_file(fetched / "assets" / "noise.bin") == read_file(work / "module" / "assets" / "noise.bin"));

  // The certificate is really checked: without $SSL_CERT_FILE the client refuses it.
  Ran untrusted = run(work, {hub, "search", "tls", "--registry", url});
  CHECK(untrusted.code != 0);
  CHECK_MESSAGE(untrusted.err.find("certificate") != std::string::npos, untrusted.err);

  // Plain HTTP only redirects.
  RawResponse redirect = raw_request(http_port, http_request("GET", "/v1/index.json", {}));
  CHECK(redirect.status == 301);
  CHECK(redirect.headers["location"].rfind("https://", 0) == 0);

  // The access log has the requests, never the token.
  nginx.kill(SIGTERM);
  nginx.wait(10, "nginx");
  std::string log = read_file(access_log);
  CHECK(log.find("\"PUT /v1/modules/acme/tls/1.0.0 HTTP/1.1\" 201") != std::string::npos);
  CHECK(log.find("/v1/blobs/sha256/") != std::string::npos);
  CHECK(log.find(token.substr(22)) == std::string::npos);
  CHECK(log.find(token.substr(5, 16)) == std::string::npos);
  // nginx says (at warn level) when it spools a request body to a temp file.
  CHECK(read_file(prefix / "logs" / "error.log").find("buffered to a temporary file") != std::string::npos);
  server.kill(SIGTERM);
  CHECK(server.wait(10, "hub registry serve").code == 0);
}
