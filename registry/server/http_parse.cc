// The pure part of the HTTP server: request-head parsing and the request's
// accessors. Depends on nothing but the C++ library, so the fuzz harness
// (tests/fuzz/http_head.cc) builds from this file alone.
#include <cctype>
#include <cstring>

#include "registry/server/http.h"

namespace hub::registry {
namespace {

bool is_token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_token_char(c)) return false;
  return true;
}

// Visible ASCII: what an origin-form target may hold (percent-encoding the rest).
bool is_visible(std::string_view s) {
  for (char c : s)
    if (c <= 0x20 || c >= 0x7f) return false;
  return true;
}

// Field values: HTAB, SP, visible ASCII and obs-text (bytes >= 0x80).
bool is_field_value(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// At most 40 bytes of `s`, non-printable bytes as '?', for messages.
std::string excerpt(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 40)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > 40) out += "...";
  return out;
}

HeadError error(int status, std::string code, std::string message) {
  return HeadError{status, std::move(code), std::move(message)};
}

}  // namespace

std::variant<HttpRequest, HeadError> parse_request_head(std::string_view head, const HttpLimits& limits) {
  if (head.size() > limits.max_header_bytes)
    return error(431, "header_too_large", "request head exceeds " + std::to_string(limits.max_header_bytes) + " bytes");
  // Lines end in CRLF; a lone CR or LF anywhere is refused (request smuggling
  // through proxies that split lines differently).
  std::vector<std::string_view> lines;
  for (size_t pos = 0;;) {
    size_t end = head.find("\r\n", pos);
    std::string_view line = head.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (line.find_first_of("\r\n") != std::string_view::npos)
      return error(400, "bad_request", "bare CR or LF in the request head");
    lines.push_back(line);
    if (end == std::string_view::npos) break;
    pos = end + 2;
  }

  HttpRequest req;
  std::string_view line = lines[0];
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return error(400, "bad_request", "malformed request line '" + excerpt(line) + "'");
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method) || target.empty() || target[0] != '/' || !is_visible(target))
    return error(400, "bad_request", "malformed request line '" + excerpt(line) + "'");
  if (version == "HTTP/1.1") {
    req.minor_version = 1;
  } else if (version == "HTTP/1.0") {
    req.minor_version = 0;
  } else if (version.size() == 8 && version.substr(0, 5) == "HTTP/" &&
             std::isdigit(static_cast<unsigned char>(version[5])) && version[6] == '.' &&
             std::isdigit(static_cast<unsigned char>(version[7]))) {
    return error(505, "bad_version", "only HTTP/1.0 and HTTP/1.1 are supported");
  } else {
    return error(400, "bad_request", "malformed request line '" + excerpt(line) + "'");
  }
  req.method = std::string(method);
  req.target = std::string(target);
  size_t q = target.find('?');
  req.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) req.query_string = std::string(target.substr(q + 1));

  if (lines.size() - 1 > limits.max_headers)
    return error(431, "header_too_large", "more than " + std::to_string(limits.max_headers) + " header fields");
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view h = lines[i];
    size_t colon = h.find(':');
    if (colon == std::string_view::npos || !is_token(h.substr(0, colon)))
      return error(400, "bad_request", "malformed header field '" + excerpt(h) + "'");
    std::string_view value = trim(h.substr(colon + 1));
    if (!is_field_value(value))
      return error(400, "bad_request", "control character in header field '" + excerpt(h.substr(0, colon)) + "'");
    req.headers.emplace_back(lower(h.substr(0, colon)), std::string(value));
  }

  if (req.header("transfer-encoding"))
    return error(411, "length_required", "Transfer-Encoding is not supported; send Content-Length");
  for (const auto& [k, v] : req.headers) {
    if (k != "content-length") continue;
    uint64_t n = 0;
    bool ok = !v.empty() && v.size() <= 19;
    for (char c : v) {
      ok = ok && c >= '0' && c <= '9';
      if (ok) n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    if (!ok || (req.content_length && *req.content_length != n))
      return error(400, "bad_request", "invalid Content-Length '" + excerpt(v) + "'");
    req.content_length = n;
  }
  return req;
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

}  // namespace hub::registry
