#include "registry_testutil.h"

#include <archive.h>
#include <archive_entry.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "hub/core/digest.h"
#include "hub/module/module.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/state.h"
#include "registry/client/client.h"

namespace fs = std::filesystem;

namespace hub::registry::testing {

void make_module_dir(const fs::path& dir, const std::string& seed) {
  // y = a*x + b, with a derived from the seed so different seeds give different bytes.
  auto build = [&](hub::ModuleBuilder& b) {
    hub::Scope s = b.scope();
    hub::Output a = hub::ops::variable(s, "a", {});
    hub::Output c = hub::ops::variable(s, "b", {});
    hub::Output x = hub::ops::placeholder(s, hub::DType::kFloat32, {hub::kUnknownDim}, "x");
    b.add_signature("default", {{"x", x}}, {{"y", hub::ops::add(s, hub::ops::mul(s, a, x), c, "y")}});
    b.set_metadata({"test", "module " + seed, "1", "Apache-2.0", "tests"});
  };
  hub::Module m(hub::create_module_spec(build));
  float a = static_cast<float>(std::hash<std::string>{}(seed) % 1000) / 10.0f;
  m.variable_map().at("a").assign(a);
  m.variable_map().at("b").assign(2.0f);
  m.export_to(dir.string());
  fs::create_directories(dir / "assets");
  std::ofstream(dir / "assets" / "labels.txt") << "cat\ndog\n" << seed << "\n";
}

std::string module_archive(const std::string& seed) {
  TempDir d;
  make_module_dir(d.path / "m", seed);
  pack_module_dir(d.path / "m", d.path / "m.tar.gz");
  return read_file(d.path / "m.tar.gz");
}

int connect_loopback(int port, const char* source) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  REQUIRE(::inet_pton(AF_INET, source, &from.sin_addr) == 1);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) == 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

RawResponse read_response(int fd, int timeout_ms) {
  RawResponse r;
  std::string in;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  size_t head_end = std::string::npos;
  uint64_t want = UINT64_MAX;
  while (true) {
    if (head_end == std::string::npos) {
      head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::string head = in.substr(0, head_end);
        std::istringstream ss(head);
        std::string line;
        std::getline(ss, line);
        r.status = std::atoi(line.substr(9, 3).c_str());
        while (std::getline(ss, line)) {
          if (!line.empty() && line.back() == '\r') line.pop_back();
          size_t c = line.find(':');
          if (c == std::string::npos) continue;
          std::string k = line.substr(0, c);
          for (char& ch : k) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
          std::string v = line.substr(c + 1);
          while (!v.empty() && v.front() == ' ') v.erase(0, 1);
          r.headers[k] = v;
        }
        if (r.headers.count("content-length")) want = std::stoull(r.headers["content-length"]);
        if (r.status == 304) want = 0;
      }
    }
    if (head_end != std::string::npos && in.size() - head_end - 4 >= want) break;
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) break;
    // Never read past this response: a pipelined next response stays in the socket.
    char buf[65536];
    size_t room = 1;
    if (head_end != std::string::npos && want != UINT64_MAX)
      room = static_cast<size_t>(std::min<uint64_t>(sizeof buf, want - (in.size() - head_end - 4)));
    else if (head_end != std::string::npos)
      room = sizeof buf;  // no length: the body runs to the close
    ssize_t n = ::recv(fd, buf, room, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  if (head_end == std::string::npos) {
    r.closed_without_response = true;
    return r;
  }
  r.body = in.substr(head_end + 4);
  if (want != UINT64_MAX && r.body.size() > want) r.body.resize(want);
  return r;
}

RawResponse raw_request(int port, const std::string& request, int timeout_ms, const char* source) {
  int fd = connect_loopback(port, source);
  size_t off = 0;
  while (off < request.size()) {
    ssize_t n = ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may refuse early and close
    off += static_cast<size_t>(n);
  }
  RawResponse r = read_response(fd, timeout_ms);
  ::close(fd);
  return r;
}

std::string http_request(const std::string& method, const std::string& target,
                         const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
                         bool add_length) {
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  if (add_length && (!body.empty() || method == "PUT" || method == "POST"))
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return req + "\r\n" + body;
}

TestRegistry::TestRegistry(RegistryServerOptions options) {
  options.root = root();
  if (options.http.worker_threads == 32) options.http.worker_threads = 8;
  server = std::make_unique<RegistryServer>(options);
  token = server->store().create_token("acme");
  server->start();
  url = "http://127.0.0.1:" + std::to_string(server->port());
}

RawResponse TestRegistry::put(const std::string& module, const std::string& version, const std::string& bytes,
                              const std::string& token_override, const std::string& sha_override) {
  std::vector<std::pair<std::string, std::string>> h;
  std::string tok = token_override == "\x01" ? token : token_override;
  if (!tok.empty()) h.emplace_back("Authorization", "Bearer " + tok);
  h.emplace_back("X-Hub-SHA256", sha_override.empty() ? sha256_hex(bytes) : sha_override);
  return raw_request(server->port(), http_request("PUT", "/v1/modules/" + module + "/" + version, h, bytes));
}

int TestRegistry::temp_files() const {
  int n = 0;
  for (const auto& e : fs::directory_iterator(root() / "tmp")) {
    (void)e;
    ++n;
  }
  return n;
}

}  // namespace hub::registry::testing
