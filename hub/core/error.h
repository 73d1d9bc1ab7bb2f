// hub::Error — the one error mechanism of the library.
//
// Every failure a user can cause (bad file, bad flag, bad shape, network
// trouble) is reported by throwing hub::Error (or a subclass) with a Code and a
// message that names the thing and the offending value. Callers add context as
// the error travels up with Error::with_context(). Internal invariants (bugs in
// hub itself) use HUB_CHECK, which throws Code::kInternal with file:line.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace hub {

enum class Code : int {
  kInvalidArgument = 1,
  kNotFound,
  kAlreadyExists,
  kCorruption,
  kIOError,
  kUnavailable,  // network / transient
  kUnimplemented,
  kFailedPrecondition,
  kPermissionDenied,
  kResourceExhausted,  // size caps, bombs
  kDeadlineExceeded,   // timeouts
  kDataLoss,           // digest mismatch
  kInternal,
};

std::string_view code_name(Code code);

// Distinct process exit code for each error code (used by the CLI): 10 + code.
int exit_code(Code code);

class Error : public std::runtime_error {
 public:
  Error(Code code, std::string message);
  Code code() const { return code_; }
  // The message without the code prefix.
  const std::string& message() const { return message_; }
  // Returns a copy whose message is "context: message".
  Error with_context(std::string_view context) const;

 private:
  Code code_;
  std::string message_;
};

[[noreturn]] void throw_error(Code code, std::string message);

namespace internal {
[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& extra);
}  // namespace internal

}  // namespace hub

// Internal invariant: a failure here is a bug in hub, not bad user input.
#define HUB_CHECK(cond, ...)                                                                           \
  do {                                                                                                 \
    if (!(cond)) ::hub::internal::check_failed(#cond, __FILE__, __LINE__, ::std::string{__VA_ARGS__}); \
  } while (0)
// A branch that cannot be taken (a bug in hub if it is); unlike HUB_CHECK(false),
// the compiler knows at any optimisation level that control ends here.
#define HUB_UNREACHABLE(...) \
  ::hub::internal::check_failed("unreachable", __FILE__, __LINE__, ::std::string{__VA_ARGS__})
