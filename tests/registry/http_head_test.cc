// parse_request_head(): the pure request-head parser the server (and the fuzz
// harness tests/fuzz/http_head.cc) runs on every head.
#include <doctest/doctest.h>

#include "registry/server/http.h"

using namespace hub::registry;

namespace {

HttpRequest parse_ok(std::string_view head) {
  auto r = parse_request_head(head, HttpLimits{});
  if (auto* e = std::get_if<HeadError>(&r)) FAIL("refused (" << e->status << " " << e->message << "): " << head);
  return std::get<HttpRequest>(r);
}

int refused_with(std::string_view head, const HttpLimits& limits = {}) {
  auto r = parse_request_head(head, limits);
  auto* e = std::get_if<HeadError>(&r);
  return e ? e->status : 0;
}

}  // namespace

TEST_CASE("a well-formed head is parsed") {
  HttpRequest r = parse_ok(
      "PUT /v1/modules/acme/net/1.0.0?x=1&q=a+b%21 HTTP/1.1\r\nHost: example\r\n"
      "Content-Length:  42 \r\nX-Hub-Metadata: {\"description\": \"caf\xc3\xa9\"}\r\nEmpty:");
  CHECK(r.method == "PUT");
  CHECK(r.target == "/v1/modules/acme/net/1.0.0?x=1&q=a+b%21");
  CHECK(r.path == "/v1/modules/acme/net/1.0.0");
  CHECK(r.query_string == "x=1&q=a+b%21");
  CHECK(r.query("q") == "a b!");
  CHECK(r.query("missing") == "");
  CHECK(r.minor_version == 1);
  REQUIRE(r.content_length);
  CHECK(*r.content_length == 42);
  REQUIRE(r.header("host"));
  CHECK(*r.header("host") == "example");
  CHECK(*r.header("x-hub-metadata") == "{\"description\": \"caf\xc3\xa9\"}");  // obs-text kept
  CHECK(*r.header("empty") == "");
  CHECK(r.header("Host") == nullptr);  // names are lower-cased; look-ups use lower case
  CHECK(parse_ok("GET / HTTP/1.0").minor_version == 0);
  CHECK(parse_ok("GET /a HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5").content_length == 5u);
  CHECK(parse_ok("GET /a HTTP/1.1\r\nX: a\tb").headers[0].second == "a\tb");
}

TEST_CASE("malformed heads are refused with the right status") {
  struct Case {
    const char* head;
    int status;
  };
  const Case cases[] = {
      {"", 400},
      {"GARBAGE", 400},
      {"GET  / HTTP/1.1", 400},            // two spaces
      {"GET / HTTP/1.1 ", 400},            // trailing space
      {"GET example.com HTTP/1.1", 400},   // not origin-form
      {"G(T / HTTP/1.1", 400},             // method not a token
      {"GET /a\x01 HTTP/1.1", 400},        // control character in the target
      {"GET /caf\xc3\xa9 HTTP/1.1", 400},  // raw non-ASCII target
      {"GET / HTTP/2.0", 505},
      {"GET / HTTP/1.10", 400},
      {"GET / http/1.1", 400},
      {"GET / HTTP/1.1\nHost: x", 400},       // bare LF
      {"GET / HTTP/1.1\r\nHost: x\ry", 400},  // bare CR
      {"GET / HTTP/1.1\r\nNo colon", 400},
      {"GET / HTTP/1.1\r\n: empty name", 400},
      {"GET / HTTP/1.1\r\nHost : x", 400},         // whitespace before ':'
      {"GET / HTTP/1.1\r\nX: a\r\n folded", 400},  // obsolete line folding
      {"GET / HTTP/1.1\r\nX: a\x7f", 400},
      {"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked", 411},
      {"PUT / HTTP/1.1\r\nContent-Length: -1", 400},
      {"PUT / HTTP/1.1\r\nContent-Length: 1e3", 400},
      {"PUT / HTTP/1.1\r\nContent-Length: ", 400},
      {"PUT / HTTP/1.1\r\nContent-Length: 99999999999999999999", 400},  // 20 digits
      {"PUT / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6", 400},
      {"PUT / HTTP/1.1\r\nContent-Length: 5, 5", 400},
  };
  for (const Case& c : cases) {
    CAPTURE(c.head);
    CHECK(refused_with(c.head) == c.status);
  }
  CHECK(refused_with(std::string_view("GET / HTTP/1.1\r\nX: a\0b", 22)) == 400);  // NUL in a value
}

TEST_CASE("head limits: bytes and field count") {
  HttpLimits l;
  l.max_header_bytes = 100;
  l.max_headers = 3;
  CHECK(refused_with("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3", l) == 0);
  CHECK(refused_with("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4", l) == 431);
  CHECK(refused_with("GET / HTTP/1.1\r\nA: " + std::string(100, 'a'), l) == 431);
  // Messages quote at most 40 bytes of the head, printable only.
  auto r = parse_request_head("GET / HTTP/1.1\r\n" + std::string(200, '\x01') + ": x", HttpLimits{});
  REQUIRE(std::holds_alternative<HeadError>(r));
  const std::string& m = std::get<HeadError>(r).message;
  CHECK(m.size() < 100);
  CHECK(m.find('\x01') == std::string::npos);
}

TEST_CASE("client keys: IPv4, IPv4-mapped, IPv6 /64") {
  CHECK(client_key("192.0.2.7") == "192.0.2.7");
  CHECK(client_key("::ffff:192.0.2.7") == "192.0.2.7");
  CHECK(client_key("2001:db8:1:2:aaaa:bbbb:cccc:dddd") == "2001:db8:1:2::/64");
  CHECK(client_key("2001:db8:1:2::1") == client_key("2001:db8:1:2:ffff::9"));
  CHECK(client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1"));
  CHECK(client_key("not an address") == "");
  CHECK(client_key("") == "");
  CHECK(client_key("192.0.2.7, 10.0.0.1") == "");
}
