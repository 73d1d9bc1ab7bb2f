// A small HTTP/1.1 server: POSIX sockets, one event thread and a bounded pool
// of worker threads, keep-alive, and hard bounds on everything a client
// controls, so slow or hostile clients cannot starve the others.
//
// Threads. The event thread accepts connections and reads every request head
// with epoll, without blocking: a head that trickles in costs a descriptor and
// a buffer, never a worker. A complete head is parsed by parse_request_head()
// and handed, with its connection, to a worker, which reads the body, runs the
// handler and writes the response; a keep-alive connection then goes back to
// the event thread to wait for its next head.
//
// Limits (HttpLimits, each with its unit) and what a client gets past them:
//   max_header_bytes       bytes in a request head (request line + fields)  431, closed
//   max_headers            header fields in a head                           431, closed
//   header_timeout_ms      ms from the start of a head to its end (a head    408, closed
//                          starts when the connection is accepted, or at the
//                          first byte of a keep-alive connection's next request)
//   keepalive_timeout_ms   ms an idle keep-alive connection waits for the     closed
//                          first byte of its next request
//   min_rate_bytes_per_s,  every transfer (request head, request body,        head/body: 408,
//   rate_window_ms         response body) must move at least                  response: closed
//                          max(1, min_rate_bytes_per_s * rate_window_ms/1000)
//                          bytes in each rate_window_ms window from its start
//                          (so a transfer that stalls for a window is cut too)
//   max_connections        connections open at once, all clients, any state  503, closed
//   max_connections_per_client  connections open at once from one client     503 to that client's
//                          (client_key(): an IPv4 address or an IPv6 /64)      new connections only
//   worker_threads         handlers running at once; complete requests past
//                          this wait in a queue (bounded by the connection caps)
// A connection closed before it sent a byte gets no response. Every 503
// carries Retry-After: 1. Limits are checked at least every 100 ms, so a cut
// comes at most ~100 ms after the limit passes.
//
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
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "hub/core/fd.h"

namespace hub::registry {

struct HttpLimits {
  size_t max_header_bytes = 16 * 1024;   // bytes
  size_t max_headers = 64;               // header fields
  int header_timeout_ms = 10000;         // milliseconds
  int keepalive_timeout_ms = 5000;       // milliseconds
  uint64_t min_rate_bytes_per_s = 1024;  // bytes per second, averaged over each window
  int rate_window_ms = 5000;             // milliseconds
  int max_connections = 1024;            // connections
  int max_connections_per_client = 64;   // connections
  int worker_threads = 32;               // threads
};

struct HttpRequest {
  std::string method;
  std::string target;        // as sent
  std::string path;          // target before '?', not decoded
  std::string query_string;  // after '?'
  int minor_version = 1;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::optional<uint64_t> content_length;
  std::string client;  // client_key() of the peer (set by the server, not the parser)

  // First header with this (lower-case) name, or nullptr.
  const std::string* header(std::string_view name) const;
  // Decoded value of a query parameter ("" if absent).
  std::string query(std::string_view key) const;
};

// Why a request head was refused: the status to answer with (400, 411, 431,
// 505), an error code slug and a message that quotes nothing from the head
// beyond 40 printable bytes.
struct HeadError {
  int status = 400;
  std::string code;
  std::string message;
};

// Parses a request head: the request line and header fields, each ended by
// CRLF except the last, without the blank line that ends the head (so
// "GET / HTTP/1.1\r\nHost: x"). Pure (no I/O, no state) and total: any
// bytes give a request or a HeadError, never a crash or an exception other
// than std::bad_alloc. Refused (HeadError):
//   - a head over limits.max_header_bytes, or over limits.max_headers fields: 431;
//   - a CR or LF outside a CRLF pair; a request line other than
//     "METHOD SP TARGET SP VERSION" with a token method and an origin-form
//     target ("/..." of visible ASCII): 400; a version other than HTTP/1.0 or
//     HTTP/1.1: 505 when it is "HTTP/d.d", else 400;
//   - a field line without ':' or with a name that is not a token (this also
//     refuses whitespace before ':' and obsolete line folding); a value with
//     a control character other than HTAB: 400;
//   - Transfer-Encoding: 411; Content-Length that is not 1-19 digits, or
//     repeated with different values: 400.
// On success, names are lower-cased, values trimmed of SP/HTAB, path and
// query_string split at the first '?', content_length set when sent.
std::variant<HttpRequest, HeadError> parse_request_head(std::string_view head, const HttpLimits& limits);

// Reads the request body (exactly Content-Length bytes, or none).
class BodyReader {
 public:
  virtual ~BodyReader() = default;
  // Up to n bytes; 0 at the end of the body. Throws hub::Error: kDeadlineExceeded
  // when the client is slower than the minimum rate, kDataLoss when it closes
  // before sending the whole body.
  virtual size_t read(char* buf, size_t n) = 0;
  virtual uint64_t remaining() const = 0;
};

// A file region sent as the response body; the descriptor is closed when the
// last copy of the shared_ptr holding it is destroyed.
struct FileBody {
  Fd fd;
  uint64_t offset = 0;
  uint64_t length = 0;
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
// The key per-client limits count by, from a numeric address: the IPv4
// address ("192.0.2.1"; IPv4-mapped IPv6 too), or the /64 prefix of an IPv6
// address ("2001:db8:1:2::/64", as one host usually holds a whole /64).
// Empty when `address` is not a numeric IPv4 or IPv6 address.
std::string client_key(std::string_view address);

class HttpServer {
 public:
  HttpServer(HttpLimits limits, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens (port 0 picks a free port). Throws kUnavailable naming host:port.
  void listen(const std::string& host, int port);
  int port() const { return port_; }
  // Starts the event thread and workers; listen() first.
  void start();
  // Stops accepting, closes connections waiting for a head, lets in-flight
  // requests finish their current read/write slice (<= 100 ms), joins all
  // threads. Idempotent.
  void stop();

 private:
  struct Conn;
  enum class Admit { kOk, kServerFull, kClientFull };

  // Event thread.
  void event_loop();
  void accept_ready();
  void watch(std::unique_ptr<Conn> conn);
  void read_head(int fd);
  bool try_dispatch(int fd);
  void close_head(int fd, int status, std::string_view code, std::string_view message);
  void sweep();
  // Workers.
  void worker_loop();
  bool serve(Conn& conn, const HttpRequest& req);
  void give_back(std::unique_ptr<Conn> conn);
  // Connection slots (any thread).
  Admit admit(const std::string& client);
  void release(const std::string& client);

  HttpLimits limits_;
  HttpHandler handler_;
  Fd listen_fd_;
  Fd epoll_fd_;
  Fd wake_fd_;  // eventfd: stop, or connections given back
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  std::thread event_thread_;
  std::vector<std::thread> workers_;

  std::mutex slots_mu_;  // connection counts, by client and in all
  std::unordered_map<std::string, int> per_client_;
  int open_ = 0;

  // Owned by the event thread: connections whose head is being read, by fd.
  std::unordered_map<int, std::unique_ptr<Conn>> heads_;

  std::mutex mu_;  // guards ready_ and returned_
  std::condition_variable cv_;
  std::deque<std::pair<std::unique_ptr<Conn>, HttpRequest>> ready_;  // complete heads for workers
  std::vector<std::unique_ptr<Conn>> returned_;                      // keep-alive connections back from workers
};

}  // namespace hub::registry
