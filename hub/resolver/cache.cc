#include "hub/resolver/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <thread>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/core/fd.h"
#include "hub/core/interrupt.h"
#include "hub/core/json.h"
#include "hub/core/logging.h"

namespace fs = std::filesystem;

namespace hub::resolver {
namespace {

constexpr const char* kTmp = ".tmp";
constexpr const char* kRefs = "refs";
constexpr const char* kPartial = ".partial";
constexpr const char* kPartialBody = "body.part";
constexpr const char* kPartialState = "state.json";

double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool is_key(const std::string& s) {
  if (s.size() != 40) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A directory `name` inside `dir_fd`, never through a symlink; empty when
// missing, not a directory, or a link.
Fd open_dir_at(int dir_fd, const std::string& name) {
  if (dir_fd < 0) return Fd();
  return Fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// A small regular file `name` inside `dir_fd`, never through a symlink.
std::optional<std::string> read_small_at(int dir_fd, const std::string& name, size_t max_bytes = 1 << 20) {
  if (dir_fd < 0) return std::nullopt;
  Fd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return std::nullopt;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) > max_bytes)
    return std::nullopt;
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) return std::nullopt;
  }
  return out;
}

bool is_real_dir_at(int dir_fd, const std::string& name) {
  struct stat st;
  return dir_fd >= 0 && ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

// Makes `name` inside `dir_fd` a real directory: a symlink or file planted
// there is removed first.
void ensure_dir_at(int dir_fd, const std::string& name, const fs::path& shown) {
  for (int tries = 0; tries < 3; ++tries) {
    if (::mkdirat(dir_fd, name.c_str(), 0700) == 0 || is_real_dir_at(dir_fd, name)) return;
    if (errno != EEXIST) break;
    ::unlinkat(dir_fd, name.c_str(), 0);  // not a directory: a planted link or file
  }
  throw_error(Code::kIOError, "cannot create cache directory " + shown.string() + ": " + std::strerror(errno));
}

// Checks that the cache root cannot be written by anyone else.
void check_root(int fd, const fs::path& root) {
  struct stat st;
  if (::fstat(fd, &st) != 0) throw_error(Code::kIOError, "cannot stat cache directory " + root.string());
  if (!S_ISDIR(st.st_mode))
    throw_error(Code::kInvalidArgument, "cache directory " + root.string() + " is not a directory");
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    throw_error(Code::kPermissionDenied,
                "cache directory " + root.string() + " belongs to user " + std::to_string(st.st_uid) +
                    ", not to you (" + std::to_string(::geteuid()) +
                    "): its owner controls what it holds; use a cache directory of your own ($HUB_CACHE_DIR)");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw_error(Code::kPermissionDenied,
                "cache directory " + root.string() + " is writable by group or others (mode " + mode +
                    "), so another user could plant files or links in it; make it private with `chmod go-w " +
                    root.string() + "`, or point $HUB_CACHE_DIR at a private directory");
  }
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

std::string ref_name(const std::string& registry, const std::string& handle) {
  return sha1_hex("ref\n" + registry + "\n" + handle);
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

std::string cache_key(const std::string& handle) { return sha1_hex(strip_digest_fragment(handle)); }

std::string file_cache_key(const std::string& url) { return sha1_hex("file\n" + strip_digest_fragment(url)); }

std::string registry_cache_key(const std::string& registry_id, const std::string& name_at_version,
                               const std::string& sha256) {
  return sha1_hex("registry\n" + registry_id + "\n" + name_at_version + "\n" + sha256);
}

std::string import_cache_key(const std::string& key, const std::string& options_key) {
  return options_key.empty() ? key : sha1_hex(key + "\nimport " + options_key);
}

// ---------------------------------------------------------------- CacheLock

CacheLock CacheLock::acquire(const Cache& cache, const std::string& key, double stale_after_s, double poll_s,
                             const std::function<bool()>& done) {
  const int root = cache.root_fd();
  HUB_CHECK(root >= 0, "the cache must be created before locking");
  const std::string name = key + ".lock";
  const std::string shown = cache.lock_path(key).string();
  const std::string host = this_host();
  for (;;) {
    std::ostringstream tok;
    tok << ::getpid() << ' ' << host << ' ' << std::fixed << now_s() << ' ' << random_hex(8) << '\n';
    Fd fd(::openat(root, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (fd) {
      std::string t = tok.str();
      try {
        write_all(fd.get(), t, "lock file " + shown);
        fd.close("lock file " + shown);
      } catch (const Error&) {
        ::unlinkat(root, name.c_str(), 0);
        throw;
      }
      CacheLock lock;
      lock.root_fd_ = root;
      lock.name_ = name;
      lock.token_ = t;
      lock.last_beat_ = now_s();
      return lock;
    }
    if (errno != EEXIST) throw_error(Code::kIOError, "cannot create lock file " + shown + ": " + std::strerror(errno));
    if (done && done()) return CacheLock();
    if (interrupted()) throw_error(Code::kUnavailable, "interrupted while waiting for the lock " + shown);
    // Judge the current holder (a symlink planted here is never followed:
    // its text reads as empty and it ages out like a dead lock).
    struct stat st;
    if (::fstatat(root, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // just released
    std::string text = read_small_at(root, name).value_or("");
    LockInfo info = parse_lock(text);
    double age = now_s() - static_cast<double>(st.st_mtim.tv_sec) - st.st_mtim.tv_nsec * 1e-9;
    bool stale = age > stale_after_s;
    if (info.parsed && info.host == host && !pid_alive(info.pid)) stale = true;
    if (stale) {
      // Take it over: move it aside (only one contender wins the rename), and
      // make sure what we moved is the lock we judged, not a fresh one.
      const std::string aside = key + ".lock.stale." + random_hex(8);
      if (::renameat(root, name.c_str(), root, aside.c_str()) == 0) {
        if (read_small_at(root, aside).value_or("") != text) {
          // Someone else took it over first; put their lock back if possible.
          if (::linkat(root, aside.c_str(), root, name.c_str(), 0) != 0) { /* theirs is gone: fine */
          }
        }
        ::unlinkat(root, aside.c_str(), 0);
      }
      continue;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
  }
}

CacheLock::CacheLock(CacheLock&& other) noexcept
    : root_fd_(other.root_fd_),
      name_(std::move(other.name_)),
      token_(std::move(other.token_)),
      last_beat_(other.last_beat_) {
  other.root_fd_ = -1;
}

CacheLock::~CacheLock() { release(); }

void CacheLock::heartbeat() {
  if (root_fd_ < 0) return;
  double t = now_s();
  if (t - last_beat_ < 5) return;
  last_beat_ = t;
  ::utimensat(root_fd_, name_.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

void CacheLock::release() {
  if (root_fd_ < 0) return;
  if (read_small_at(root_fd_, name_).value_or("") == token_) ::unlinkat(root_fd_, name_.c_str(), 0);
  root_fd_ = -1;
}

// -------------------------------------------------------------------- Cache

Cache::Cache(fs::path root) : root_(std::move(root)) {
  Fd fd(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return;  // an empty cache until create()
    if (errno == ENOTDIR)
      throw_error(Code::kInvalidArgument, "cache directory " + root_.string() + " is not a directory");
    throw_error(Code::kIOError, "cannot open cache directory " + root_.string() + ": " + std::strerror(errno));
  }
  check_root(fd.get(), root_);
  root_fd_ = std::move(fd);
}

void Cache::create() {
  if (!root_fd_) {
    std::error_code ec;
    if (root_.has_parent_path()) fs::create_directories(root_.parent_path(), ec);
    if (::mkdir(root_.c_str(), 0700) != 0 && errno != EEXIST)
      throw_error(Code::kIOError, "cannot create cache directory " + root_.string() + ": " + std::strerror(errno));
    *this = Cache(root_);
    if (!root_fd_) throw_error(Code::kIOError, "cannot open cache directory " + root_.string());
  }
  ensure_dir_at(root_fd_.get(), kTmp, tmp_dir());
  ensure_dir_at(root_fd_.get(), kRefs, root_ / kRefs);
}

fs::path Cache::make_work_dir(const std::string& key) {
  Fd tmp = open_dir_at(root_fd_.get(), kTmp);
  if (!tmp) {
    create();
    tmp = open_dir_at(root_fd_.get(), kTmp);
  }
  const std::string name = key + "." + this_host() + "." + std::to_string(::getpid()) + "." + random_hex(8);
  if (!tmp || ::mkdirat(tmp.get(), name.c_str(), 0755) != 0)
    throw_error(Code::kIOError, "cannot create " + (tmp_dir() / name).string() + ": " + std::strerror(errno));
  return tmp_dir() / name;
}

std::optional<std::string> Cache::complete_sha256(const std::string& key) const {
  Fd entry = open_dir_at(root_fd_.get(), key);
  if (!entry) return std::nullopt;
  std::string text = read_small_at(entry.get(), "complete", 1024).value_or("");
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (!is_sha256_hex(text) || (!is_real_dir_at(entry.get(), "module") && !is_real_dir_at(entry.get(), "file")))
    return std::nullopt;
  return to_lower(text);
}

std::optional<CacheEntry> Cache::read_entry(const std::string& key) const {
  Fd entry = open_dir_at(root_fd_.get(), key);
  if (!entry) return std::nullopt;
  CacheEntry e;
  e.key = key;
  e.dir = entry_dir(key);
  e.module_dir = e.dir / (is_real_dir_at(entry.get(), "file") ? "file" : "module");
  e.complete = complete_sha256(key).has_value();
  try {
    auto text = read_small_at(entry.get(), "descriptor.json");
    if (!text) return e;
    auto j = parse_json(*text, "descriptor.json");
    auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; };
    auto num = [&](const char* k) { return j.contains(k) && j[k].is_number_unsigned() ? j[k].get<uint64_t>() : 0; };
    e.handle = str("handle");
    e.url = str("url");
    e.fetched_at = str("fetched_at");
    e.sha256 = str("sha256");
    e.tree_sha256 = str("tree_sha256");
    e.registry = str("registry");
    e.version = str("version");
    e.source_format = str("source_format");
    e.import_options = str("import_options");
    e.size = num("size");
    e.unpacked_bytes = num("unpacked_bytes");
    e.entries = num("entries");
  } catch (const Error&) {
    // Damaged descriptor: the entry is listed with empty fields.
  }
  return e;
}

std::optional<CachedRef> Cache::read_ref(const std::string& registry, const std::string& handle) const {
  Fd refs = open_dir_at(root_fd_.get(), kRefs);
  auto text = read_small_at(refs.get(), ref_name(registry, handle));
  if (!text) return std::nullopt;
  try {
    auto j = parse_json(*text, "ref");
    CachedRef r;
    r.handle = j.at("handle").get<std::string>();
    r.registry = j.at("registry").get<std::string>();
    r.version = j.at("version").get<std::string>();
    r.sha256 = j.at("sha256").get<std::string>();
    r.resolved_at = j.value("resolved_at", "");
    if (r.handle != handle || r.registry != registry || r.version.empty() || !is_sha256_hex(r.sha256))
      return std::nullopt;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;  // damaged: as if absent
  }
}

void Cache::write_ref(const CachedRef& ref) {
  create();
  Fd refs = open_dir_at(root_fd_.get(), kRefs);
  const std::string name = ref_name(ref.registry, ref.handle);
  const std::string tmp = "." + name + "." + random_hex(8);
  const std::string shown = (root_ / kRefs / name).string();
  nlohmann::json j = {{"handle", ref.handle},
                      {"registry", ref.registry},
                      {"version", ref.version},
                      {"sha256", ref.sha256},
                      {"resolved_at", ref.resolved_at.empty() ? utc_now() : ref.resolved_at}};
  Fd fd = open_fd_at(refs.get(), tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644, shown);
  try {
    write_all(fd.get(), j.dump(2) + "\n", shown);
    fsync_fd(fd.get(), shown);
    fd.close(shown);
    if (::renameat(refs.get(), tmp.c_str(), refs.get(), name.c_str()) != 0)
      throw_error(Code::kIOError, "cannot write " + shown + ": " + std::strerror(errno));
  } catch (...) {
    ::unlinkat(refs.get(), tmp.c_str(), 0);
    throw;
  }
}

std::vector<CacheEntry> Cache::list() const {
  std::vector<CacheEntry> out;
  if (!root_fd_) return out;
  DIR* d = ::fdopendir(::dup(root_fd_.get()));
  if (!d) throw_error(Code::kIOError, "cannot list cache directory " + root_.string() + ": " + std::strerror(errno));
  ::rewinddir(d);
  std::vector<std::string> names;
  while (dirent* de = ::readdir(d)) {
    std::string name = de->d_name;
    if (is_key(name)) names.push_back(name);
  }
  ::closedir(d);
  for (const std::string& name : names)
    if (auto e = read_entry(name)) out.push_back(*e);
  std::sort(out.begin(), out.end(), [](const CacheEntry& a, const CacheEntry& b) {
    return a.handle != b.handle ? a.handle < b.handle : a.key < b.key;
  });
  return out;
}

size_t Cache::remove(const std::string& handle_or_key) {
  if (!root_fd_) return 0;
  std::vector<std::string> keys;
  if (is_key(handle_or_key) && read_entry(handle_or_key)) {
    keys.push_back(handle_or_key);
  } else if (read_entry(cache_key(handle_or_key))) {
    keys.push_back(cache_key(handle_or_key));
  } else {
    for (const CacheEntry& e : list())
      if (e.handle == handle_or_key) keys.push_back(e.key);
  }
  create();
  size_t removed = 0;
  for (const std::string& key : keys) {
    CacheLock lock = CacheLock::acquire(*this, key, 600, 0.05, nullptr);
    // Move out of sight first so no reader sees a half-deleted module.
    Fd tmp = open_dir_at(root_fd_.get(), kTmp);
    const std::string trash = key + ".trash." + random_hex(8);
    if (::renameat(root_fd_.get(), key.c_str(), tmp.get(), trash.c_str()) != 0) {
      if (errno == ENOENT) continue;
      throw_error(Code::kIOError, "cannot remove cache entry " + entry_dir(key).string() + ": " + std::strerror(errno));
    }
    remove_quietly(tmp_dir() / trash);
    ++removed;
  }
  return removed;
}

size_t Cache::clear() {
  size_t n = 0;
  for (const CacheEntry& e : list()) n += remove(e.key);
  remove_quietly(tmp_dir());
  remove_quietly(root_ / kRefs);
  remove_quietly(root_ / kPartial);
  return n;
}

// ------------------------------------------------------ partial downloads

namespace {

// Removes the folder `name` in .partial/ (opened as `partial_fd`) and the
// two files it may hold; anything else in it (damage) is removed by path.
void remove_partial_at(int partial_fd, const std::string& name, const fs::path& shown) {
  if (Fd dir = open_dir_at(partial_fd, name)) {
    ::unlinkat(dir.get(), kPartialBody, 0);
    ::unlinkat(dir.get(), kPartialState, 0);
  }
  if (::unlinkat(partial_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    if (is_real_dir_at(partial_fd, name))
      remove_quietly(shown);
    else
      ::unlinkat(partial_fd, name.c_str(), 0);  // a planted file or link
  }
}

}  // namespace

std::optional<Cache::PartialDownload> Cache::take_partial(const std::string& key, const std::string& url,
                                                          const fs::path& dest) {
  Fd partial = open_dir_at(root_fd_.get(), kPartial);
  if (!partial) return std::nullopt;
  std::optional<PartialDownload> out;
  if (Fd dir = open_dir_at(partial.get(), key)) {
    try {
      auto j = parse_json(read_small_at(dir.get(), kPartialState, 64 << 10).value_or(""), "partial download state");
      PartialDownload p;
      p.url = j.at("url").get<std::string>();
      p.validator = j.at("validator").get<std::string>();
      p.total = j.at("total").get<uint64_t>();
      p.bytes = j.at("bytes").get<uint64_t>();
      struct stat st;
      if (p.url == url && p.bytes > 0 && ::fstatat(dir.get(), kPartialBody, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == p.bytes &&
          ::renameat(dir.get(), kPartialBody, AT_FDCWD, dest.c_str()) == 0)
        out = p;
    } catch (const std::exception&) {
      // Damaged state: dropped below.
    }
  }
  remove_partial_at(partial.get(), key, root_ / kPartial / key);
  return out;
}

void Cache::keep_partial(const std::string& key, const PartialDownload& state, const fs::path& body) noexcept {
  const fs::path shown = root_ / kPartial / key;
  const std::string stage = "." + key + "." + random_hex(8);
  Fd partial;
  try {
    ensure_dir_at(root_fd_.get(), kPartial, root_ / kPartial);
    partial = open_dir_at(root_fd_.get(), kPartial);
    if (!partial || ::mkdirat(partial.get(), stage.c_str(), 0700) != 0)
      throw_error(Code::kIOError, std::string("cannot create a folder in ") + (root_ / kPartial).string() + ": " +
                                      std::strerror(errno));
    Fd dir = open_dir_at(partial.get(), stage);
    if (!dir || ::renameat(AT_FDCWD, body.c_str(), dir.get(), kPartialBody) != 0)
      throw_error(Code::kIOError,
                  "cannot move " + body.string() + " to " + shown.string() + ": " + std::strerror(errno));
    const nlohmann::json j = {
        {"url", state.url}, {"validator", state.validator}, {"total", state.total}, {"bytes", state.bytes}};
    Fd fd = open_fd_at(dir.get(), kPartialState, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600,
                       (shown / kPartialState).string());
    write_all(fd.get(), j.dump(2) + "\n", (shown / kPartialState).string());
    fd.close((shown / kPartialState).string());
    remove_partial_at(partial.get(), key, shown);
    if (::renameat(partial.get(), stage.c_str(), partial.get(), key.c_str()) != 0)
      throw_error(Code::kIOError, "cannot create " + shown.string() + ": " + std::strerror(errno));
  } catch (const std::exception& e) {
    HUB_LOG(Warning) << "the partial download is not kept for the next run: " << e.what();
    if (partial) remove_partial_at(partial.get(), stage, root_ / kPartial / stage);
  }
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
  if (!is_real_dir_at(root_fd_.get(), kTmp)) return;
  std::error_code ec;
  const std::string host = this_host();
  const auto now = fs::file_time_type::clock::now();
  for (const auto& it : fs::directory_iterator(tmp_dir(), ec)) {
    std::string name = it.path().filename().string();
    bool old = false;
    std::error_code ec2;
    auto t =
        fs::symlink_status(it.path(), ec2).type() == fs::file_type::symlink ? now : fs::last_write_time(it.path(), ec2);
    if (!ec2 && now - t > std::chrono::hours(24)) old = true;
    if (name.rfind(key + ".", 0) != 0 && !old) continue;
    // <key>.<host>.<pid>.<random>
    std::vector<std::string> parts;
    std::stringstream ss(name);
    for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
    bool dead = parts.size() == 4 && parts[1] == host && !pid_alive(std::strtol(parts[2].c_str(), nullptr, 10));
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
