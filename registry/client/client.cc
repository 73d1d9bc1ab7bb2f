#include "registry/client/client.h"

#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "hub/core/error.h"
#include "hub/core/digest.h"
#include "hub/core/json.h"
#include "hub/core/text.h"
#include "registry/names.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hub::registry {
namespace {

void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string join(const std::string& base, const std::string& path) {
  std::string b = base;
  while (!b.empty() && b.back() == '/') b.pop_back();
  return b + path;
}

std::string base_url(const std::string& url) {
  std::string u = url.empty() ? default_registry_url() : url;
  if (u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0)
    throw_error(Code::kInvalidArgument, "registry URL '" + u + "' must start with http:// or https://");
  return u;
}

Code code_for_status(long status) {
  switch (status) {
    case 400: case 411: case 416: return Code::kInvalidArgument;
    case 401: case 403: return Code::kPermissionDenied;
    case 404: return Code::kNotFound;
    case 409: return Code::kAlreadyExists;
    case 413: return Code::kResourceExhausted;
    case 408: return Code::kDeadlineExceeded;
    default: return Code::kUnavailable;
  }
}

[[noreturn]] void throw_http(const std::string& what, long status, const std::string& body) {
  std::string msg;
  json doc;
  try {
    doc = parse_json(body, "error body");
  } catch (const Error&) {
    // Not JSON: quote the start of it below.
  }
  if (doc.is_object() && doc.contains("error") && doc["error"].is_object() &&
      doc["error"].contains("message") && doc["error"]["message"].is_string())
    msg = printable(doc["error"]["message"].get<std::string>(), 500);
  else
    msg = printable(body, 200);
  throw_error(code_for_status(status), what + ": HTTP " + std::to_string(status) + (msg.empty() ? "" : ": " + msg));
}

struct Sink {
  std::string* body;
  uint64_t max;
  bool overflow = false;
};

size_t write_string(char* p, size_t size, size_t n, void* user) {
  Sink* s = static_cast<Sink*>(user);
  size_t bytes = size * n;
  if (s->body->size() + bytes > s->max) {
    s->overflow = true;
    return 0;
  }
  s->body->append(p, bytes);
  return bytes;
}

using CurlPtr = std::unique_ptr<CURL, void (*)(CURL*)>;

CurlPtr make_curl(const std::string& url) {
  init_curl();
  CurlPtr c(curl_easy_init(), &curl_easy_cleanup);
  if (!c) throw_error(Code::kInternal, "curl_easy_init failed");
  curl_easy_setopt(c.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c.get(), CURLOPT_CONNECTTIMEOUT, 15L);
  curl_easy_setopt(c.get(), CURLOPT_LOW_SPEED_LIMIT, 1L);   // abort when stalled
  curl_easy_setopt(c.get(), CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c.get(), CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(c.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c.get(), CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c.get(), CURLOPT_USERAGENT, "hub/" HUB_VERSION);
  return c;
}

void perform(CURL* c, const std::string& url) {
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK)
    throw_error(Code::kUnavailable, "cannot reach registry at " + url + ": " + curl_easy_strerror(rc));
}

json get_json(const std::string& url, const std::string& what) {
  std::string body;
  long status = http_get(url, &body);
  if (status != 200) throw_http(what, status, body);
  json doc = parse_json(body, what + ": the registry's answer from " + url);
  if (!doc.is_object())
    throw_error(Code::kCorruption, what + ": the registry's answer from " + url + " is not a JSON object");
  return doc;
}

struct Progress {
  bool enabled;
  int last_percent = -1;
};

int progress_cb(void* user, curl_off_t, curl_off_t, curl_off_t ultotal, curl_off_t ulnow) {
  Progress* p = static_cast<Progress*>(user);
  if (!p->enabled || ultotal <= 0) return 0;
  int percent = static_cast<int>(100 * ulnow / ultotal);
  if (percent == p->last_percent) return 0;
  p->last_percent = percent;
  int bars = percent / 4;
  std::fprintf(stderr, "\rupload [%-25s] %3d%% %lld/%lld bytes", std::string(bars, '#').c_str(), percent,
               static_cast<long long>(ulnow), static_cast<long long>(ultotal));
  if (percent == 100) std::fprintf(stderr, "\n");
  return 0;
}

size_t read_file_cb(char* p, size_t size, size_t n, void* user) {
  return std::fread(p, size, n, static_cast<FILE*>(user));
}

void add_dir(archive* a, const fs::path& root, const fs::path& dir) {
  std::vector<fs::directory_entry> entries;
  for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e);
  std::sort(entries.begin(), entries.end(),
            [](const auto& x, const auto& y) { return x.path().filename() < y.path().filename(); });
  for (const auto& e : entries) {
    fs::path rel = fs::relative(e.path(), root);
    if (e.is_symlink())
      throw_error(Code::kInvalidArgument, "cannot pack " + e.path().string() + ": links are not allowed in modules");
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> ent(archive_entry_new(), &archive_entry_free);
    archive_entry_set_pathname(ent.get(), rel.c_str());
    archive_entry_set_mtime(ent.get(), 0, 0);
    archive_entry_set_uid(ent.get(), 0);
    archive_entry_set_gid(ent.get(), 0);
    if (e.is_directory()) {
      archive_entry_set_filetype(ent.get(), AE_IFDIR);
      archive_entry_set_perm(ent.get(), 0755);
      if (archive_write_header(a, ent.get()) != ARCHIVE_OK)
        throw_error(Code::kIOError, std::string("archive write failed: ") + archive_error_string(a));
      add_dir(a, root, e.path());
    } else if (e.is_regular_file()) {
      archive_entry_set_filetype(ent.get(), AE_IFREG);
      archive_entry_set_perm(ent.get(), 0644);
      archive_entry_set_size(ent.get(), static_cast<la_int64_t>(e.file_size()));
      if (archive_write_header(a, ent.get()) != ARCHIVE_OK)
        throw_error(Code::kIOError, std::string("archive write failed: ") + archive_error_string(a));
      std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(e.path().c_str(), "rb"), &std::fclose);
      if (!f) throw_error(Code::kIOError, "cannot read " + e.path().string());
      std::vector<char> buf(1 << 16);
      size_t n;
      while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0)
        if (archive_write_data(a, buf.data(), n) < 0)
          throw_error(Code::kIOError, std::string("archive write failed: ") + archive_error_string(a));
    } else {
      throw_error(Code::kInvalidArgument, "cannot pack " + e.path().string() + ": not a file or directory");
    }
  }
}

}  // namespace

std::string default_registry_url() {
  const char* env = std::getenv("HUB_REGISTRY");
  if (!env || !*env)
    throw_error(Code::kInvalidArgument, "no registry given: pass --registry URL or set $HUB_REGISTRY");
  return env;
}

long http_get(const std::string& url, std::string* body, uint64_t max_bytes) {
  CurlPtr c = make_curl(url);
  Sink sink{body, max_bytes};
  curl_easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, &write_string);
  curl_easy_setopt(c.get(), CURLOPT_WRITEDATA, &sink);
  CURLcode rc = curl_easy_perform(c.get());
  if (sink.overflow)
    throw_error(Code::kResourceExhausted, "response from " + url + " is larger than " + std::to_string(max_bytes) + " bytes");
  if (rc != CURLE_OK)
    throw_error(Code::kUnavailable, "cannot reach registry at " + url + ": " + curl_easy_strerror(rc));
  long status = 0;
  curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &status);
  return status;
}

void download_to_file(const std::string& url, const fs::path& out, const std::string& expected_sha256) {
  CurlPtr c = make_curl(url);
  fs::path tmp = out;
  tmp += ".part";
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(tmp.c_str(), "wb"), &std::fclose);
  if (!f) throw_error(Code::kIOError, "cannot write " + tmp.string());
  curl_easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, +[](char* p, size_t s, size_t n, void* u) {
    return std::fwrite(p, s, n, static_cast<FILE*>(u));
  });
  curl_easy_setopt(c.get(), CURLOPT_WRITEDATA, f.get());
  curl_easy_setopt(c.get(), CURLOPT_FAILONERROR, 1L);
  CURLcode rc = curl_easy_perform(c.get());
  f.reset();
  std::error_code ec;
  if (rc != CURLE_OK) {
    fs::remove(tmp, ec);
    throw_error(Code::kUnavailable, "download of " + url + " failed: " + curl_easy_strerror(rc));
  }
  std::string got = sha256_file(tmp);
  if (got != expected_sha256) {
    fs::remove(tmp, ec);
    throw_error(Code::kDataLoss, "download of " + url + ": SHA-256 " + got + " does not match expected " + expected_sha256);
  }
  fs::rename(tmp, out, ec);
  if (ec) throw_error(Code::kIOError, "cannot rename " + tmp.string() + ": " + ec.message());
}

ResolvedModule resolve_registry_handle(const std::string& registry_url, const std::string& handle) {
  const std::string base = base_url(registry_url);
  Handle h = parse_handle(handle);
  json doc = list_versions(base, h.module.str());
  if (!doc.contains("versions") || !doc["versions"].is_array())
    throw_error(Code::kCorruption, "registry " + base + " answered without a 'versions' list for " + h.module.str());
  const json* best = nullptr;
  std::optional<Version> best_v;
  bool best_release = false;
  for (const json& v : doc["versions"]) {
    if (!v.is_object() || !v.contains("version") || !v["version"].is_string()) continue;
    std::string text = v["version"].get<std::string>();
    Version ver;
    try {
      ver = parse_version(text);
    } catch (const Error&) {
      continue;
    }
    if (!h.latest()) {
      if (ver.text == h.version) {
        best = &v;
        break;
      }
      continue;
    }
    bool release = ver.prerelease.empty();
    if (!best || (release && !best_release) ||
        (release == best_release && compare_versions(ver, *best_v) > 0)) {
      best = &v;
      best_v = ver;
      best_release = release;
    }
  }
  if (!best)
    throw_error(Code::kNotFound, "registry " + base + " has no version " + h.version + " of " + h.module.str());
  const json& v = *best;
  if (!v.contains("sha256") || !v["sha256"].is_string() || !is_sha256_hex(v["sha256"].get<std::string>()) ||
      v["sha256"].get<std::string>() != to_lower(v["sha256"].get<std::string>()))
    throw_error(Code::kCorruption, "registry " + base + " gave no valid sha256 for " + handle);
  ResolvedModule r;
  r.version = v["version"].get<std::string>();
  r.handle = h.module.str() + "@" + r.version;
  r.sha256 = v["sha256"].get<std::string>();
  r.size = v.value("size", uint64_t{0});
  std::string dl = v.value("download_url", "/v1/blobs/sha256/" + r.sha256);
  if (dl.rfind("http://", 0) == 0 || dl.rfind("https://", 0) == 0) {
    r.download_url = dl;
  } else {
    r.download_url = join(base, dl.empty() || dl[0] != '/' ? "/" + dl : dl);
  }
  return r;
}

std::string pack_module_dir(const fs::path& dir, const fs::path& out) {
  if (!fs::is_directory(dir)) throw_error(Code::kNotFound, "module directory " + dir.string() + " does not exist");
  if (!fs::is_regular_file(dir / "module.pb"))
    throw_error(Code::kInvalidArgument, "module directory " + dir.string() + " has no module.pb");
  std::unique_ptr<archive, int (*)(archive*)> a(archive_write_new(), &archive_write_free);
  archive_write_set_format_pax_restricted(a.get());
  archive_write_add_filter_gzip(a.get());
  archive_write_set_filter_option(a.get(), "gzip", "timestamp", nullptr);  // no mtime in the header
  if (archive_write_open_filename(a.get(), out.c_str()) != ARCHIVE_OK)
    throw_error(Code::kIOError, "cannot write archive " + out.string() + ": " + archive_error_string(a.get()));
  try {
    add_dir(a.get(), dir, dir);
  } catch (...) {
    a.reset();
    std::error_code ec;
    fs::remove(out, ec);
    throw;
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK)
    throw_error(Code::kIOError, "cannot finish archive " + out.string() + ": " + archive_error_string(a.get()));
  return sha256_file(out);
}

json publish_module(const fs::path& source, const PublishOptions& opt) {
  const std::string base = base_url(opt.registry_url);
  ModuleName m = parse_module_name(opt.module);
  std::string version = parse_version(opt.version).text;
  if (opt.token.empty())
    throw_error(Code::kPermissionDenied, "publishing needs a token: pass --token or set $HUB_TOKEN");
  fs::path archive_path = source;
  std::unique_ptr<fs::path, void (*)(fs::path*)> cleanup(nullptr, [](fs::path* p) {
    std::error_code ec;
    fs::remove(*p, ec);
    delete p;
  });
  if (fs::is_directory(source)) {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string pattern = (tmpdir && *tmpdir ? std::string(tmpdir) : std::string("/tmp")) + "/hub-publish-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    int fd = ::mkstemp(buf.data());
    if (fd < 0) throw_error(Code::kIOError, "cannot create temp archive " + pattern);
    ::close(fd);
    archive_path = buf.data();
    cleanup.reset(new fs::path(archive_path));
    pack_module_dir(source, archive_path);
  } else if (!fs::is_regular_file(source)) {
    throw_error(Code::kNotFound, "module " + source.string() + " is neither a directory nor an archive");
  }
  uint64_t size = 0;
  std::string sha = sha256_file(archive_path, &size);
  std::string url = join(base, "/v1/modules/" + m.publisher + "/" + m.name + "/" + version);
  CurlPtr c = make_curl(url);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(archive_path.c_str(), "rb"), &std::fclose);
  if (!f) throw_error(Code::kIOError, "cannot read " + archive_path.string());
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, ("Authorization: Bearer " + opt.token).c_str());
  headers = curl_slist_append(headers, ("X-Hub-SHA256: " + sha).c_str());
  headers = curl_slist_append(headers, "Content-Type: application/gzip");
  if (!opt.description.empty())
    headers = curl_slist_append(headers, ("X-Hub-Metadata: " + json{{"description", opt.description}}.dump()).c_str());
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> hold(headers, &curl_slist_free_all);
  std::string body;
  Sink sink{&body, 1 << 20};
  Progress progress{opt.progress};
  curl_easy_setopt(c.get(), CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(c.get(), CURLOPT_READFUNCTION, &read_file_cb);
  curl_easy_setopt(c.get(), CURLOPT_READDATA, f.get());
  curl_easy_setopt(c.get(), CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
  curl_easy_setopt(c.get(), CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, &write_string);
  curl_easy_setopt(c.get(), CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c.get(), CURLOPT_NOPROGRESS, opt.progress ? 0L : 1L);
  curl_easy_setopt(c.get(), CURLOPT_XFERINFOFUNCTION, &progress_cb);
  curl_easy_setopt(c.get(), CURLOPT_XFERINFODATA, &progress);
  perform(c.get(), url);
  long status = 0;
  curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &status);
  const std::string what = "publishing " + m.str() + "@" + version + " to " + base;
  if (status != 201) throw_http(what, status, body);
  json doc = parse_json(body, what + ": the registry's reply");
  if (!doc.is_object()) throw_error(Code::kCorruption, what + ": the registry's reply is not a JSON object");
  if (doc.value("sha256", "") != sha)
    throw_error(Code::kDataLoss, what + ": registry recorded SHA-256 " + doc.value("sha256", "?") + ", sent " + sha);
  return doc;
}

json search_modules(const std::string& registry_url, const std::string& query) {
  const std::string base = base_url(registry_url);
  init_curl();
  char* esc = curl_easy_escape(nullptr, query.c_str(), static_cast<int>(query.size()));
  std::string q = esc ? esc : "";
  curl_free(esc);
  std::string body;
  std::string url = join(base, "/v1/search?q=" + q);
  long status = http_get(url, &body);
  if (status == 200) {
    json doc = parse_json(body, "searching " + base + ": the registry's answer from " + url);
    if (!doc.is_object()) throw_error(Code::kCorruption, "searching " + base + ": the answer from " + url + " is not a JSON object");
    return doc;
  }
  if (status != 404 && status != 405) throw_http("searching " + base, status, body);
  // A static registry has no search endpoint: filter its index.
  json index = get_json(join(base, "/v1/index.json"), "searching " + base);
  std::string lq = query;
  for (char& ch : lq) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  json mods = json::array();
  for (const json& m : index.value("modules", json::array())) {
    std::string hay = m.value("module", "") + "\n" + m.value("description", "");
    for (char& ch : hay) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (hay.find(lq) != std::string::npos) mods.push_back(m);
  }
  return json{{"query", query}, {"modules", mods}};
}

json list_versions(const std::string& registry_url, const std::string& module) {
  const std::string base = base_url(registry_url);
  ModuleName m = parse_module_name(module);
  return get_json(join(base, "/v1/modules/" + m.publisher + "/" + m.name + "/versions.json"),
                  "listing versions of " + m.str() + " at " + base);
}

}  // namespace hub::registry
