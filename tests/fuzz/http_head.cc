// libFuzzer harness for parse_request_head() (registry/server/http.h): any
// bytes must give a request or a HeadError, never a crash, and an accepted
// request must satisfy the parser's contract (checked below; a violation
// aborts, which the fuzzer reports as a crash). The input is the head without
// its final blank line, as the server passes it.
//
// Built and run by tests/fuzz/run.sh (tests/fuzz/run.sh http_head for this
// one alone).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "registry/server/http.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

bool is_lower_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if ((c >= 'A' && c <= 'Z') || c <= 0x20 || c >= 0x7f || c == ':') return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view head(reinterpret_cast<const char*>(data), size);
  hub::registry::HttpLimits limits;
  limits.max_header_bytes = 4096;  // small, so the fuzzer reaches the limit
  limits.max_headers = 16;
  auto parsed = hub::registry::parse_request_head(head, limits);
  if (auto* e = std::get_if<hub::registry::HeadError>(&parsed)) {
    require(e->status == 400 || e->status == 411 || e->status == 431 || e->status == 505);
    require(!e->code.empty());
    for (char c : e->message) require(c >= 0x20 && c < 0x7f);  // messages quote only printable bytes
    return 0;
  }
  const hub::registry::HttpRequest& r = std::get<hub::registry::HttpRequest>(parsed);
  require(size <= limits.max_header_bytes);
  require(r.headers.size() <= limits.max_headers);
  require(!r.method.empty() && !r.target.empty() && r.target[0] == '/');
  require(r.path + (r.target.find('?') != std::string::npos ? "?" + r.query_string : "") == r.target);
  require(r.minor_version == 0 || r.minor_version == 1);
  for (const auto& [name, value] : r.headers) {
    require(is_lower_token(name));
    for (char c : value) require(c != '\r' && c != '\n' && c != '\0');
    require(value.empty() || (value.front() != ' ' && value.back() != ' '));
  }
  require(r.header("transfer-encoding") == nullptr);
  if (r.content_length) require(r.header("content-length") != nullptr);
  (void)r.query("q");
  (void)hub::registry::url_decode(r.path);
  return 0;
}
