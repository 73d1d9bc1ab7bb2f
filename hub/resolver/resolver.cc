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
#include <functional>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/core/fd.h"
#include "hub/core/interrupt.h"
#include "hub/core/logging.h"
#include "hub/core/text.h"
#include "hub/interop/import.h"
#include "hub/resolver/cache.h"

namespace fs = std::filesystem;

namespace hub::resolver {
namespace {

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
    throw_error(Code::kInvalidArgument, where + " must be 64 hex digits (a SHA-256), got '" + printable(hex, 80) + "'");
  }
  return to_lower(hex);
}

// Combines two expected digests; `code` is the error when they differ.
std::string merge_digest(std::string a, const std::string& b, const std::string& what_b, Code code) {
  if (b.empty()) return a;
  if (a.empty()) return b;
  if (a != b) throw_error(code, "conflicting expected digests: " + a + " and " + b + " (" + what_b + ")");
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
    throw_error(Code::kInvalidArgument, "file URL '" + url + "' must be file:///absolute/path (no remote host)");
  }
  std::string out;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && hex_value(rest[i + 1]) >= 0 && hex_value(rest[i + 2]) >= 0) {
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
  TtyProgress(std::string label, bool enabled) : label_(printable(label, 1000)), enabled_(enabled) {
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

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// `dir` or its single top-level folder when it holds a model hub imports.
std::optional<fs::path> foreign_root(const fs::path& dir) {
  if (interop::recognize_format(dir.string())) return dir;
  std::error_code ec;
  fs::path only;
  int count = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    only = e.path();
    if (++count > 1) return std::nullopt;
  }
  if (count == 1 && fs::is_directory(fs::symlink_status(only, ec)) && interop::recognize_format(only.string()))
    return only;
  return std::nullopt;
}

bool has_module_pb(const fs::path& dir) {
  struct stat st;
  return ::lstat((dir / "module.pb").c_str(), &st) == 0;
}

// Imports the foreign model at `src` into the new folder `dest`; returns its
// source format. Errors start with `display`, and `renames` replace the
// temporary paths in them (in order), so the work folder never shows.
std::string convert_foreign(const fs::path& src, const fs::path& dest, const interop::ImportOptions& options,
                            const std::string& display,
                            const std::vector<std::pair<std::string, std::string>>& renames) {
  try {
    ModuleSpec spec = interop::import_to_directory(src.string(), dest.string(), options);
    auto f = spec.attached().find("source_format");
    HUB_CHECK(f != spec.attached().end(), "an importer attached no source_format");
    return std::get<std::string>(f->second);
  } catch (const Error& e) {
    std::string message = e.message();
    for (const auto& [from, to] : renames) {
      for (size_t p = 0; (p = message.find(from, p)) != std::string::npos; p += to.size())
        message.replace(p, from.size(), to);
    }
    throw Error(e.code(), display + ": " + message);
  }
}

// The last segment of an http(s) URL's path: the name a fetched file keeps.
std::string url_file_name(const std::string& url) {
  const std::string path = url.substr(0, url.find_first_of("?#"));
  const std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.empty() || name == "." || name == ".." || path.find('/', path.find("://") + 3) == std::string::npos)
    throw_error(Code::kInvalidArgument, "the URL names no file (its path must end with a file name)");
  return name;
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

// ----------------------------------------------------------- one resolve

// An archive to install into the cache under `key`.
struct Archive {
  std::string key;
  bool http = false;
  std::string url;       // http(s) URL, or the local archive's path as text
  fs::path local;        // local archive
  std::string expected;  // expected SHA-256, or empty
  // Descriptor fields beyond the common ones.
  std::string handle;  // recorded handle (redacted)
  std::string registry, version;
  // Non-empty: the download is kept as file/<file_name> instead of unpacked.
  std::string file_name;
};

class Resolve {
 public:
  Resolve(const ResolverOptions& o, const std::string& handle)
      : o_(o), offline_(o.offline.value_or(env_flag("HUB_OFFLINE"))), import_key_(interop::options_key(o.import)) {
    result_.handle = redact_credentials(strip_digest_fragment(handle));
  }

  Resolution run(const std::string& handle, const std::string& expected_sha256, bool validate_local) {
    if (handle.empty()) throw_error(Code::kInvalidArgument, "empty handle");
    const std::string base = strip_digest_fragment(handle);
    const std::string expected = expected_digest(handle, expected_sha256);
    result_.resolved = result_.handle;
    result_.offline = offline_;

    if (is_http_url(base)) {
      return install({key(cache_key(handle)), true, base, {}, expected, redact_credentials(base), "", "", ""});
    }
    fs::path local;
    if (starts_with_ci(base, "file://")) {
      local = file_url_path(base);
    } else if (has_scheme(base)) {
      throw_error(Code::kInvalidArgument, "unsupported scheme (use a path, file://, http:// or https://)");
    } else {
      std::error_code ec;
      const bool exists = fs::exists(fs::symlink_status(base, ec));
      if (!exists && o_.registry && o_.registry->owns(base)) return registry(base, expected);
      if (!exists) {
        std::string hint;
        if (base.find('@') != std::string::npos && !o_.registry)
          hint = " (to use a registry name, give a registry: --registry URL or $HUB_REGISTRY)";
        throw_error(Code::kNotFound, "no such file or directory: " + base + hint);
      }
      local = fs::path(base);
    }
    struct stat st;
    if (::stat(local.c_str(), &st) != 0) {
      throw_error(errno == ENOENT ? Code::kNotFound : Code::kIOError,
                  "no such file or directory: " + local.string() + " (" + std::strerror(errno) + ")");
    }
    if (S_ISDIR(st.st_mode)) {
      if (!expected.empty()) {
        throw_error(Code::kInvalidArgument,
                    "a sha256 was given but " + local.string() + " is a directory (digests apply to archives)");
      }
      result_.dir = fs::absolute(local).lexically_normal();
      if (validate_local) validate(result_.dir);
      result_.cached = true;
      return result_;
    }
    if (!S_ISREG(st.st_mode))
      throw_error(Code::kInvalidArgument, local.string() + " is neither a module directory nor an archive file");
    return install({key(cache_key(handle)), false, local.string(), local, expected, result_.handle, "", "", ""});
  }

  // An http(s) URL downloaded into the cache as a file.
  Resolution run_file(const std::string& url, const std::string& expected_sha256) {
    const std::string base = strip_digest_fragment(url);
    if (!is_http_url(base)) throw_error(Code::kInvalidArgument, "not an http:// or https:// URL");
    const std::string expected = expected_digest(url, expected_sha256);
    const std::string name = url_file_name(base);
    result_.resolved = result_.handle;
    result_.offline = offline_;
    return install({file_cache_key(url), true, base, {}, expected, redact_credentials(base), "", "", name});
  }

 private:
  // The "#sha256=" fragment of `handle` combined with `given` (either may be absent).
  static std::string expected_digest(const std::string& handle, const std::string& given) {
    const std::string base = strip_digest_fragment(handle);
    std::string expected;
    if (base.size() != handle.size()) expected = check_digest(handle.substr(base.size() + 8), "'#sha256=' fragment");
    if (!given.empty())
      expected = merge_digest(expected, check_digest(given, "the expected sha256"), "given with the call",
                              Code::kInvalidArgument);
    return expected;
  }

  Cache& cache() {
    if (!cache_) cache_.emplace(o_.cache_dir.empty() ? default_cache_dir() : o_.cache_dir);
    return *cache_;
  }

  std::string key(const std::string& base) const { return import_cache_key(base, import_key_); }

  void validate(const fs::path& dir) const {
    if (o_.validator)
      o_.validator(dir);
    else
      load_module_spec(dir.string());
  }

  [[noreturn]] void offline_miss(const std::string& what) {
    throw_error(Code::kUnavailable, "offline mode ($HUB_OFFLINE): " + what + " is not in the cache " +
                                        cache().root().string() + " and downloading is disabled");
  }

  // A registry name: pinned versions and offline use what the cache recorded;
  // moving references are asked again whenever online.
  Resolution registry(const std::string& name, const std::string& expected) {
    const RegistryMapper& reg = *o_.registry;
    const std::string id = redact_credentials(reg.id());
    result_.registry = id;
    if (!reg.is_moving(name) || offline_) {
      if (auto ref = cache().read_ref(id, name)) {
        const std::string k = key(registry_cache_key(id, name_at(name, ref->version), ref->sha256));
        if (auto sha = cache().complete_sha256(k); sha && (expected.empty() || *sha == expected)) {
          result_.dir = cache().entry_dir(k) / "module";
          result_.resolved = name_at(name, ref->version);
          result_.sha256 = *sha;
          result_.cached = true;
          result_.source_format = source_format_of(k);
          return result_;
        }
      }
      if (offline_) offline_miss("registry name " + name + " (from " + id + ")");
    }
    RegistryModule m = reg.resolve(name);
    if (m.version.empty() || !is_sha256_hex(m.sha256))
      throw_error(Code::kCorruption, "registry " + id + " gave no version or no valid sha256 for " + name);
    const std::string digest =
        merge_digest(expected, to_lower(m.sha256), "recorded by the registry " + id, Code::kDataLoss);
    const std::string concrete = m.name + "@" + m.version;
    result_.resolved = concrete;
    const std::string k = key(registry_cache_key(id, concrete, digest));
    Resolution r = install({k, is_http_url(m.url), m.url,
                            starts_with_ci(m.url, "file://") ? file_url_path(m.url) : fs::path(m.url), digest, concrete,
                            id, m.version, ""});
    cache().write_ref({name, id, m.version, digest, ""});
    return r;
  }

  // The name with its version: "acme/net@latest" + "1.2.0" -> "acme/net@1.2.0".
  static std::string name_at(const std::string& name, const std::string& version) {
    return name.substr(0, name.find('@')) + "@" + version;
  }

  std::string source_format_of(const std::string& k) {
    auto e = cache().read_entry(k);
    return e ? e->source_format : "";
  }

  // Downloads (or copies) an archive, verifies and unpacks it (converting a
  // foreign model), and installs it under a.key; a complete entry with the
  // expected digest is a hit.
  Resolution install(const Archive& a) {
    Cache& c = cache();
    const char* content = a.file_name.empty() ? "module" : "file";
    const fs::path content_dir = c.entry_dir(a.key) / content;
    auto hit = [&]() -> std::optional<std::string> {
      auto sha = c.complete_sha256(a.key);
      if (sha && (a.expected.empty() || *sha == a.expected)) return sha;
      return std::nullopt;
    };
    auto done = [&](const std::string& sha, bool cached) {
      result_.dir = content_dir;
      result_.sha256 = sha;
      result_.cached = cached;
      result_.source_format = source_format_of(a.key);
      return result_;
    };
    if (auto sha = hit()) return done(*sha, true);
    if (offline_) {
      if (auto sha = c.complete_sha256(a.key)) {
        throw_error(Code::kDataLoss, "offline mode: the cached copy in " + c.entry_dir(a.key).string() +
                                         " has sha256 " + *sha + " but " + a.expected + " was expected");
      }
      offline_miss("it");
    }

    c.create();
    CacheLock lock = CacheLock::acquire(c, a.key, o_.lock_stale_s, o_.lock_poll_s, [&] { return hit().has_value(); });
    if (!lock.held()) return done(*hit(), true);
    if (auto sha = hit()) return done(*sha, true);
    c.clean_stale_work(a.key);

    const fs::path work = c.make_work_dir(a.key);
    RemoveOnExit work_guard(work);

    fs::path archive;
    FetchResult fr;
    uint64_t kept = 0;  // bytes continued from a download an earlier run left
    if (a.http) {
      archive = work / "download";
      Fetcher& fetcher = o_.fetcher ? *o_.fetcher : Fetcher::default_fetcher();
      const std::string shown_url = redact_credentials(a.url);
      ResumeState resume;
      resume.digest_pinned = !a.expected.empty();
      if (auto p = c.take_partial(a.key, shown_url, archive)) {
        resume.validator = p->validator;
        resume.total = p->total;
        kept = p->bytes;
        HUB_LOG(Info) << "continuing the download of " << shown_url << " at byte " << kept
                      << " (kept from an earlier run)";
      }
      TtyProgress progress(shown_url, !o_.quiet && ::isatty(2));
      try {
        fr = fetcher.fetch(
            download_url(a.url), archive, o_.fetch,
            [&](uint64_t now, uint64_t total) {
              if (interrupted()) return false;
              progress.update(now, total);
              lock.heartbeat();
              return true;
            },
            &resume);
      } catch (const Error& e) {
        // Keep what arrived for the next run when the download was cut short
        // (not refused: 404, size cap, ...) and can be continued.
        const bool cut =
            e.code() == Code::kUnavailable || e.code() == Code::kDeadlineExceeded || e.code() == Code::kDataLoss;
        std::error_code ec;
        const uint64_t bytes = fs::is_regular_file(archive, ec) ? fs::file_size(archive, ec) : 0;
        if (cut && !ec && bytes > 0 && (!resume.validator.empty() || (resume.digest_pinned && resume.total > 0)))
          c.keep_partial(a.key, {shown_url, resume.validator, resume.total, bytes}, archive);
        throw;
      }
      progress.finish();
    } else {
      archive = a.local;
      fr.sha256 = sha256_file(archive, &fr.bytes);
      fr.effective_url = a.url;
    }
    if (interrupted()) throw_error(Code::kUnavailable, "interrupted");
    if (!a.expected.empty() && fr.sha256 != a.expected) {
      // The work folder, with the continued download in it, goes on return.
      const std::string continued = kept > 0 && fr.resumed
                                        ? "; it continued " + std::to_string(kept) +
                                              " bytes kept from an interrupted earlier run, now deleted: run again to "
                                              "download it from the start"
                                        : "";
      throw_error(Code::kDataLoss, "sha256 mismatch: expected " + a.expected + ", got " + fr.sha256 + " (" +
                                       std::to_string(fr.bytes) + " bytes from " + redact_credentials(a.url) + ")" +
                                       continued);
    }

    const fs::path staging = work / "entry";
    if (::mkdir(staging.c_str(), 0755) != 0)
      throw_error(Code::kIOError, "cannot create " + staging.string() + ": " + std::strerror(errno));
    const std::string display = "archive " + redact_credentials(a.url);
    UnpackResult ur;
    std::string source_format;
    if (!a.file_name.empty()) {
      if (::mkdir((staging / content).c_str(), 0755) != 0)
        throw_error(Code::kIOError, "cannot create " + (staging / content).string() + ": " + std::strerror(errno));
      fs::rename(archive, staging / content / a.file_name);
      ur.entries = 1;
      ur.total_bytes = fr.bytes;
    } else if (!is_archive_file(archive) && interop::recognize_format(archive.string())) {
      // A model file (ONNX): converted as it is; a download is named by its URL.
      std::vector<std::pair<std::string, std::string>> renames;
      if (a.http) renames.emplace_back(archive.string(), redact_credentials(a.url));
      source_format = convert_foreign(archive, staging / "module", o_.import, display, renames);
      ur.entries = 1;
      ur.total_bytes = fr.bytes;
      validate(staging / "module");
    } else {
      UnpackOptions uo;
      uo.limits = o_.limits;
      uo.display_name = display;
      std::optional<fs::path> foreign;
      uo.validator = [&](const fs::path& dir) {
        if (!has_module_pb(dir)) {
          if ((foreign = foreign_root(dir))) return;
          throw_error(Code::kCorruption,
                      "not a module: the archive has no module.pb, nor a model hub imports (a TF Hub module, "
                      "SavedModel or TF.js graph model)");
        }
        validate(dir);
      };
      const fs::path unpacked = work / "unpacked";
      ur = unpack_archive(archive, unpacked, uo);
      if (foreign) {
        // Files inside the archive are named by their entry names.
        source_format = convert_foreign(*foreign, staging / "module", o_.import, display,
                                        {{unpacked.string() + "/", ""}, {unpacked.string(), "the archive's root"}});
        std::error_code ignored;
        fs::remove_all(unpacked, ignored);
        validate(staging / "module");
      } else {
        fs::rename(unpacked, staging / "module");
      }
    }
    if (interrupted()) throw_error(Code::kUnavailable, "interrupted");
    std::error_code ec;
    if (a.http) fs::remove(archive, ec);

    nlohmann::json desc = {
        {"handle", a.handle},      {"url", redact_credentials(fr.effective_url.empty() ? a.url : fr.effective_url)},
        {"fetched_at", utc_now()}, {"sha256", fr.sha256},
        {"size", fr.bytes},        {"unpacked_bytes", ur.total_bytes},
        {"entries", ur.entries},   {"tree_sha256", tree_sha256(staging / content)},
    };
    if (!a.file_name.empty()) desc["kind"] = "file";
    if (!a.registry.empty()) {
      desc["registry"] = a.registry;
      desc["version"] = a.version;
    }
    if (!source_format.empty()) {
      desc["source_format"] = source_format;
      if (!import_key_.empty()) desc["import_options"] = import_key_;
    }
    write_new_file_synced(staging / "descriptor.json", desc.dump(2) + "\n");
    write_new_file_synced(staging / "complete", fr.sha256 + "\n");  // last
    fsync_dir(staging);

    const fs::path entry = c.entry_dir(a.key);
    for (int tries = 0;; ++tries) {
      if (::renameat(AT_FDCWD, staging.c_str(), c.root_fd(), a.key.c_str()) == 0) break;
      int err = errno;
      if ((err != EEXIST && err != ENOTEMPTY && err != ENOTDIR) || tries >= 3)
        throw_error(Code::kIOError, "cannot install " + entry.string() + ": " + std::strerror(err));
      // Someone else installed it meanwhile (we lost a race or took over a
      // stale lock): keep theirs if it is complete and the same archive.
      auto sha = c.complete_sha256(a.key);
      if (sha && *sha == fr.sha256) return done(*sha, false);
      // Damaged, different, or not a real folder (a planted link): move it
      // out of sight, then retry.
      const fs::path trash = c.make_work_dir(a.key + ".trash");
      if (::renameat(c.root_fd(), a.key.c_str(), AT_FDCWD, (trash / "old").c_str()) == 0) fs::remove_all(trash, ec);
    }
    fsync_dir(c.root());
    return done(fr.sha256, false);
  }

  const ResolverOptions& o_;
  const bool offline_;
  const std::string import_key_;  // interop::options_key(o_.import)
  std::optional<Cache> cache_;
  Resolution result_;
};

}  // namespace

bool is_http_url(const std::string& handle) {
  return starts_with_ci(handle, "http://") || starts_with_ci(handle, "https://");
}

std::string download_url(const std::string& url) {
  if (!is_http_url(url) || url.find_first_of("?#") != std::string::npos) return url;
  const size_t host = url.find("://") + 3;
  const size_t end = url.find('/', host);
  const std::string authority = to_lower(url.substr(host, end == std::string::npos ? std::string::npos : end - host));
  return authority == "tfhub.dev" ? url + "?tf-hub-format=compressed" : url;
}

bool is_archive_file(const fs::path& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Fd guard(fd);
  char head[263] = {};
  const ssize_t n = ::pread(fd, head, sizeof head, 0);
  if (n >= 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b) return true;
  return n == static_cast<ssize_t>(sizeof head) && std::memcmp(head + 257, "ustar", 5) == 0;
}

Resolver::Resolver(ResolverOptions options) : options_(std::move(options)) {}

namespace {
// Runs `what` on a Resolve of `handle`; errors start with "<kind> '<handle>': ".
Resolution run_with_context(const ResolverOptions& o, const std::string& kind, const std::string& handle,
                            const std::function<Resolution(Resolve&)>& what) {
  InterruptibleScope interruptible;  // SIGINT/SIGTERM: clean up, then the program exits
  Resolve r(o, handle);
  const std::string context = kind + " '" + printable(redact_credentials(strip_digest_fragment(handle)), 500) + "'";
  try {
    Resolution result = what(r);
    // A signal that came while nothing polled (unpacking, validating) stops
    // the command here rather than after whatever it does next.
    if (interrupted()) throw_error(Code::kUnavailable, "interrupted");
    return result;
  } catch (const Error& e) {
    throw Error(e.code(), redact_credentials(e.with_context(context).message()));
  } catch (const fs::filesystem_error& e) {
    throw Error(Code::kIOError, redact_credentials(context + ": " + e.what()));
  }
}

Resolution resolve_with_context(const ResolverOptions& o, const std::string& handle, const std::string& expected,
                                bool validate_local) {
  return run_with_context(o, "module", handle, [&](Resolve& r) { return r.run(handle, expected, validate_local); });
}
}  // namespace

Resolution Resolver::resolve(const std::string& handle, const std::string& expected_sha256) const {
  return resolve_with_context(options_, handle, expected_sha256, /*validate_local=*/true);
}

FileResolution Resolver::fetch_file(const std::string& url, const std::string& expected_sha256) const {
  Resolution r =
      run_with_context(options_, "file", url, [&](Resolve& res) { return res.run_file(url, expected_sha256); });
  FileResolution out;
  out.path = r.dir / url_file_name(strip_digest_fragment(url));
  out.url = r.handle;
  out.sha256 = r.sha256;
  out.cached = r.cached;
  out.offline = r.offline;
  return out;
}

ModuleSpec Resolver::load(const std::string& handle, Resolution* resolution) const {
  // A local directory is validated by loading it, once.
  Resolution r = resolve_with_context(options_, handle, "", /*validate_local=*/false);
  if (resolution) *resolution = r;
  return load_module_spec(r.dir.string());
}

}  // namespace hub::resolver
