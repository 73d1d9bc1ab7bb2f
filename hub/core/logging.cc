#include "hub/core/logging.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace hub {
namespace {
LogLevel initial_level() {
  const char* env = std::getenv("HUB_LOG_LEVEL");
  if (!env) return LogLevel::kInfo;
  if (!std::strcmp(env, "debug")) return LogLevel::kDebug;
  if (!std::strcmp(env, "warning")) return LogLevel::kWarning;
  if (!std::strcmp(env, "error")) return LogLevel::kError;
  if (!std::strcmp(env, "off")) return LogLevel::kOff;
  return LogLevel::kInfo;
}
std::atomic<LogLevel> g_level{initial_level()};
std::mutex g_mu;
}  // namespace

void set_log_level(LogLevel level) { g_level = level; }
LogLevel log_level() { return g_level; }

void log_line(LogLevel level, const std::string& line) {
  static const char* kPrefix[] = {"debug: ", "", "warning: ", "error: ", ""};
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(stderr, "%s%s\n", kPrefix[static_cast<int>(level)], line.c_str());
}

}  // namespace hub
