#include "registry/server/http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/core/logging.h"

namespace hub::registry {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSliceMs = 100;  // how often blocked waits look at the stop flag

int ms_left(Clock::time_point deadline) {
  auto d = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return d < 0 ? 0 : static_cast<int>(d);
}

std::string lower(std::string_view s) { return to_lower(std::string(s)); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

// Outcome of waiting on a socket.
enum class Wait { kReady, kTimeout, kStopping };

Wait wait_fd(int fd, short events, Clock::time_point deadline, const std::atomic<bool>& stopping,
             const std::function<bool()>& give_up = nullptr) {
  for (bool first = true;; first = false) {
    if (stopping.load()) return Wait::kStopping;
    if (!first && give_up && give_up()) return Wait::kTimeout;  // only after a full idle slice
    int left = ms_left(deadline);
    if (left == 0) return Wait::kTimeout;
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, std::min(left, kSliceMs));
    if (rc > 0) return Wait::kReady;
    if (rc < 0 && errno != EINTR) return Wait::kReady;  // let recv/send report the error
  }
}

struct ConnectionClosed {};  // internal: stop serving this connection silently

class Connection {
 public:
  Connection(int fd, const HttpLimits& limits, const std::atomic<bool>& stopping)
      : fd_(fd), limits_(limits), stopping_(stopping) {}

  // Appends received bytes to in_; returns false when the peer closed.
  // Throws ConnectionClosed on timeout/stop/error.
  bool fill(Clock::time_point deadline, const std::function<bool()>& give_up = nullptr) {
    Wait w = wait_fd(fd_, POLLIN, deadline, stopping_, give_up);
    if (w != Wait::kReady) throw ConnectionClosed{};
    char buf[16384];
    while (true) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        in_.append(buf, static_cast<size_t>(n));
        return true;
      }
      if (n == 0) return false;
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      throw ConnectionClosed{};
    }
  }

  void send_all(const char* p, size_t n) {
    write_all(n, [&](uint64_t left) {
      ssize_t w = ::send(fd_, p, left, MSG_NOSIGNAL);
      if (w > 0) p += w;
      return w;
    });
  }

  void send_file(int file_fd, uint64_t offset, uint64_t length) {
    off_t off = static_cast<off_t>(offset);
    write_all(length, [&](uint64_t left) {
      return ::sendfile(fd_, file_fd, &off, std::min<uint64_t>(left, 1 << 20));
    });
  }

  int fd() const { return fd_; }
  std::string& in() { return in_; }
  const HttpLimits& limits() const { return limits_; }
  const std::atomic<bool>& stopping() const { return stopping_; }

 private:
  // Calls write(left) until `left` bytes are out; write returns what ::send or
  // ::sendfile returned and advances its own position. Waits for POLLOUT while
  // the socket is full, up to write_timeout_ms without progress. 0 written
  // (peer gone, or the file shrank under sendfile: Content-Length cannot be
  // honored) closes the connection.
  template <class Write> void write_all(uint64_t left, Write write) {
    auto deadline = Clock::now() + std::chrono::milliseconds(limits_.write_timeout_ms);
    while (left > 0) {
      ssize_t w = write(left);
      if (w > 0) {
        left -= static_cast<uint64_t>(w);
        deadline = Clock::now() + std::chrono::milliseconds(limits_.write_timeout_ms);
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (wait_fd(fd_, POLLOUT, deadline, stopping_) != Wait::kReady) throw ConnectionClosed{};
        continue;
      }
      throw ConnectionClosed{};
    }
  }

  int fd_;
  const HttpLimits& limits_;
  const std::atomic<bool>& stopping_;
  std::string in_;
};

class SocketBodyReader : public BodyReader {
 public:
  SocketBodyReader(Connection& conn, uint64_t length, bool expect_continue)
      : conn_(conn), remaining_(length), expect_continue_(expect_continue) {}

  size_t read(char* buf, size_t n) override {
    if (remaining_ == 0 || n == 0) return 0;
    if (expect_continue_) {
      expect_continue_ = false;
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      try {
        conn_.send_all(kContinue, sizeof kContinue - 1);
      } catch (const ConnectionClosed&) {
        failed_ = true;
        throw_error(Code::kDataLoss, "client went away before sending the request body");
      }
    }
    std::string& in = conn_.in();
    if (in.empty()) {
      auto deadline = Clock::now() + std::chrono::milliseconds(conn_.limits().body_idle_timeout_ms);
      bool open;
      try {
        open = conn_.fill(deadline);
      } catch (const ConnectionClosed&) {
        failed_ = true;
        throw_error(Code::kDeadlineExceeded, "request body stalled: " + std::to_string(remaining_) +
                                                 " bytes still expected");
      }
      if (!open) {
        failed_ = true;
        throw_error(Code::kDataLoss, "client closed the connection with " +
                                         std::to_string(remaining_) +
                                         " bytes of the declared Content-Length unsent");
      }
    }
    size_t take = static_cast<size_t>(std::min<uint64_t>({n, remaining_, in.size()}));
    std::memcpy(buf, in.data(), take);
    in.erase(0, take);
    remaining_ -= take;
    return take;
  }
  uint64_t remaining() const override { return remaining_; }
  bool failed() const { return failed_; }
  bool continue_pending() const { return expect_continue_; }

 private:
  Connection& conn_;
  uint64_t remaining_;
  bool expect_continue_;
  bool failed_ = false;
};

}  // namespace

std::string error_json(std::string_view code, std::string_view message) {
  std::string out = "{\"error\":{\"code\":\"";
  out += code;
  out += "\",\"message\":\"";
  for (char c : message) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  out += "\"}}";
  return out;
}

namespace {

void write_response(Connection& conn, const HttpResponse& resp, bool head_only, bool keep_alive) {
  std::string head = "HTTP/1.1 " + std::to_string(resp.status) + " " +
                     std::string(http_reason(resp.status)) + "\r\n";
  bool has_type = false;
  for (const auto& [k, v] : resp.headers) {
    head += k + ": " + v + "\r\n";
    if (lower(k) == "content-type") has_type = true;
  }
  uint64_t length = resp.file ? resp.file->length : resp.body.size();
  if (!has_type && length > 0) head += "Content-Type: application/octet-stream\r\n";
  head += "Content-Length: " + std::to_string(length) + "\r\n";
  head += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  head += "Server: hub-registry\r\n\r\n";
  if (!head_only && !resp.file) {
    head += resp.body;  // one send for small responses
    conn.send_all(head.data(), head.size());
    return;
  }
  conn.send_all(head.data(), head.size());
  if (!head_only && resp.file) conn.send_file(resp.file->fd, resp.file->offset, resp.file->length);
}

// Sends a short error response and closes; best effort.
void reject(Connection& conn, int status, std::string_view code, std::string_view message) {
  HttpResponse r = HttpResponse::json(status, error_json(code, message));
  try {
    write_response(conn, r, false, false);
  } catch (const ConnectionClosed&) {
  }
}

}  // namespace

FileBody::~FileBody() {
  if (fd >= 0) ::close(fd);
}

HttpResponse HttpResponse::json(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers.emplace_back("Content-Type", "application/json");
  return r;
}

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return &v;
  return nullptr;
}

std::string url_decode(std::string_view s, bool plus_as_space) {
  std::string out;
  out.reserve(s.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else if (plus_as_space && s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string HttpRequest::query(std::string_view key) const {
  std::string_view q = query_string;
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    size_t eq = pair.find('=');
    if (url_decode(pair.substr(0, eq), true) == key)
      return eq == std::string_view::npos ? std::string() : url_decode(pair.substr(eq + 1), true);
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return {};
}

std::string_view http_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 416: return "Range Not Satisfiable";
    case 422: return "Unprocessable Content";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
  }
  return "Unknown";
}

HttpServer::HttpServer(HttpLimits limits, HttpHandler handler)
    : limits_(limits), handler_(std::move(handler)) {}

HttpServer::~HttpServer() {
  stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  for (int fd : wake_pipe_)
    if (fd >= 0) ::close(fd);
}

void HttpServer::listen(const std::string& host, int port) {
  const std::string where = host + ":" + std::to_string(port);
  if (port < 0 || port > 65535) throw_error(Code::kInvalidArgument, "port out of range: " + where);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) throw_error(Code::kInvalidArgument, "cannot resolve listen address " + where + ": " + gai_strerror(rc));
  std::string last_error = "no address";
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 512) == 0) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
      port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
      listen_fd_ = fd;
      break;
    }
    last_error = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(res);
  if (listen_fd_ < 0) throw_error(Code::kUnavailable, "cannot listen on " + where + ": " + last_error);
}

void HttpServer::start() {
  HUB_CHECK(listen_fd_ >= 0, "listen() before start()");
  HUB_CHECK(!started_);
  if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) throw_error(Code::kIOError, "pipe failed");
  started_ = true;
  for (int i = 0; i < std::max(1, limits_.worker_threads); ++i) workers_.emplace_back([this] { worker_loop(); });
  acceptor_ = std::thread([this] { accept_loop(); });
}

void HttpServer::stop() {
  if (!started_ || stopping_.exchange(true)) return;
  char c = 0;
  (void)!::write(wake_pipe_[1], &c, 1);
  if (acceptor_.joinable()) acceptor_.join();
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  for (int fd : queue_) ::close(fd);
  queue_.clear();
}

bool HttpServer::queue_waiting() {
  std::lock_guard<std::mutex> lock(mu_);
  return !queue_.empty() && idle_workers_ == 0;  // an idle worker will take it anyway
}

void HttpServer::accept_loop() {
  while (!stopping_.load()) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    int rc = ::poll(fds, 2, -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents) break;
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) ::usleep(10000);  // out of descriptors: back off
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (active_ < limits_.max_connections) {
        ++active_;
        queue_.push_back(fd);
        cv_.notify_one();
        continue;
      }
    }
    static const std::string kBusyBody = error_json("busy", "too many connections, retry later");
    static const std::string kBusy =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: " +
        std::to_string(kBusyBody.size()) + "\r\nConnection: close\r\nRetry-After: 1\r\n\r\n" + kBusyBody;
    (void)!::send(fd, kBusy.data(), kBusy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
  }
}

void HttpServer::worker_loop() {
  // sendfile() has no MSG_NOSIGNAL: block SIGPIPE in this thread so a client
  // hanging up mid-download gives EPIPE instead of killing the process.
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
  while (true) {
    int fd;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++idle_workers_;
      cv_.wait(lock, [&] { return stopping_.load() || !queue_.empty(); });
      --idle_workers_;
      if (stopping_.load()) return;
      fd = queue_.front();
      queue_.pop_front();
    }
    try {
      serve_connection(fd);
    } catch (const ConnectionClosed&) {
    } catch (const std::exception& e) {
      HUB_LOG(Warning) << "registry http: connection error: " << e.what();
    }
    ::close(fd);
    std::lock_guard<std::mutex> lock(mu_);
    --active_;
  }
}

void HttpServer::serve_connection(int fd) {
  Connection conn(fd, limits_, stopping_);
  bool first = true;
  while (!stopping_.load()) {
    // 1. The request head, bounded in size and time.
    std::string& in = conn.in();
    auto head_deadline = Clock::now() + std::chrono::milliseconds(limits_.header_timeout_ms);
    if (!first && in.empty()) {
      // Idle keep-alive: wait for the first byte, yielding to waiting connections.
      auto idle_deadline = Clock::now() + std::chrono::milliseconds(limits_.keepalive_timeout_ms);
      if (!conn.fill(idle_deadline, [this] { return queue_waiting(); })) return;
      head_deadline = Clock::now() + std::chrono::milliseconds(limits_.header_timeout_ms);
    }
    first = false;
    size_t head_end;
    while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
      if (in.size() > limits_.max_header_bytes) {
        reject(conn, 431, "header_too_large",
               "request head exceeds " + std::to_string(limits_.max_header_bytes) + " bytes");
        return;
      }
      try {
        if (!conn.fill(head_deadline)) return;
      } catch (const ConnectionClosed&) {
        if (!stopping_.load() && !in.empty())
          reject(conn, 408, "timeout", "request head not received in time");
        return;
      }
    }
    if (head_end > limits_.max_header_bytes) {
      reject(conn, 431, "header_too_large",
             "request head exceeds " + std::to_string(limits_.max_header_bytes) + " bytes");
      return;
    }
    std::string head = in.substr(0, head_end);
    in.erase(0, head_end + 4);

    // 2. Parse.
    HttpRequest req;
    size_t line_end = head.find("\r\n");
    std::string_view line = std::string_view(head).substr(0, line_end);
    size_t sp1 = line.find(' ');
    size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
      reject(conn, 400, "bad_request", "malformed request line");
      return;
    }
    req.method = std::string(line.substr(0, sp1));
    req.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
    std::string_view version = line.substr(sp2 + 1);
    bool method_ok = !req.method.empty();
    for (char c : req.method) method_ok = method_ok && is_token_char(c);
    if (!method_ok || req.target.empty() || req.target[0] != '/') {
      reject(conn, 400, "bad_request", "malformed request line");
      return;
    }
    if (version == "HTTP/1.1") {
      req.minor_version = 1;
    } else if (version == "HTTP/1.0") {
      req.minor_version = 0;
    } else {
      reject(conn, 505, "bad_version", "only HTTP/1.0 and HTTP/1.1 are supported");
      return;
    }
    size_t q = req.target.find('?');
    req.path = req.target.substr(0, q);
    if (q != std::string::npos) req.query_string = req.target.substr(q + 1);
    bool bad_header = false;
    size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      size_t end = head.find("\r\n", pos);
      if (end == std::string::npos) end = head.size();
      std::string_view h = std::string_view(head).substr(pos, end - pos);
      pos = end + 2;
      size_t colon = h.find(':');
      if (colon == 0 || colon == std::string_view::npos) {
        bad_header = true;
        break;
      }
      std::string_view name = h.substr(0, colon);
      for (char c : name) bad_header = bad_header || !is_token_char(c);
      req.headers.emplace_back(lower(name), std::string(trim(h.substr(colon + 1))));
      if (req.headers.size() > limits_.max_headers) {
        reject(conn, 431, "header_too_large", "too many header fields");
        return;
      }
    }
    if (bad_header) {
      reject(conn, 400, "bad_request", "malformed header field");
      return;
    }
    if (req.header("transfer-encoding")) {
      reject(conn, 411, "length_required", "Transfer-Encoding is not supported; send Content-Length");
      return;
    }
    for (const auto& [k, v] : req.headers) {
      if (k != "content-length") continue;
      uint64_t n = 0;
      bool ok = !v.empty() && v.size() <= 19;
      for (char c : v) {
        ok = ok && c >= '0' && c <= '9';
        if (ok) n = n * 10 + static_cast<uint64_t>(c - '0');
      }
      if (!ok || (req.content_length && *req.content_length != n)) {
        reject(conn, 400, "bad_request", "invalid Content-Length '" + v.substr(0, 40) + "'");
        return;
      }
      req.content_length = n;
    }

    // 3. Handle.
    const std::string* expect = req.header("expect");
    bool expect_continue = expect && lower(*expect) == "100-continue" && req.minor_version == 1 &&
                           req.content_length.value_or(0) > 0;
    SocketBodyReader body(conn, req.content_length.value_or(0), expect_continue);
    HttpResponse resp;
    try {
      resp = handler_(req, body);
    } catch (const std::exception& e) {
      HUB_LOG(Error) << "registry http: handler failed for " << req.method << " " << req.target << ": "
                     << e.what();
      resp = HttpResponse::json(500, error_json("internal", "internal server error"));
      resp.close = true;
    }
    if (body.failed()) resp.close = true;  // the client is gone or stalled: answer best effort

    // 4. Respond. Keep the connection only if the request is fully consumed.
    const std::string* connection = req.header("connection");
    std::string conn_value = connection ? lower(*connection) : "";
    bool keep_alive = req.minor_version == 1 ? conn_value.find("close") == std::string::npos
                                             : conn_value.find("keep-alive") != std::string::npos;
    if (resp.close || body.remaining() > 0) keep_alive = false;
    try {
      write_response(conn, resp, req.method == "HEAD", keep_alive);
    } catch (const ConnectionClosed&) {
      return;
    }
    if (!keep_alive) {
      ::shutdown(fd, SHUT_WR);
      return;
    }
  }
}

}  // namespace hub::registry
