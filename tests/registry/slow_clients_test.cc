// Slow and hostile clients cannot starve the registry server (issue 13 item
// 4): request heads that trickle in hold no worker, one client's connections
// are capped without touching other clients, and heads and bodies slower than
// the minimum rate are cut off.
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "hub/core/digest.h"
#include "registry_testutil.h"

using namespace hub::registry;
using namespace hub::registry::testing;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// True when the server has sent nothing and not closed `fd` yet.
bool still_waiting(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

// Sends `bytes` one at a time, `gap_ms` apart; stops early when the server
// closes. Returns the response read afterwards (or what is left of one).
RawResponse trickle(int fd, const std::string& bytes, int gap_ms) {
  for (char c : bytes) {
    if (::send(fd, &c, 1, MSG_NOSIGNAL) != 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
    if (!still_waiting(fd)) break;  // a response or EOF arrived
  }
  return read_response(fd, 5000);
}

}  // namespace

TEST_CASE("issue13: 40 slowloris connections do not delay healthy requests") {
  // Fewer workers than slow connections: a head that trickles in must not hold one.
  RegistryServerOptions opt;
  opt.http.worker_threads = 4;
  TestRegistry reg(opt);
  const int port = reg.server->port();
  std::vector<int> slow;
  for (int i = 0; i < 40; ++i) {
    slow.push_back(connect_loopback(port));
    std::string start = "GET /healthz HTTP/1.1\r\nX-Slow: ";
    REQUIRE(::send(slow.back(), start.data(), start.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(start.size()));
  }
  std::atomic<bool> done{false};
  std::thread drip([&] {  // one header byte per connection every half second
    while (!done.load()) {
      for (int fd : slow) ::send(fd, "a", 1, MSG_NOSIGNAL);
      for (int i = 0; i < 5 && !done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the slow heads are in

  auto t0 = Clock::now();
  for (int i = 0; i < 10; ++i) {
    CHECK(raw_request(port, http_request("GET", "/healthz", {}), 15000).status == 200);
    CHECK(raw_request(port, http_request("GET", "/v1/index.json", {}), 15000).status == 200);
  }
  CHECK(reg.put("acme/healthy", "1.0.0", module_archive("healthy")).status == 201);
  double elapsed = seconds_since(t0);
  done = true;
  drip.join();
  CHECK_MESSAGE(elapsed < 2.0, "21 healthy requests took " << elapsed << " s beside 40 slow heads");
  for (int fd : slow) ::close(fd);
}

TEST_CASE("issue13: 300 connections from one client get 503 for that client only") {
  TestRegistry reg;
  const int port = reg.server->port();
  const int cap = HttpLimits{}.max_connections_per_client;
  std::vector<int> flood;
  for (int i = 0; i < 300; ++i) flood.push_back(connect_loopback(port, "127.0.0.1"));
  // Another client (another loopback source address) is served at once.
  RawResponse other = raw_request(port, http_request("GET", "/healthz", {}), 5000, "127.0.0.2");
  REQUIRE(other.status == 200);
  // The flooding client's connections past its cap were refused, in the order it opened them.
  int refused = 0;
  for (int i = cap; i < 300; ++i) {
    RawResponse r = read_response(flood[i], 5000);
    if (r.status == 503) ++refused;
    if (i == cap) CHECK(r.headers["retry-after"] == "1");
  }
  CHECK(refused == 300 - cap);
  for (int i = 0; i < cap; ++i) CHECK(still_waiting(flood[i]));
  CHECK(raw_request(port, http_request("GET", "/healthz", {}), 5000, "127.0.0.1").status == 503);
  CHECK(raw_request(port, http_request("GET", "/v1/index.json", {}), 5000, "127.0.0.2").status == 200);
  // Closing some of them gives the client its slots back.
  for (int i = 0; i < 10; ++i) ::close(flood[i]);
  RawResponse again;
  for (int attempt = 0; attempt < 50 && again.status != 200; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    again = raw_request(port, http_request("GET", "/healthz", {}), 5000, "127.0.0.1");
  }
  CHECK(again.status == 200);
  for (int i = 10; i < 300; ++i) ::close(flood[i]);
}

TEST_CASE("issue13: a request head slower than the minimum rate is cut off") {
  RegistryServerOptions opt;
  opt.http.min_rate_bytes_per_s = 100;
  opt.http.rate_window_ms = 300;       // at least 30 bytes every 300 ms
  opt.http.header_timeout_ms = 30000;  // far away: the rate, not the timeout, must cut
  TestRegistry reg(opt);
  const int port = reg.server->port();
  const std::string head = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(300, 'p') + "\r\n\r\n";

  SUBCASE("at 20 bytes/s: 408 after the first window") {
    int fd = connect_loopback(port);
    auto t0 = Clock::now();
    RawResponse r = trickle(fd, head, 50);
    double elapsed = seconds_since(t0);
    ::close(fd);
    CHECK(r.status == 408);
    CHECK(r.body.find("minimum rate") != std::string::npos);
    CHECK_MESSAGE(elapsed < 3.0, "cut after " << elapsed << " s");
  }
  SUBCASE("at ~400 bytes/s over several windows: served") {
    int fd = connect_loopback(port);
    for (size_t off = 0; off < head.size(); off += 40) {
      std::string piece = head.substr(off, 40);
      REQUIRE(::send(fd, piece.data(), piece.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(piece.size()));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    CHECK(read_response(fd, 5000).status == 200);
    ::close(fd);
  }
  SUBCASE("a connection that sends nothing is closed without a response") {
    int fd = connect_loopback(port);
    auto t0 = Clock::now();
    RawResponse r = read_response(fd, 5000);
    ::close(fd);
    CHECK(r.closed_without_response);
    CHECK(seconds_since(t0) < 3.0);
  }
}

TEST_CASE("issue13: a request body slower than the minimum rate is cut off and leaves nothing") {
  RegistryServerOptions opt;
  opt.http.min_rate_bytes_per_s = 100;
  opt.http.rate_window_ms = 300;
  TestRegistry reg(opt);
  const int port = reg.server->port();
  std::string good = module_archive("slow-body");
  std::string head = "PUT /v1/modules/acme/slow/1.0.0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + reg.token +
                     "\r\nX-Hub-SHA256: " + hub::sha256_hex(good) +
                     "\r\nContent-Length: " + std::to_string(good.size()) + "\r\n\r\n";
  SUBCASE("trickling") {
    int fd = connect_loopback(port);
    REQUIRE(::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size()));
    auto t0 = Clock::now();
    RawResponse r = trickle(fd, good, 50);
    ::close(fd);
    CHECK(r.status == 408);
    CHECK(seconds_since(t0) < 3.0);
  }
  SUBCASE("stalled after a good start") {
    int fd = connect_loopback(port);
    std::string start = head + good.substr(0, good.size() / 2);
    REQUIRE(::send(fd, start.data(), start.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(start.size()));
    RawResponse r = read_response(fd, 5000);
    ::close(fd);
    CHECK(r.status == 408);
  }
  CHECK(reg.temp_files() == 0);
  CHECK_FALSE(reg.server->store().has_version("acme", "slow", "1.0.0"));
  // The same upload at full speed goes through.
  CHECK(reg.put("acme/slow", "1.0.0", good).status == 201);
}

TEST_CASE("connections past the server-wide cap get 503") {
  RegistryServerOptions opt;
  opt.http.max_connections = 2;
  opt.http.worker_threads = 2;
  TestRegistry reg(opt);
  int a = connect_loopback(reg.server->port());
  int b = connect_loopback(reg.server->port(), "127.0.0.2");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  RawResponse r = raw_request(reg.server->port(), http_request("GET", "/healthz", {}), 3000, "127.0.0.3");
  CHECK(r.status == 503);
  CHECK(r.headers["retry-after"] == "1");
  ::close(a);
  ::close(b);
  RawResponse again;
  for (int attempt = 0; attempt < 50 && again.status != 200; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    again = raw_request(reg.server->port(), http_request("GET", "/healthz", {}));
  }
  CHECK(again.status == 200);
}

TEST_CASE("keep-alive connections wait for their next request without a worker") {
  RegistryServerOptions opt;
  opt.http.worker_threads = 1;
  opt.http.keepalive_timeout_ms = 1500;
  TestRegistry reg(opt);
  const int port = reg.server->port();
  // Two idle keep-alive connections, then a third client: all on one worker.
  std::vector<int> fds;
  for (int i = 0; i < 2; ++i) {
    fds.push_back(connect_loopback(port));
    std::string one = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    REQUIRE(::send(fds.back(), one.data(), one.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(one.size()));
    RawResponse r = read_response(fds.back());
    CHECK(r.status == 200);
    CHECK(r.headers["connection"] == "keep-alive");
  }
  auto t0 = Clock::now();
  CHECK(raw_request(port, http_request("GET", "/healthz", {})).status == 200);
  CHECK(seconds_since(t0) < 1.0);  // before the idle connections time out
  // Two pipelined requests in one send are both answered, in order.
  std::string two = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/index.json HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(fds[0], two.data(), two.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(two.size()));
  CHECK(read_response(fds[0]).body.find("ok") != std::string::npos);
  CHECK(read_response(fds[0]).body.find("modules") != std::string::npos);
  // An idle connection is closed after keepalive_timeout_ms.
  RawResponse idle = read_response(fds[1], 3000);
  CHECK(idle.closed_without_response);
  for (int fd : fds) ::close(fd);
}
