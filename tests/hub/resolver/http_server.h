// A small fault-injecting HTTP/1.1 server on 127.0.0.1 for resolver tests and
// benchmarks. Each connection gets its own thread and serves one request
// ("Connection: close"), so connections() equals the number of requests.
// A route's handler writes the raw response itself through HttpConn, which is
// what lets tests truncate bodies, lie in Content-Length, drip bytes, drop the
// connection midway or send broken redirects.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace hub::testing {

struct HttpRequest {
  std::string method, target, path;            // path = target without the query
  std::map<std::string, std::string> headers;  // keys lower-case
  std::string header(const std::string& key) const {
    auto it = headers.find(key);
    return it == headers.end() ? "" : it->second;
  }
};

class HttpConn {
 public:
  HttpConn(int fd, const std::atomic<bool>* stopping) : fd_(fd), stopping_(stopping) {}
  // False when the peer has gone (or the server is stopping).
  bool send(std::string_view data);
  bool stopping() const { return stopping_->load(); }
  // Sleeps up to `ms`, returning early (false) when the server stops.
  bool sleep_ms(int ms);

 private:
  int fd_;
  const std::atomic<bool>* stopping_;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpConn&)>;

class HttpServer {
 public:
  HttpServer();
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path) const;
  void route(const std::string& path, HttpHandler handler);
  // Connections accepted so far (all paths).
  int connections() const { return connections_.load(); }
  // Requests received for `path` so far, and their headers.
  int requests(const std::string& path) const;
  std::vector<HttpRequest> log(const std::string& path) const;

 private:
  void accept_loop();
  void serve(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  mutable std::mutex mu_;
  std::map<std::string, HttpHandler> routes_;
  std::map<std::string, std::vector<HttpRequest>> log_;
  std::vector<std::thread> workers_;
  std::thread acceptor_;
};

// "HTTP/1.1 <status> <reason>\r\n<headers>Connection: close\r\n\r\n".
std::string http_head(int status, const std::vector<std::pair<std::string, std::string>>& headers);

// Serves `body` honouring Range (single "bytes=N-" ranges) and If-Range
// against `etag`; sends at most `cut_after` body bytes (then closes the
// connection), which simulates a connection dropped midway.
void serve_body(const HttpRequest& req, HttpConn& conn, const std::string& body, const std::string& etag = "",
                size_t cut_after = static_cast<size_t>(-1));

}  // namespace hub::testing
