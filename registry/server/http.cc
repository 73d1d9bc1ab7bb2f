#include "registry/server/http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "hub/core/error.h"
#include "hub/core/logging.h"

namespace hub::registry {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSliceMs = 100;         // blocked waits in workers look at the stop flag this often
constexpr int kTickMs = 50;           // the event thread checks head deadlines this often
constexpr size_t kReadChunk = 16384;  // bytes per recv()
constexpr int kAcceptBatch = 64;      // connections accepted per readiness event

Clock::time_point after_ms(Clock::time_point t, int ms) { return t + std::chrono::milliseconds(ms); }

int ms_until(Clock::time_point deadline) {
  auto d = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return d < 0 ? 0 : static_cast<int>(std::min<int64_t>(d, 1 << 30));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string rate_text(const HttpLimits& l) {
  return std::to_string(l.min_rate_bytes_per_s) + " bytes/s over " + std::to_string(l.rate_window_ms) + " ms";
}

// The minimum-rate rule for one transfer: at least need() bytes in every
// window of rate_window_ms since the transfer started.
class RateMeter {
 public:
  RateMeter(const HttpLimits& l, Clock::time_point start)
      : window_ms_(std::max(1, l.rate_window_ms)),
        need_(std::max<uint64_t>(1, l.min_rate_bytes_per_s * static_cast<uint64_t>(window_ms_) / 1000)),
        window_end_(after_ms(start, window_ms_)) {}
  void add(uint64_t n) { moved_ += n; }
  Clock::time_point window_end() const { return window_end_; }
  // At or after window_end(): false when the window moved too little, else
  // the next window starts.
  bool next_window(Clock::time_point now) {
    if (moved_ < need_) return false;
    moved_ = 0;
    window_end_ = after_ms(now, window_ms_);
    return true;
  }

 private:
  int window_ms_;
  uint64_t need_;
  Clock::time_point window_end_;
  uint64_t moved_ = 0;
};

std::string response_head(int status, const std::vector<std::pair<std::string, std::string>>& headers, uint64_t length,
                          bool keep_alive) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + std::string(http_reason(status)) + "\r\n";
  bool has_type = false;
  for (const auto& [k, v] : headers) {
    head += k + ": " + v + "\r\n";
    if (lower(k) == "content-type") has_type = true;
  }
  if (!has_type && length > 0) head += "Content-Type: application/octet-stream\r\n";
  head += "Content-Length: " + std::to_string(length) + "\r\n";
  head += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  head += "Server: hub-registry\r\n\r\n";
  return head;
}

// A short error response with its body, for connections closed after it.
std::string error_response_bytes(int status, std::string_view code, std::string_view message) {
  std::string body = error_json(code, message);
  std::vector<std::pair<std::string, std::string>> headers = {{"Content-Type", "application/json"}};
  if (status == 503) headers.emplace_back("Retry-After", "1");
  return response_head(status, headers, body.size(), false) + body;
}

// Sends without waiting (the socket buffer takes a short response), then
// ends our side; best effort, for connections being closed.
void send_and_shut(int fd, const std::string& bytes) {
  (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
}

std::string peer_key(const sockaddr_storage& ss) {
  char text[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, text, sizeof text);
  else if (ss.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, text, sizeof text);
  std::string key = client_key(text);
  return key.empty() ? "unknown" : key;
}

struct ConnectionClosed {};  // internal: stop serving this connection silently

}  // namespace

// One client connection. Owned by exactly one place at a time: the event
// thread's heads_ (reading a head), ready_ (waiting for a worker), a worker,
// or returned_ (keep-alive, on its way back). Its slot is released when it
// is destroyed, which closes the socket.
struct HttpServer::Conn {
  Conn(HttpServer* s, Fd f, std::string c) : server(s), fd(std::move(f)), client(std::move(c)) {}
  ~Conn() { server->release(client); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Head reading starts (the connection is new, or its next request's first byte came).
  void start_head(Clock::time_point now, const HttpLimits& l) {
    idle = false;
    head_deadline = after_ms(now, l.header_timeout_ms);
    head_rate.emplace(l, now);
  }

  HttpServer* server;
  Fd fd;
  std::string client;
  std::string in;      // received, not yet consumed
  size_t scanned = 0;  // bytes of `in` known not to hold the end of the head
  // Event thread state.
  bool idle = false;  // keep-alive, waiting for the first byte of the next request
  Clock::time_point idle_deadline, head_deadline;
  std::optional<RateMeter> head_rate;
};

namespace {

// Worker-side I/O on the connection's non-blocking socket: waits with poll()
// in slices, giving up when the transfer falls below the minimum rate or the
// server stops.
class WorkerIo {
 public:
  // `in` holds bytes received past the head; reads append to it.
  WorkerIo(int fd, std::string& in, const HttpLimits& limits, const std::atomic<bool>& stopping)
      : fd_(fd), in_(in), limits_(limits), stopping_(stopping) {}

  const HttpLimits& limits() const { return limits_; }
  std::string& in() { return in_; }

  // Appends received bytes to in(); false when the peer closed. Throws
  // ConnectionClosed when too slow, stopping, or on a socket error.
  bool fill(RateMeter& rate) {
    wait(POLLIN, rate);
    char buf[kReadChunk];
    while (true) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        in_.append(buf, static_cast<size_t>(n));
        rate.add(static_cast<uint64_t>(n));
        return true;
      }
      if (n == 0) return false;
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      throw ConnectionClosed{};
    }
  }

  void send_all(const char* p, size_t n, RateMeter& rate) {
    write_all(n, rate, [&](uint64_t left) {
      ssize_t w = ::send(fd_, p, left, MSG_NOSIGNAL);
      if (w > 0) p += w;
      return w;
    });
  }

  void send_file(int file_fd, uint64_t offset, uint64_t length, RateMeter& rate) {
    off_t off = static_cast<off_t>(offset);
    write_all(length, rate,
              [&](uint64_t left) { return ::sendfile(fd_, file_fd, &off, std::min<uint64_t>(left, 1 << 20)); });
  }

 private:
  void wait(short events, RateMeter& rate) {
    while (true) {
      if (stopping_.load()) throw ConnectionClosed{};
      auto now = Clock::now();
      if (now >= rate.window_end() && !rate.next_window(now)) throw ConnectionClosed{};
      pollfd p{fd_, events, 0};
      int rc = ::poll(&p, 1, std::min(ms_until(rate.window_end()), kSliceMs));
      if (rc > 0 || (rc < 0 && errno != EINTR)) return;  // let recv/send report errors
    }
  }

  // Calls write(left) until `left` bytes are out; write returns what ::send or
  // ::sendfile returned and advances its own position. 0 written (peer gone,
  // or the file shrank under sendfile: Content-Length cannot be honored)
  // closes the connection.
  template <class Write>
  void write_all(uint64_t left, RateMeter& rate, Write write) {
    while (left > 0) {
      ssize_t w = write(left);
      if (w > 0) {
        left -= static_cast<uint64_t>(w);
        rate.add(static_cast<uint64_t>(w));
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wait(POLLOUT, rate);
        continue;
      }
      throw ConnectionClosed{};
    }
  }

  int fd_;
  std::string& in_;
  const HttpLimits& limits_;
  const std::atomic<bool>& stopping_;
};

class SocketBodyReader : public BodyReader {
 public:
  SocketBodyReader(WorkerIo& io, uint64_t length, bool expect_continue)
      : io_(io), remaining_(length), expect_continue_(expect_continue) {}

  size_t read(char* buf, size_t n) override {
    if (remaining_ == 0 || n == 0) return 0;
    if (!rate_) rate_.emplace(io_.limits(), Clock::now());  // the body's clock starts at its first read
    if (expect_continue_) {
      expect_continue_ = false;
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      try {
        RateMeter send_rate(io_.limits(), Clock::now());
        io_.send_all(kContinue, sizeof kContinue - 1, send_rate);
      } catch (const ConnectionClosed&) {
        failed_ = true;
        throw_error(Code::kDataLoss, "client went away before sending the request body");
      }
    }
    std::string& in = io_.in();
    if (in.empty()) {
      bool open;
      try {
        open = io_.fill(*rate_);
      } catch (const ConnectionClosed&) {
        failed_ = true;
        throw_error(Code::kDeadlineExceeded, "request body slower than the minimum rate of " + rate_text(io_.limits()) +
                                                 ": " + std::to_string(remaining_) + " bytes still expected");
      }
      if (!open) {
        failed_ = true;
        throw_error(Code::kDataLoss, "client closed the connection with " + std::to_string(remaining_) +
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

 private:
  WorkerIo& io_;
  uint64_t remaining_;
  bool expect_continue_;
  bool failed_ = false;
  std::optional<RateMeter> rate_;
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

std::string client_key(std::string_view address) {
  std::string text(address);
  in_addr v4{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    char out[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &v4, out, sizeof out);
    return out;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, text.c_str(), &v6) != 1) return {};
  char out[INET6_ADDRSTRLEN] = {};
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    ::inet_ntop(AF_INET, &v6.s6_addr[12], out, sizeof out);
    return out;
  }
  std::memset(&v6.s6_addr[8], 0, 8);
  ::inet_ntop(AF_INET6, &v6, out, sizeof out);
  return std::string(out) + "/64";
}

HttpResponse HttpResponse::json(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers.emplace_back("Content-Type", "application/json");
  return r;
}

std::string_view http_reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Content Too Large";
    case 416:
      return "Range Not Satisfiable";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
  }
  return "Unknown";
}

HttpServer::HttpServer(HttpLimits limits, HttpHandler handler) : limits_(limits), handler_(std::move(handler)) {}

HttpServer::~HttpServer() { stop(); }

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
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!fd) continue;
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd.get(), 512) == 0) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
      port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
      listen_fd_ = std::move(fd);
      break;
    }
    last_error = std::strerror(errno);
  }
  ::freeaddrinfo(res);
  if (!listen_fd_) throw_error(Code::kUnavailable, "cannot listen on " + where + ": " + last_error);
}

void HttpServer::start() {
  HUB_CHECK(listen_fd_, "listen() before start()");
  HUB_CHECK(!started_);
  epoll_fd_ = Fd(::epoll_create1(EPOLL_CLOEXEC));
  wake_fd_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!epoll_fd_ || !wake_fd_)
    throw_error(Code::kIOError, std::string("cannot create epoll/eventfd: ") + std::strerror(errno));
  for (int fd : {listen_fd_.get(), wake_fd_.get()}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
      throw_error(Code::kIOError, std::string("epoll_ctl failed: ") + std::strerror(errno));
  }
  started_ = true;
  for (int i = 0; i < std::max(1, limits_.worker_threads); ++i) workers_.emplace_back([this] { worker_loop(); });
  event_thread_ = std::thread([this] { event_loop(); });
}

void HttpServer::stop() {
  if (!started_ || stopping_.exchange(true)) return;
  uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof one);
  if (event_thread_.joinable()) event_thread_.join();
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
  heads_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  ready_.clear();
  returned_.clear();
}

HttpServer::Admit HttpServer::admit(const std::string& client) {
  std::lock_guard<std::mutex> lock(slots_mu_);
  if (open_ >= limits_.max_connections) return Admit::kServerFull;
  int& n = per_client_[client];
  if (n >= limits_.max_connections_per_client) return Admit::kClientFull;  // n > 0: entry stays
  ++n;
  ++open_;
  return Admit::kOk;
}

void HttpServer::release(const std::string& client) {
  std::lock_guard<std::mutex> lock(slots_mu_);
  --open_;
  auto it = per_client_.find(client);
  if (it != per_client_.end() && --it->second <= 0) per_client_.erase(it);
}

void HttpServer::event_loop() {
  epoll_event events[64];
  auto last_sweep = Clock::now();
  while (!stopping_.load()) {
    int n = ::epoll_wait(epoll_fd_.get(), events, 64, heads_.empty() ? -1 : kTickMs);
    if (n < 0 && errno != EINTR) {
      HUB_LOG(Error) << "registry http: epoll_wait failed: " << std::strerror(errno);
      break;
    }
    for (int i = 0; i < n && !stopping_.load(); ++i) {
      int fd = events[i].data.fd;
      if (fd == listen_fd_.get()) {
        accept_ready();
      } else if (fd == wake_fd_.get()) {
        uint64_t count;
        (void)!::read(wake_fd_.get(), &count, sizeof count);
        std::vector<std::unique_ptr<Conn>> back;
        {
          std::lock_guard<std::mutex> lock(mu_);
          back.swap(returned_);
        }
        for (auto& conn : back) watch(std::move(conn));
      } else {
        read_head(fd);
      }
    }
    if (Clock::now() - last_sweep >= std::chrono::milliseconds(kTickMs)) {
      sweep();
      last_sweep = Clock::now();
    }
  }
  heads_.clear();  // closes every connection still waiting for its head
}

void HttpServer::accept_ready() {
  for (int i = 0; i < kAcceptBatch; ++i) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    Fd fd(::accept4(listen_fd_.get(), reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) {
      if (errno == EMFILE || errno == ENFILE) ::usleep(10000);  // out of descriptors: back off
      return;
    }
    std::string client = peer_key(ss);
    switch (admit(client)) {
      case Admit::kOk:
        break;
      case Admit::kServerFull: {
        static const std::string kFull = error_response_bytes(503, "busy", "too many connections, retry later");
        send_and_shut(fd.get(), kFull);
        continue;
      }
      case Admit::kClientFull: {
        static const std::string kClientFull =
            error_response_bytes(503, "busy",
                                 "too many connections from your address (at most " +
                                     std::to_string(limits_.max_connections_per_client) + "), retry later");
        send_and_shut(fd.get(), kClientFull);
        continue;
      }
    }
    int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto conn = std::make_unique<Conn>(this, std::move(fd), std::move(client));
    conn->start_head(Clock::now(), limits_);
    watch(std::move(conn));
  }
}

// Takes a connection into heads_ and epoll. A keep-alive connection (given
// back by a worker) waits idle, unless the bytes it brings already start the
// next request (or hold it whole: pipelining).
void HttpServer::watch(std::unique_ptr<Conn> conn) {
  int fd = conn->fd.get();
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    HUB_LOG(Warning) << "registry http: epoll_ctl failed: " << std::strerror(errno);
    return;  // conn destroyed: closed
  }
  heads_[fd] = std::move(conn);
  try_dispatch(fd);
}

void HttpServer::read_head(int fd) {
  auto it = heads_.find(fd);
  if (it == heads_.end()) return;
  Conn& conn = *it->second;
  char buf[kReadChunk];
  while (true) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      if (conn.idle) conn.start_head(Clock::now(), limits_);
      conn.in.append(buf, static_cast<size_t>(n));
      conn.head_rate->add(static_cast<uint64_t>(n));
      if (try_dispatch(fd)) return;                     // handed on, or refused and closed
      if (static_cast<size_t>(n) < sizeof buf) return;  // drained for now
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
    heads_.erase(it);  // peer closed, or a socket error: close silently
    return;
  }
}

// Looks for the end of the head in what the connection has received. Returns
// true when the connection left heads_: handed to a worker with its parsed
// request, or refused (400/411/431/505) and closed.
bool HttpServer::try_dispatch(int fd) {
  auto it = heads_.find(fd);
  Conn& conn = *it->second;
  if (conn.in.empty()) return false;
  if (conn.idle) conn.start_head(Clock::now(), limits_);
  size_t from = conn.scanned >= 3 ? conn.scanned - 3 : 0;
  size_t end = conn.in.find("\r\n\r\n", from);
  if (end == std::string::npos) {
    conn.scanned = conn.in.size();
    if (conn.in.size() <= limits_.max_header_bytes) return false;
    close_head(fd, 431, "header_too_large",
               "request head exceeds " + std::to_string(limits_.max_header_bytes) + " bytes");
    return true;
  }
  auto parsed = parse_request_head(std::string_view(conn.in).substr(0, end), limits_);
  if (auto* e = std::get_if<HeadError>(&parsed)) {
    close_head(fd, e->status, e->code, e->message);
    return true;
  }
  HttpRequest req = std::move(std::get<HttpRequest>(parsed));
  req.client = conn.client;
  conn.in.erase(0, end + 4);
  conn.scanned = 0;
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  std::unique_ptr<Conn> owned = std::move(it->second);
  heads_.erase(it);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.emplace_back(std::move(owned), std::move(req));
  }
  cv_.notify_one();
  return true;
}

void HttpServer::close_head(int fd, int status, std::string_view code, std::string_view message) {
  send_and_shut(fd, error_response_bytes(status, code, message));
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  heads_.erase(fd);
}

// Closes connections past a head or keep-alive limit.
void HttpServer::sweep() {
  auto now = Clock::now();
  std::vector<std::pair<int, std::string>> expired;  // fd, why ("" = silently)
  for (auto& [fd, conn] : heads_) {
    if (conn->idle) {
      if (now >= conn->idle_deadline) expired.emplace_back(fd, "");
    } else if (now >= conn->head_deadline) {
      expired.emplace_back(fd, "request head not received within " + std::to_string(limits_.header_timeout_ms) + " ms");
    } else if (now >= conn->head_rate->window_end() && !conn->head_rate->next_window(now)) {
      expired.emplace_back(fd, "request head slower than the minimum rate of " + rate_text(limits_));
    }
  }
  for (const auto& [fd, why] : expired) {
    if (!why.empty() && !heads_[fd]->in.empty()) {
      close_head(fd, 408, "timeout", why);
    } else {
      ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
      heads_.erase(fd);
    }
  }
}

void HttpServer::give_back(std::unique_ptr<Conn> conn) {
  conn->idle = true;
  conn->idle_deadline = after_ms(Clock::now(), limits_.keepalive_timeout_ms);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_.load()) return;  // conn destroyed: closed
    returned_.push_back(std::move(conn));
  }
  uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof one);
}

void HttpServer::worker_loop() {
  // sendfile() has no MSG_NOSIGNAL: block SIGPIPE in this thread so a client
  // hanging up mid-download gives EPIPE instead of killing the process.
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
  while (true) {
    std::unique_ptr<Conn> conn;
    HttpRequest req;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_.load() || !ready_.empty(); });
      if (stopping_.load()) return;
      conn = std::move(ready_.front().first);
      req = std::move(ready_.front().second);
      ready_.pop_front();
    }
    bool keep_alive = false;
    try {
      keep_alive = serve(*conn, req);
    } catch (const ConnectionClosed&) {
    } catch (const std::exception& e) {
      HUB_LOG(Warning) << "registry http: connection error: " << e.what();
    }
    if (keep_alive) give_back(std::move(conn));
  }
}

// Runs the handler for one request and writes its response. Returns whether
// the connection stays open for another request.
bool HttpServer::serve(Conn& conn, const HttpRequest& req) {
  WorkerIo io(conn.fd.get(), conn.in, limits_, stopping_);
  const std::string* expect = req.header("expect");
  bool expect_continue =
      expect && lower(*expect) == "100-continue" && req.minor_version == 1 && req.content_length.value_or(0) > 0;
  SocketBodyReader body(io, req.content_length.value_or(0), expect_continue);
  HttpResponse resp;
  try {
    resp = handler_(req, body);
  } catch (const std::exception& e) {
    HUB_LOG(Error) << "registry http: handler failed for " << req.method << " " << req.path << ": " << e.what();
    resp = HttpResponse::json(500, error_json("internal", "internal server error"));
    resp.close = true;
  }
  if (body.failed()) resp.close = true;  // the client is gone or too slow: answer best effort

  // Keep the connection only if the request is fully consumed.
  const std::string* connection = req.header("connection");
  std::string conn_value = connection ? lower(*connection) : "";
  bool keep_alive = req.minor_version == 1 ? conn_value.find("close") == std::string::npos
                                           : conn_value.find("keep-alive") != std::string::npos;
  if (resp.close || body.remaining() > 0) keep_alive = false;
  bool head_only = req.method == "HEAD";
  uint64_t length = resp.file ? resp.file->length : resp.body.size();
  std::string out = response_head(resp.status, resp.headers, length, keep_alive);
  RateMeter rate(limits_, Clock::now());
  if (!head_only && !resp.file) out += resp.body;  // one send for small responses
  io.send_all(out.data(), out.size(), rate);
  if (!head_only && resp.file) io.send_file(resp.file->fd.get(), resp.file->offset, resp.file->length, rate);
  if (!keep_alive) ::shutdown(conn.fd.get(), SHUT_WR);
  return keep_alive;
}

}  // namespace hub::registry
