// A small HTTP/1.1 server: POSIX sockets, one acceptor thread and a bounded
// pool of worker threads, keep-alive, and hard bounds on everything a client
// controls, so a slow or hostile client cannot exhaust it:
//   - the request head (line + headers) must fit in max_header_bytes (else 431)
//     and arrive within header_timeout_ms of the first byte wait (slowloris);
//   - a body read that makes no progress for body_idle_timeout_ms aborts;
//   - a response write that makes no progress for write_timeout_ms aborts;
//   - at most max_connections are accepted at once (queued + being served);
//     beyond that a connection gets 503 and is closed at once;
//   - an idle keep-alive connection is closed after keepalive_timeout_ms, or
//     after ~100 ms idle when other connections wait and no worker is free.
// Request bodies need Content-Length (Transfer-Encoding is refused with 411)
// and are streamed to the handler through BodyReader, which also answers
// "Expect: 100-continue" on first read. Handlers run on worker threads and
// must be thread-safe; an exception from a handler becomes a 500 (hub::Error
// codes are mapped by the handler itself).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace hub::registry {

struct HttpLimits {
  size_t max_header_bytes = 16 * 1024;
  size_t max_headers = 64;
  int header_timeout_ms = 10000;
  int keepalive_timeout_ms = 5000;
  int body_idle_timeout_ms = 15000;
  int write_timeout_ms = 30000;
  int max_connections = 256;
  int worker_threads = 32;
};

struct HttpRequest {
  std::string method;
  std::string target;        // as sent
  std::string path;          // target before '?', not decoded
  std::string query_string;  // after '?'
  int minor_version = 1;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::optional<uint64_t> content_length;

  // First header with this (lower-case) name, or nullptr.
  const std::string* header(std::string_view name) const;
  // Decoded value of a query parameter ("" if absent).
  std::string query(std::string_view key) const;
};

// Reads the request body (exactly Content-Length bytes, or none).
class BodyReader {
 public:
  virtual ~BodyReader() = default;
  // Up to n bytes; 0 at the end of the body. Throws hub::Error: kDeadlineExceeded
  // when the client stalls, kDataLoss when it closes before sending the whole body.
  virtual size_t read(char* buf, size_t n) = 0;
  virtual uint64_t remaining() const = 0;
};

// A file region sent as the response body; the fd is closed when the last
// copy is destroyed.
struct FileBody {
  int fd = -1;
  uint64_t offset = 0;
  uint64_t length = 0;
  FileBody(int f, uint64_t off, uint64_t len) : fd(f), offset(off), length(len) {}
  ~FileBody();
  FileBody(const FileBody&) = delete;
  FileBody& operator=(const FileBody&) = delete;
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Length is added
  std::string body;
  std::shared_ptr<FileBody> file;  // when set, replaces body
  bool close = false;              // close the connection after this response

  static HttpResponse json(int status, std::string body);
  HttpResponse& add(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&, BodyReader&)>;

std::string_view http_reason(int status);
// Percent-decoding; '+' becomes ' ' only when plus_as_space (query strings).
std::string url_decode(std::string_view s, bool plus_as_space = false);
// {"error":{"code":CODE,"message":MESSAGE}}
std::string error_json(std::string_view code, std::string_view message);

class HttpServer {
 public:
  HttpServer(HttpLimits limits, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens (port 0 picks a free port). Throws kUnavailable naming host:port.
  void listen(const std::string& host, int port);
  int port() const { return port_; }
  // Starts the acceptor and workers; listen() first.
  void start();
  // Stops accepting, lets in-flight requests finish their current read/write
  // slice, joins all threads. Idempotent.
  void stop();

 private:
  void accept_loop();
  void worker_loop();
  void serve_connection(int fd);
  bool queue_waiting();

  HttpLimits limits_;
  HttpHandler handler_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  std::thread acceptor_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int> queue_;
  int active_ = 0;        // queued + being served
  int idle_workers_ = 0;  // workers waiting for a connection
};

}  // namespace hub::registry
