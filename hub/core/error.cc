#include "hub/core/error.h"

namespace hub {

std::string_view code_name(Code code) {
  switch (code) {
    case Code::kInvalidArgument:
      return "invalid argument";
    case Code::kNotFound:
      return "not found";
    case Code::kAlreadyExists:
      return "already exists";
    case Code::kCorruption:
      return "corruption";
    case Code::kIOError:
      return "I/O error";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kUnimplemented:
      return "unimplemented";
    case Code::kFailedPrecondition:
      return "failed precondition";
    case Code::kPermissionDenied:
      return "permission denied";
    case Code::kResourceExhausted:
      return "resource exhausted";
    case Code::kDeadlineExceeded:
      return "deadline exceeded";
    case Code::kDataLoss:
      return "data loss";
    case Code::kInternal:
      return "internal error";
  }
  return "unknown";
}

int exit_code(Code code) { return 10 + static_cast<int>(code); }

Error::Error(Code code, std::string message) : std::runtime_error(message), code_(code), message_(std::move(message)) {}

Error Error::with_context(std::string_view context) const {
  return Error(code_, std::string(context) + ": " + message_);
}

void throw_error(Code code, std::string message) { throw Error(code, std::move(message)); }

namespace internal {
void check_failed(const char* expr, const char* file, int line, const std::string& extra) {
  std::string msg = std::string("internal check failed: ") + expr + " at " + file + ":" + std::to_string(line);
  if (!extra.empty()) msg += " (" + extra + ")";
  throw Error(Code::kInternal, msg);
}
}  // namespace internal

}  // namespace hub
