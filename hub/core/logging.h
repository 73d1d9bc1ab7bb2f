// Minimal leveled logging to stderr. Thread-safe (one line per call).
// Level from $HUB_LOG_LEVEL (debug|info|warning|error), default info.
#pragma once

#include <sstream>
#include <string>

namespace hub {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kOff = 4 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_line(LogLevel level, const std::string& line);

namespace internal {
class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage() { log_line(level_, stream_.str()); }
  std::ostringstream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace internal

}  // namespace hub

#define HUB_LOG(level)                                  \
  if (::hub::LogLevel::k##level < ::hub::log_level()) { \
  } else                                                \
    ::hub::internal::LogMessage(::hub::LogLevel::k##level).stream()
