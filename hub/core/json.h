// The one parser for JSON that hub did not write itself: safetensors headers,
// registry responses, upload metadata and request bodies, cache descriptors.
//
// nlohmann::json parses iteratively, but copying, comparing and dump()ing a
// value recurse once per nesting level, so a few kilobytes of "[[[[..." from
// an attacker would overflow the stack of whoever touches the result. This
// parser first runs the document through a SAX pass that refuses it as soon
// as nesting goes deeper than the limit, so no deep value is ever built.
//
// Errors are hub::Error(kCorruption) "<what>: ..." naming the byte offset and
// the reason; they never quote the document (which may be huge or hostile),
// except a duplicate key, quoted through printable() and cut to 80 bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hub {

// Deep enough for every document hub reads (a registry version list is 7
// levels deep), shallow enough that recursing over a value is harmless.
inline constexpr int kMaxJsonDepth = 32;

struct JsonParseOptions {
  // Largest nesting of arrays and objects; the outermost one is depth 1.
  int max_depth = kMaxJsonDepth;
  // RFC 8259 leaves duplicate keys undefined (nlohmann keeps the last one
  // silently): refuse them in any object.
  bool reject_duplicate_keys = true;
};

// Parses exactly one JSON value (surrounding whitespace allowed). Throws
// kCorruption naming `what` for malformed text, nesting deeper than
// options.max_depth, and duplicate keys.
nlohmann::json parse_json(std::string_view text, const std::string& what, const JsonParseOptions& options = {});

// Typed reads of untrusted values that never throw: `obj[key]` when `obj` is
// an object holding `key` with that type, else `fallback`.
std::string json_string(const nlohmann::json& obj, const char* key, const std::string& fallback = "");
uint64_t json_uint(const nlohmann::json& obj, const char* key, uint64_t fallback = 0);

}  // namespace hub
