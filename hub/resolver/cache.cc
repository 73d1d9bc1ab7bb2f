#include "hub/resolver/cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "hub/core/error.h"
#include "hub/core/digest.h"
#include "hub/core/fd.h"
#include "hub/core/json.h"

namespace fs = std::filesystem;

namespace hub::resolver {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string read_small_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_key(const std::string& s) {
  if (s.size() != 40) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

struct LockInfo {
  long pid = 0;
  std::string host;
  bool parsed = false;
};

LockInfo parse_lock(const std::string& text) {
  LockInfo info;
  std::istringstream in(text);
  double t = 0;
  if (in >> info.pid >> info.host >> t) info.parsed = true;
  return info;
}

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
}

}  // namespace

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  std::string h = buf;
  for (char& c : h) {
    if (c == ' ' || c == '.' || c == '/') c = '_';
  }
  return h.empty() ? "unknown-host" : h;
}

bool pid_alive(long pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

fs::path default_cache_dir() {
  if (const char* d = std::getenv("HUB_CACHE_DIR"); d && *d) return fs::path(d);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "hub";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "hub";
  throw_error(Code::kFailedPrecondition,
              "no cache directory: set $HUB_CACHE_DIR (neither $XDG_CACHE_HOME nor $HOME is set)");
}

std::string strip_digest_fragment(const std::string& handle) {
  size_t pos = handle.rfind("#sha256=");
  return pos == std::string::npos ? handle : handle.substr(0, pos);
}

std::string cache_key(const std::string& handle) {
  return sha1_hex(strip_digest_fragment(handle));
}

// ---------------------------------------------------------------- CacheLock

CacheLock CacheLock::acquire(const fs::path& root, const std::string& key, double stale_after_s,
                             double poll_s, const std::function<bool()>& done) {
  const fs::path path = root / (key + ".lock");
  const std::string host = this_host();
  for (;;) {
    std::ostringstream tok;
    tok << ::getpid() << ' ' << host << ' ' << std::fixed << now_s() << ' ' << random_hex(8)
        << '\n';
    int raw = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (raw >= 0) {
      Fd fd(raw);
      std::string t = tok.str();
      try {
        write_all(fd.get(), t, "lock file " + path.string());
        fd.close("lock file " + path.string());
      } catch (const Error&) {
        ::unlink(path.c_str());
        throw;
      }
      CacheLock lock;
      lock.path_ = path;
      lock.token_ = t;
      lock.last_beat_ = now_s();
      return lock;
    }
    if (errno != EEXIST) {
      throw_error(Code::kIOError,
                  "cannot create lock file " + path.string() + ": " + std::strerror(errno));
    }
    if (done && done()) return CacheLock();
    // Judge the current holder.
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) continue;  // just released
    std::string text = read_small_file(path);
    LockInfo info = parse_lock(text);
    double age = now_s() - static_cast<double>(st.st_mtim.tv_sec) - st.st_mtim.tv_nsec * 1e-9;
    bool stale = age > stale_after_s;
    if (info.parsed && info.host == host && !pid_alive(info.pid)) stale = true;
    if (stale) {
      // Take it over: move it aside (only one contender wins the rename), and
      // make sure what we moved is the lock we judged, not a fresh one.
      fs::path aside = root / (key + ".lock.stale." + random_hex(8));
      if (::rename(path.c_str(), aside.c_str()) == 0) {
        if (read_small_file(aside) != text) {
          // Someone else took it over first; put their lock back if possible.
          if (::link(aside.c_str(), path.c_str()) != 0) { /* theirs is gone: fine */ }
        }
        ::unlink(aside.c_str());
      }
      continue;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
  }
}

CacheLock::CacheLock(CacheLock&& other) noexcept
    : path_(std::move(other.path_)), token_(std::move(other.token_)), last_beat_(other.last_beat_) {
  other.path_.clear();
}

CacheLock::~CacheLock() { release(); }

void CacheLock::heartbeat() {
  if (path_.empty()) return;
  double t = now_s();
  if (t - last_beat_ < 5) return;
  last_beat_ = t;
  ::utimensat(AT_FDCWD, path_.c_str(), nullptr, 0);
}

void CacheLock::release() {
  if (path_.empty()) return;
  if (read_small_file(path_) == token_) ::unlink(path_.c_str());
  path_.clear();
}

// -------------------------------------------------------------------- Cache

Cache::Cache(fs::path root) : root_(std::move(root)) {}

fs::path Cache::lock_path(const std::string& key) const { return root_ / (key + ".lock"); }

std::optional<std::string> Cache::complete_sha256(const std::string& key) const {
  fs::path dir = entry_dir(key);
  std::string text = read_small_file(dir / "complete");
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (!is_sha256_hex(text)) return std::nullopt;
  struct stat st;
  if (::lstat((dir / "module").c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  return to_lower(text);
}

std::optional<CacheEntry> Cache::read_entry(const std::string& key) const {
  fs::path dir = entry_dir(key);
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  CacheEntry e;
  e.key = key;
  e.dir = dir;
  e.module_dir = dir / "module";
  e.complete = complete_sha256(key).has_value();
  try {
    auto j = parse_json(read_small_file(dir / "descriptor.json"), "descriptor.json");
    e.handle = j.value("handle", "");
    e.url = j.value("url", "");
    e.fetched_at = j.value("fetched_at", "");
    e.sha256 = j.value("sha256", "");
    e.tree_sha256 = j.value("tree_sha256", "");
    e.size = j.value("size", uint64_t{0});
    e.unpacked_bytes = j.value("unpacked_bytes", uint64_t{0});
    e.entries = j.value("entries", uint64_t{0});
  } catch (const std::exception&) {
    // Missing or damaged descriptor: the entry is listed with empty fields.
  }
  return e;
}

std::vector<CacheEntry> Cache::list() const {
  std::vector<CacheEntry> out;
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) return out;
  for (const auto& it : fs::directory_iterator(root_, ec)) {
    std::string name = it.path().filename().string();
    if (!is_key(name)) continue;
    if (auto e = read_entry(name)) out.push_back(*e);
  }
  std::sort(out.begin(), out.end(),
            [](const CacheEntry& a, const CacheEntry& b) { return a.handle < b.handle; });
  return out;
}

bool Cache::remove(const std::string& handle_or_key) {
  std::string key = handle_or_key;
  if (!is_key(key) || !fs::exists(entry_dir(key))) key = cache_key(handle_or_key);
  fs::path dir = entry_dir(key);
  if (!fs::exists(dir)) return false;
  CacheLock lock = CacheLock::acquire(root_, key, 600, 0.05, nullptr);
  // Move out of sight first so no reader sees a half-deleted module.
  fs::create_directories(tmp_dir());
  fs::path trash = tmp_dir() / (key + ".trash." + random_hex(8));
  if (::rename(dir.c_str(), trash.c_str()) != 0) {
    if (errno == ENOENT) return false;
    throw_error(Code::kIOError, "cannot remove cache entry " + dir.string() + ": " +
                                    std::strerror(errno));
  }
  remove_quietly(trash);
  return true;
}

size_t Cache::clear() {
  size_t n = 0;
  for (const CacheEntry& e : list()) {
    if (remove(e.key)) ++n;
  }
  remove_quietly(tmp_dir());
  return n;
}

std::vector<Cache::Verdict> Cache::verify() const {
  std::vector<Verdict> out;
  for (const CacheEntry& e : list()) {
    Verdict v;
    v.entry = e;
    if (!e.complete) {
      v.problem = "incomplete (no valid completion marker)";
    } else if (e.tree_sha256.empty()) {
      v.problem = "descriptor.json missing or unreadable";
    } else {
      try {
        std::string got = tree_sha256(e.module_dir);
        if (got != e.tree_sha256) {
          v.problem = "content changed: tree sha256 " + got + ", recorded " + e.tree_sha256;
        } else if (auto marker = complete_sha256(e.key); !marker || *marker != e.sha256) {
          v.problem = "completion marker does not match descriptor sha256";
        } else {
          v.ok = true;
        }
      } catch (const std::exception& ex) {
        v.problem = ex.what();
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

void Cache::clean_stale_work(const std::string& key) const {
  std::error_code ec;
  if (!fs::is_directory(tmp_dir(), ec)) return;
  const std::string host = this_host();
  const auto now = fs::file_time_type::clock::now();
  for (const auto& it : fs::directory_iterator(tmp_dir(), ec)) {
    std::string name = it.path().filename().string();
    bool old = false;
    std::error_code ec2;
    auto t = fs::last_write_time(it.path(), ec2);
    if (!ec2 && now - t > std::chrono::hours(24)) old = true;
    if (name.rfind(key + ".", 0) != 0 && !old) continue;
    // <key>.<host>.<pid>.<random>
    std::vector<std::string> parts;
    std::stringstream ss(name);
    for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
    bool dead = parts.size() == 4 && parts[1] == host &&
                !pid_alive(std::strtol(parts[2].c_str(), nullptr, 10));
    bool trash = parts.size() == 3 && parts[1] == "trash";
    if (old || dead || trash) remove_quietly(it.path());
  }
}

std::string tree_sha256(const fs::path& dir) {
  std::vector<fs::path> paths;
  for (const auto& it : fs::recursive_directory_iterator(dir)) paths.push_back(it.path());
  std::sort(paths.begin(), paths.end());
  Sha256 h;
  for (const fs::path& p : paths) {
    std::string rel = p.lexically_relative(dir).generic_string();
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) {
      throw_error(Code::kIOError, "cannot stat " + p.string() + ": " + std::strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) {
      h.update("d " + rel + '\0');
    } else if (S_ISLNK(st.st_mode)) {
      h.update("l " + rel + '\0' + fs::read_symlink(p).string() + '\0');
    } else if (S_ISREG(st.st_mode)) {
      h.update("f " + rel + '\0' + sha256_file(p) + '\0');
    } else {
      h.update("? " + rel + '\0');
    }
  }
  return h.hex_digest();
}

}  // namespace hub::resolver
