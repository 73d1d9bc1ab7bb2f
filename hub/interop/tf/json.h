// Bounded-depth JSON parsing for TensorFlow.js model files, which come from
// untrusted places. nlohmann::json parses iteratively, but copying,
// comparing and dump()ing a value recurse once per nesting level, so a few
// kilobytes of "[[[[..." could overflow the stack of whoever touches the
// result. parse_json() first runs the text through a SAX pass that refuses it
// as soon as nesting goes deeper than the limit, so no deep value is built.
//
// Internal to hub/interop/tf; to be replaced by the library-wide
// hub/core/json.h (same contract) when that reaches this branch.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hub::tf {

// Deeper than any model.json TensorFlow.js writes (a GraphDef's function
// library in JSON nests about 15 levels).
inline constexpr int kMaxJsonDepth = 32;

// Parses exactly one JSON value. Throws hub::Error(kCorruption) naming `what`
// and the byte offset for malformed text or nesting deeper than kMaxJsonDepth
// (never quoting the text).
nlohmann::json parse_json(std::string_view text, const std::string& what);

}  // namespace hub::tf
