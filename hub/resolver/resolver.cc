#include "hub/resolver/resolver.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "hub/core/error.h"
#include "hub/module/module.h"
#include "hub/resolver/cache.h"
#include "hub/core/digest.h"
#include "hub/core/fd.h"

namespace fs = std::filesystem;

namespace hub::resolver {
namespace {

// ------------------------------------------------------------------ hooks
std::mutex& hooks_mutex() {
  static std::mutex mu;
  return mu;
}
std::vector<std::pair<std::string, HandleHook>>& hooks() {
  static std::vector<std::pair<std::string, HandleHook>> h;
  return h;
}

std::optional<HandleSource> run_hooks(const std::string& handle) {
  std::vector<std::pair<std::string, HandleHook>> copy;
  {
    std::lock_guard<std::mutex> lock(hooks_mutex());
    copy = hooks();
  }
  for (auto& [name, hook] : copy) {
    if (auto src = hook(handle)) return src;
  }
  return std::nullopt;
}

// --------------------------------------------------------------- parsing
bool starts_with_ci(const std::string& s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

bool has_scheme(const std::string& s) {
  size_t p = s.find("://");
  if (p == std::string::npos || p == 0) return false;
  for (size_t i = 0; i < p; ++i) {
    char c = s[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return false;
  }
  return true;
}

std::string check_digest(const std::string& hex, const std::string& where) {
  if (!is_sha256_hex(hex)) {
    throw_error(Code::kInvalidArgument,
                where + " must be 64 hex digits (a SHA-256), got '" + hex + "'");
  }
  return to_lower(hex);
}

std::string merge_digest(std::string a, const std::string& b, const std::string& what_b) {
  if (b.empty()) return a;
  if (a.empty()) return b;
  if (a != b) {
    throw_error(Code::kInvalidArgument,
                "conflicting expected digests: " + a + " and " + b + " (" + what_b + ")");
  }
  return a;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

fs::path file_url_path(const std::string& url) {
  std::string rest = url.substr(7);  // after "file://"
  if (starts_with_ci(rest, "localhost/")) rest = rest.substr(9);
  if (rest.empty() || rest[0] != '/') {
    throw_error(Code::kInvalidArgument,
                "file URL '" + url + "' must be file:///absolute/path (no remote host)");
  }
  std::string out;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() + 0 && hex_value(rest[i + 1]) >= 0 &&
        hex_value(rest[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(rest[i + 1]) * 16 + hex_value(rest[i + 2]));
      i += 2;
    } else {
      out += rest[i];
    }
  }
  return fs::path(out);
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s = to_lower(v);
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

// --------------------------------------------------------------- progress
std::string human(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) {
    bytes /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

// Progress line on stderr: "label  12.3 MB / 100.0 MB  8.1 MB/s  ETA 11 s".
class TtyProgress {
 public:
  TtyProgress(std::string label, bool enabled) : label_(std::move(label)), enabled_(enabled) {
    if (label_.size() > 48) label_ = "..." + label_.substr(label_.size() - 45);
    start_ = last_ = clock::now();
  }
  void update(uint64_t now, uint64_t total) {
    if (!enabled_) return;
    auto t = clock::now();
    if (t - last_ < std::chrono::milliseconds(100)) return;
    last_ = t;
    double secs = std::chrono::duration<double>(t - start_).count();
    double rate = secs > 0 ? static_cast<double>(now) / secs : 0;
    std::string line = "\r\033[K" + label_ + "  " + human(static_cast<double>(now));
    if (total > 0) line += " / " + human(static_cast<double>(total));
    line += "  " + human(rate) + "/s";
    if (total > now && rate > 0) {
      line += "  ETA " + std::to_string(static_cast<long>((total - now) / rate + 0.5)) + " s";
    }
    std::fputs(line.c_str(), stderr);
    shown_ = true;
  }
  void finish() {
    if (enabled_ && shown_) std::fputs("\r\033[K", stderr);
    shown_ = false;
  }
  ~TtyProgress() { finish(); }

 private:
  using clock = std::chrono::steady_clock;
  std::string label_;
  bool enabled_;
  bool shown_ = false;
  clock::time_point start_, last_;
};

// ------------------------------------------------------------- file helpers
std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

class RemoveOnExit {
 public:
  explicit RemoveOnExit(fs::path p) : path_(std::move(p)) {}
  ~RemoveOnExit() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }

 private:
  fs::path path_;
};

// ---------------------------------------------------------------- resolve
struct Source {
  bool http = false;
  std::string url;     // http(s) URL or the local archive's path as text
  fs::path local;      // local path (directory or archive)
};

Source classify(const std::string& base, std::string& expected, bool from_hook) {
  Source s;
  if (is_http_url(base)) {
    s.http = true;
    s.url = base;
    return s;
  }
  if (starts_with_ci(base, "file://")) {
    s.local = file_url_path(base);
  } else if (has_scheme(base)) {
    if (!from_hook) {
      if (auto hs = run_hooks(base)) {
        expected = merge_digest(expected, hs->sha256.empty() ? "" : check_digest(hs->sha256, "hook digest"),
                                "from the handle hook");
        return classify(hs->url, expected, true);
      }
    }
    throw_error(Code::kInvalidArgument,
                "unsupported scheme (use a path, file://, http:// or https://)");
  } else {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(base, ec)) && !from_hook) {
      if (auto hs = run_hooks(base)) {
        expected = merge_digest(expected, hs->sha256.empty() ? "" : check_digest(hs->sha256, "hook digest"),
                                "from the handle hook");
        return classify(hs->url, expected, true);
      }
    }
    s.local = fs::path(base);
  }
  std::error_code ec;
  if (!fs::exists(s.local, ec)) {
    throw_error(Code::kNotFound, "no such file or directory: " + s.local.string() +
                                     (from_hook ? "" : " (and no handle hook recognises it)"));
  }
  s.url = s.local.string();
  return s;
}

fs::path resolve_impl(const std::string& handle, const ResolveOptions& o) {
  if (handle.empty()) throw_error(Code::kInvalidArgument, "empty handle");
  const std::string base = strip_digest_fragment(handle);
  std::string expected;
  if (base.size() != handle.size()) {
    expected = check_digest(handle.substr(base.size() + 8), "'#sha256=' fragment");
  }
  if (!o.sha256.empty()) {
    expected = merge_digest(expected, check_digest(o.sha256, "--sha256"), "--sha256");
  }

  // Registry-style handles: a cache hit (or offline mode) must not consult the
  // hooks, which may need the network.
  std::error_code exists_ec;
  const bool for_hooks =
      !is_http_url(base) && !starts_with_ci(base, "file://") &&
      (has_scheme(base) || !fs::exists(fs::symlink_status(base, exists_ec)));
  if (for_hooks) {
    const fs::path root = o.cache_dir.empty() ? default_cache_dir() : o.cache_dir;
    Cache cache(root);
    const std::string key = cache_key(handle);
    auto sha = cache.complete_sha256(key);
    if (sha && (expected.empty() || *sha == expected)) return cache.entry_dir(key) / "module";
    if (o.offline.value_or(env_flag("HUB_OFFLINE"))) {
      throw_error(Code::kUnavailable, "offline mode ($HUB_OFFLINE): not in the cache " +
                                          root.string() + " and downloading is disabled");
    }
  }

  Source src = classify(base, expected, false);
  if (!src.http) {
    struct stat st;
    if (::stat(src.local.c_str(), &st) != 0) {
      throw_error(Code::kIOError, "cannot stat " + src.local.string() + ": " + std::strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) {
      if (!expected.empty()) {
        throw_error(Code::kInvalidArgument,
                    "a sha256 was given but " + src.local.string() +
                        " is a directory (digests apply to archives)");
      }
      fs::path dir = fs::absolute(src.local).lexically_normal();
      validate_module_dir(dir);
      return dir;
    }
    if (!S_ISREG(st.st_mode)) {
      throw_error(Code::kInvalidArgument,
                  src.local.string() + " is neither a module directory nor an archive file");
    }
  }

  const fs::path root = o.cache_dir.empty() ? default_cache_dir() : o.cache_dir;
  Cache cache(root);
  const std::string key = cache_key(handle);
  const fs::path module_dir = cache.entry_dir(key) / "module";
  auto hit = [&] {
    auto sha = cache.complete_sha256(key);
    return sha && (expected.empty() || *sha == expected);
  };
  if (hit()) return module_dir;

  const bool offline = o.offline.value_or(env_flag("HUB_OFFLINE"));
  if (offline) {
    if (auto sha = cache.complete_sha256(key)) {
      throw_error(Code::kDataLoss, "offline mode: the cached copy in " + cache.entry_dir(key).string() +
                                       " has sha256 " + *sha + " but " + expected +
                                       " was expected");
    }
    throw_error(Code::kUnavailable, "offline mode ($HUB_OFFLINE): not in the cache " +
                                        root.string() + " and downloading is disabled");
  }

  std::error_code ec;
  fs::create_directories(cache.tmp_dir(), ec);
  if (ec) throw_error(Code::kIOError, "cannot create cache directory " + root.string() + ": " + ec.message());
  CacheLock lock = CacheLock::acquire(root, key, o.lock_stale_s, o.lock_poll_s, hit);
  if (!lock.held() || hit()) return module_dir;
  cache.clean_stale_work(key);

  const fs::path work =
      cache.tmp_dir() / (key + "." + this_host() + "." + std::to_string(::getpid()) + "." + random_hex(8));
  if (::mkdir(work.c_str(), 0755) != 0) {
    throw_error(Code::kIOError, "cannot create " + work.string() + ": " + std::strerror(errno));
  }
  RemoveOnExit work_guard(work);

  fs::path archive;
  FetchResult fr;
  if (src.http) {
    archive = work / "download";
    Fetcher& fetcher = o.fetcher ? *o.fetcher : Fetcher::default_fetcher();
    TtyProgress progress(base, !o.quiet && ::isatty(2));
    fr = fetcher.fetch(src.url, archive, o.fetch, [&](uint64_t now, uint64_t total) {
      progress.update(now, total);
      lock.heartbeat();
      return true;
    });
    progress.finish();
  } else {
    archive = src.local;
    fr.sha256 = sha256_file(archive);
    fr.bytes = fs::file_size(archive);
    fr.effective_url = src.url;
  }
  if (!expected.empty() && fr.sha256 != expected) {
    throw_error(Code::kDataLoss, "sha256 mismatch: expected " + expected + ", got " + fr.sha256 +
                                     " (" + std::to_string(fr.bytes) + " bytes from " + src.url + ")");
  }

  const fs::path staging = work / "entry";
  if (::mkdir(staging.c_str(), 0755) != 0) {
    throw_error(Code::kIOError, "cannot create " + staging.string() + ": " + std::strerror(errno));
  }
  UnpackOptions uo;
  uo.limits = o.limits;
  uo.display_name = "archive " + src.url;
  UnpackResult ur = unpack_archive(archive, staging / "module", uo);
  if (src.http) fs::remove(archive, ec);

  nlohmann::json desc = {
      {"handle", base},
      {"url", fr.effective_url.empty() ? src.url : fr.effective_url},
      {"fetched_at", utc_now()},
      {"sha256", fr.sha256},
      {"size", fr.bytes},
      {"unpacked_bytes", ur.total_bytes},
      {"entries", ur.entries},
      {"tree_sha256", tree_sha256(staging / "module")},
  };
  write_new_file_synced(staging / "descriptor.json", desc.dump(2) + "\n");
  write_new_file_synced(staging / "complete", fr.sha256 + "\n");  // last
  fsync_dir(staging);

  const fs::path entry = cache.entry_dir(key);
  for (int tries = 0;; ++tries) {
    if (::rename(staging.c_str(), entry.c_str()) == 0) break;
    int err = errno;
    if ((err != EEXIST && err != ENOTEMPTY) || tries >= 3) {
      throw_error(Code::kIOError, "cannot install " + entry.string() + ": " + std::strerror(err));
    }
    // Someone else installed it meanwhile (we lost a race or took over a
    // stale lock): keep theirs if it is complete and the same archive.
    auto sha = cache.complete_sha256(key);
    if (sha && *sha == fr.sha256) return module_dir;
    // Damaged or different: move it out of sight, then retry.
    fs::path trash = cache.tmp_dir() / (key + ".trash." + random_hex(8));
    if (::rename(entry.c_str(), trash.c_str()) == 0) fs::remove_all(trash, ec);
  }
  fsync_dir(root);
  return module_dir;
}

}  // namespace

bool is_http_url(const std::string& handle) {
  return starts_with_ci(handle, "http://") || starts_with_ci(handle, "https://");
}

void add_handle_hook(const std::string& name, HandleHook hook) {
  std::lock_guard<std::mutex> lock(hooks_mutex());
  for (auto& [n, h] : hooks()) {
    if (n == name) {
      h = std::move(hook);
      return;
    }
  }
  hooks().emplace_back(name, std::move(hook));
}

void remove_handle_hook(const std::string& name) {
  std::lock_guard<std::mutex> lock(hooks_mutex());
  auto& h = hooks();
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it->first == name) {
      h.erase(it);
      return;
    }
  }
}

fs::path resolve(const std::string& handle, const ResolveOptions& options) {
  try {
    return resolve_impl(handle, options);
  } catch (const Error& e) {
    throw e.with_context("module '" + strip_digest_fragment(handle) + "'");
  } catch (const fs::filesystem_error& e) {
    throw Error(Code::kIOError, "module '" + strip_digest_fragment(handle) + "': " + e.what());
  }
}

namespace {
// Wires the resolver into the module layer when libhub loads:
// load_module_spec(handle) resolves URLs, archives and registry names through
// resolve(), and every unpacked download must load as a module.
const bool kModuleHooksInstalled = [] {
  set_module_handle_resolver([](const std::string& handle) { return resolve(handle).string(); });
  set_module_validator([](const std::filesystem::path& dir) { load_module_spec(dir.string()); });
  return true;
}();
}  // namespace

}  // namespace hub::resolver
