// hub/core/text.h: UTF-8 checking, printable quoting, credential redaction.
#include "hub/core/text.h"

#include <doctest/doctest.h>

#include <string>

namespace hub {
namespace {

TEST_CASE("redact_credentials removes user information from every URL in a text") {
  CHECK(redact_credentials("https://user:secret@host/m.tar.gz") == "https://***@host/m.tar.gz");
  CHECK(redact_credentials("http://token@host:8080") == "http://***@host:8080");
  CHECK(redact_credentials("GET https://a:b@x/y: HTTP 404 (then http://c:d@z/w)") ==
        "GET https://***@x/y: HTTP 404 (then http://***@z/w)");
  // A password with an unescaped '@' is still removed entirely.
  CHECK(redact_credentials("https://u:p@ss@host/x") == "https://***@host/x");
  // '@' after the host is part of the path, not credentials.
  CHECK(redact_credentials("https://host/a@b") == "https://host/a@b");
  CHECK(redact_credentials("acme/net@1.0.0") == "acme/net@1.0.0");
  CHECK(redact_credentials("module 'https://k@h/m' failed") == "module 'https://***@h/m' failed");
  CHECK(redact_credentials("no url here") == "no url here");
  CHECK(redact_credentials("://x@y") == "://x@y");  // no scheme
}

TEST_CASE("printable escapes control bytes and cuts long text") {
  CHECK(printable("a\nb\x1b[31m") == "a\\x0ab\\x1b[31m");
  CHECK(printable("back\\slash") == "back\\x5cslash");
  CHECK(printable(std::string(300, 'x'), 10) == "xxxxxxxxxx...");
  CHECK(printable("\xff") == "\\xff");
}

TEST_CASE("invalid_utf8_at finds the first bad byte") {
  CHECK(invalid_utf8_at("plain") == std::string_view::npos);
  CHECK(invalid_utf8_at("caf\xc3\xa9") == std::string_view::npos);
  CHECK(invalid_utf8_at("ab\xff") == 2);
  CHECK(invalid_utf8_at("a\xc0\xaf") == 1);     // overlong '/'
  CHECK(invalid_utf8_at("\xed\xa0\x80") == 0);  // surrogate
  CHECK(invalid_utf8_at("x\xe2\x82") == 1);     // cut short
}

}  // namespace
}  // namespace hub
