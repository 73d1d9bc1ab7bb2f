// parse_json: the bounded parser every untrusted JSON document goes through.
#include "hub/core/json.h"

#include <doctest/doctest.h>

#include <string>

#include "testutil.h"

namespace hub {
namespace {

using testing::expect_error;

std::string nested(char open, int depth) {
  std::string s(static_cast<size_t>(depth), open);
  return s + std::string(static_cast<size_t>(depth), open == '[' ? ']' : '}');
}

TEST_CASE("parse_json: documents within the limits parse as nlohmann would") {
  auto j = parse_json(R"({"a": [1, 2, {"b": null}], "c": "d"})", "doc");
  CHECK(j["a"][2].contains("b"));
  CHECK(j["c"] == "d");
  CHECK(parse_json("  42 ", "doc") == 42);
  // Exactly at the limit.
  auto deep = parse_json(nested('[', kMaxJsonDepth), "doc");
  CHECK(deep.is_array());
}

TEST_CASE("parse_json: nesting deeper than the limit is refused before anything is built") {
  // 1300 levels: the size of the upload that used to crash the registry.
  expect_error(
      Code::kCorruption, [] { parse_json(nested('[', 650), "doc"); }, "doc: JSON nested deeper than 32 levels");
  expect_error(
      Code::kCorruption, [] { parse_json(nested('[', kMaxJsonDepth + 1), "doc"); }, "deeper than 32");
  // Unterminated and enormous: refused at the limit, not at the end.
  expect_error(
      Code::kCorruption, [] { parse_json(std::string(1 << 20, '['), "doc"); }, "deeper than 32");
  std::string objects;
  for (int i = 0; i < 100; ++i) objects += "{\"k\":";
  expect_error(
      Code::kCorruption, [&] { parse_json(objects, "doc"); }, "deeper than 32");
  JsonParseOptions shallow;
  shallow.max_depth = 2;
  CHECK(parse_json("[[1]]", "doc", shallow).size() == 1);
  expect_error(
      Code::kCorruption, [&] { parse_json("[[[1]]]", "doc", shallow); }, "deeper than 2");
}

TEST_CASE("parse_json: malformed text names the byte offset and never quotes the document") {
  const std::string secret(5000, 'x');
  try {
    parse_json("{\"" + secret + "\": tru}", "reply");
    FAIL("parsed");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kCorruption);
    const std::string m = e.what();
    CHECK(m.find("reply: not valid JSON at byte") != std::string::npos);
    CHECK(m.find("xxxxxxxxxx") == std::string::npos);
    CHECK(m.size() < 400);
  }
  expect_error(
      Code::kCorruption, [] { parse_json("", "empty"); }, "empty: not valid JSON");
  expect_error(
      Code::kCorruption, [] { parse_json("[1] [2]", "two"); }, "two: not valid JSON");
}

TEST_CASE("parse_json: duplicate keys are refused at any depth, unless allowed") {
  expect_error(
      Code::kCorruption, [] { parse_json(R"({"a": 1, "a": 2})", "doc"); }, "duplicate key 'a'");
  expect_error(
      Code::kCorruption, [] { parse_json(R"({"x": {"b": 1, "b": 2}})", "doc"); }, "duplicate key 'b'");
  // The same key in sibling objects is fine.
  CHECK(parse_json(R"([{"a": 1}, {"a": 2}])", "doc").size() == 2);
  JsonParseOptions lax;
  lax.reject_duplicate_keys = false;
  CHECK(parse_json(R"({"a": 1, "a": 2})", "doc", lax)["a"] == 2);
  // A hostile key is quoted safely and cut short.
  try {
    parse_json("{\"\\n" + std::string(300, 'k') + "\": 1, \"\\n" + std::string(300, 'k') + "\": 2}", "doc");
    FAIL("parsed");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("\\x0a") != std::string::npos);
    CHECK(m.find('\n') == std::string::npos);
    CHECK(m.size() < 200);
  }
}

}  // namespace
}  // namespace hub
