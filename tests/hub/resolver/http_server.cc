#include "http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace hub::testing {

bool HttpConn::send(std::string_view data) {
  while (!data.empty()) {
    if (stopping()) return false;
    ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool HttpConn::sleep_ms(int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    if (stopping()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(ms, 10)));
  }
  return true;
}

HttpServer::HttpServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket failed");
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 128) != 0) {
    throw std::runtime_error(std::string("bind/listen failed: ") + std::strerror(errno));
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

HttpServer::~HttpServer() {
  stopping_ = true;
  acceptor_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
  ::close(listen_fd_);
}

std::string HttpServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void HttpServer::route(const std::string& path, HttpHandler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  routes_[path] = std::move(handler);
}

int HttpServer::requests(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = log_.find(path);
  return it == log_.end() ? 0 : static_cast<int>(it->second.size());
}

std::vector<HttpRequest> HttpServer::log(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = log_.find(path);
  return it == log_.end() ? std::vector<HttpRequest>{} : it->second;
}

void HttpServer::accept_loop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++connections_;
    std::lock_guard<std::mutex> lock(mu_);
    workers_.emplace_back([this, fd] { serve(fd); });
  }
}

void HttpServer::serve(int fd) {
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string buf;
  char chunk[4096];
  while (buf.find("\r\n\r\n") == std::string::npos && buf.size() < 65536) {
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) {
      ::close(fd);
      return;
    }
    buf.append(chunk, static_cast<size_t>(n));
  }
  HttpRequest req;
  std::istringstream in(buf.substr(0, buf.find("\r\n\r\n")));
  std::string line;
  std::getline(in, line);
  {
    std::istringstream first(line);
    std::string version;
    first >> req.method >> req.target >> version;
  }
  req.path = req.target.substr(0, req.target.find('?'));
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t c = line.find(':');
    if (c == std::string::npos) continue;
    std::string key = line.substr(0, c);
    for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    size_t v = c + 1;
    while (v < line.size() && line[v] == ' ') ++v;
    req.headers[key] = line.substr(v);
  }
  HttpHandler handler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    log_[req.path].push_back(req);
    auto it = routes_.find(req.path);
    if (it != routes_.end()) handler = it->second;
  }
  HttpConn conn(fd, &stopping_);
  if (handler) {
    handler(req, conn);
  } else {
    conn.send(http_head(404, {{"Content-Length", "0"}}));
  }
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

std::string http_head(int status, const std::vector<std::pair<std::string, std::string>>& headers) {
  const char* reason = status == 200                   ? "OK"
                       : status == 206                 ? "Partial Content"
                       : status == 404                 ? "Not Found"
                       : status == 416                 ? "Range Not Satisfiable"
                       : status == 429                 ? "Too Many Requests"
                       : status >= 500                 ? "Server Error"
                       : status >= 300 && status < 400 ? "Redirect"
                                                       : "Status";
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
  for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
  out += "Connection: close\r\n\r\n";
  return out;
}

void serve_body(const HttpRequest& req, HttpConn& conn, const std::string& body, const std::string& etag,
                size_t cut_after) {
  size_t start = 0;
  std::string range = req.header("range");
  bool partial = false;
  if (range.rfind("bytes=", 0) == 0) {
    std::string if_range = req.header("if-range");
    if (if_range.empty() || if_range == etag) {
      start = std::stoull(range.substr(6));
      partial = true;
    }
  }
  if (start > body.size()) {
    conn.send(http_head(416, {{"Content-Length", "0"}}));
    return;
  }
  std::vector<std::pair<std::string, std::string>> h = {{"Content-Length", std::to_string(body.size() - start)}};
  if (!etag.empty()) h.emplace_back("ETag", etag);
  if (partial) {
    h.emplace_back("Content-Range", "bytes " + std::to_string(start) + "-" + std::to_string(body.size() - 1) + "/" +
                                        std::to_string(body.size()));
  }
  if (!conn.send(http_head(partial ? 206 : 200, h))) return;
  size_t n = std::min(body.size() - start, cut_after);
  conn.send(std::string_view(body).substr(start, n));
}

}  // namespace hub::testing
