#include "hub/interop/tf/json.h"

#include "hub/core/error.h"

namespace hub::tf {

namespace {

// Counts nesting and stops the parse (returns false) past the limit.
class DepthCheck final : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return ++depth_ <= kMaxJsonDepth; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override { return ++depth_ <= kMaxJsonDepth; }
  bool end_array() override { return --depth_, true; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception&) override {
    error_at_ = position;
    return false;
  }
  int depth() const { return depth_; }
  std::size_t error_at() const { return error_at_; }

 private:
  int depth_ = 0;
  std::size_t error_at_ = 0;
};

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& what) {
  DepthCheck check;
  if (!nlohmann::json::sax_parse(text, &check)) {
    if (check.depth() > kMaxJsonDepth)
      throw_error(Code::kCorruption,
                  what + ": JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    throw_error(Code::kCorruption,
                what + ": malformed JSON at byte " + std::to_string(check.error_at()));
  }
  return nlohmann::json::parse(text);
}

}  // namespace hub::tf
