#include "hub/core/json.h"

#include <set>
#include <vector>

#include "hub/core/error.h"
#include "hub/core/text.h"

namespace hub {
namespace {

using json = nlohmann::json;

// Validating SAX pass: tracks depth and the keys of each open object, builds nothing.
class Checker : public nlohmann::json_sax<json> {
 public:
  explicit Checker(const JsonParseOptions& options) : options_(options) {}

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (options_.reject_duplicate_keys && !keys_.back().insert(k).second) {
      problem_ = "duplicate key '" + printable(k, 80) + "' in an object";
      return false;
    }
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    // e.what() quotes the last token read (up to the whole document): keep
    // only nlohmann's description of what was expected.
    std::string why = e.what();
    if (size_t p = why.find("; last read"); p != std::string::npos) why.resize(p);
    if (size_t p = why.find(": syntax error"); p != std::string::npos)
      why = why.substr(p + 2);
    else if (size_t q = why.find("] "); q != std::string::npos)
      why = why.substr(q + 2);
    problem_ = "not valid JSON at byte " + std::to_string(position) + " (" + printable(why, 200) + ")";
    return false;
  }

  const std::string& problem() const { return problem_; }

 private:
  bool open() {
    if (static_cast<int>(keys_.size()) >= options_.max_depth) {
      problem_ = "JSON nested deeper than " + std::to_string(options_.max_depth) + " levels";
      return false;
    }
    keys_.emplace_back();
    return true;
  }
  bool close() {
    keys_.pop_back();
    return true;
  }

  const JsonParseOptions& options_;
  std::vector<std::set<std::string>> keys_;  // one per open array or object (arrays' stay empty)
  std::string problem_;
};

}  // namespace

json parse_json(std::string_view text, const std::string& what, const JsonParseOptions& options) {
  Checker checker(options);
  bool ok = json::sax_parse(text.begin(), text.end(), &checker, json::input_format_t::json,
                            /*strict=*/true, /*ignore_comments=*/false);
  if (!ok) {
    throw_error(Code::kCorruption,
                what + ": " + (checker.problem().empty() ? std::string("not valid JSON") : checker.problem()));
  }
  // The text is now known to be well-formed and shallow.
  return json::parse(text.begin(), text.end());
}

std::string json_string(const json& obj, const char* key, const std::string& fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
}

uint64_t json_uint(const json& obj, const char* key, uint64_t fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_unsigned() ? it->get<uint64_t>() : fallback;
}

}  // namespace hub
