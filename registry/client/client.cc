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

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/core/fd.h"
#include "hub/core/json.h"
#include "hub/core/text.h"
#include "hub/resolver/curl.h"
#include "registry/names.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hub::registry {
namespace {

std::string join(const std::string& base, const std::string& path) {
  std::string b = base;
  while (!b.empty() && b.back() == '/') b.pop_back();
  return b + path;
}

std::string base_url(const std::string& url) {
  if (url.empty()) throw_error(Code::kInvalidArgument, "no registry given: pass --registry URL or set $HUB_REGISTRY");
  const std::string& u = url;
  if (u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0)
    throw_error(Code::kInvalidArgument,
                "registry URL '" + printable(redact_credentials(u)) + "' must start with http:// or https://");
  return u;
}

Code code_for_status(long status) {
  switch (status) {
    case 400:
    case 411:
    case 416:
      return Code::kInvalidArgument;
    case 401:
    case 403:
      return Code::kPermissionDenied;
    case 404:
      return Code::kNotFound;
    case 409:
      return Code::kAlreadyExists;
    case 413:
      return Code::kResourceExhausted;
    case 408:
      return Code::kDeadlineExceeded;
    default:
      return Code::kUnavailable;
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
  if (doc.is_object() && doc.contains("error") && doc["error"].is_object() && doc["error"].contains("message") &&
      doc["error"]["message"].is_string())
    msg = printable(doc["error"]["message"].get<std::string>(), 500);
  else
    msg = printable(body, 200);
  throw_error(code_for_status(status),
              redact_credentials(what + ": HTTP " + std::to_string(status) + (msg.empty() ? "" : ": " + msg)));
}

json get_json(const std::string& url, const std::string& what,
              const resolver::FetchOptions& fetch = resolver::FetchOptions::from_env()) {
  resolver::HttpCall call;
  call.url = url;
  resolver::HttpReply reply = resolver::http_call(call, fetch);
  const long status = reply.status;
  const std::string& body = reply.body;
  if (status != 200) throw_http(what, status, body);
  json doc = parse_json(body, what + ": the registry's answer from " + url);
  if (!doc.is_object())
    throw_error(Code::kCorruption, what + ": the registry's answer from " + url + " is not a JSON object");
  return doc;
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

long http_get(const std::string& url, std::string* body, uint64_t max_bytes) {
  resolver::HttpCall call;
  call.url = url;
  call.max_response_bytes = max_bytes;
  resolver::HttpReply reply = resolver::http_call(call, resolver::FetchOptions::from_env());
  *body = std::move(reply.body);
  return reply.status;
}

void download_to_file(const std::string& url, const fs::path& out, const std::string& expected_sha256) {
  fs::path tmp = out;
  tmp += ".part";
  std::error_code ec;
  resolver::FetchResult r;
  try {
    r = resolver::Fetcher::default_fetcher().fetch(url, tmp, resolver::FetchOptions::from_env(), nullptr);
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  if (r.sha256 != expected_sha256) {
    fs::remove(tmp, ec);
    throw_error(Code::kDataLoss, "download of " + redact_credentials(url) + ": SHA-256 " + r.sha256 +
                                     " does not match expected " + expected_sha256);
  }
  fs::rename(tmp, out, ec);
  if (ec) throw_error(Code::kIOError, "cannot rename " + tmp.string() + ": " + ec.message());
}

ResolvedModule resolve_registry_handle(const std::string& registry_url, const std::string& handle,
                                       const resolver::FetchOptions& fetch) {
  const std::string base = base_url(registry_url);
  Handle h = parse_handle(handle);
  return pick_version(base, handle, list_versions(base, h.module.str(), fetch));
}

ResolvedModule pick_version(const std::string& registry_url, const std::string& handle, const json& doc) {
  const std::string base = redact_credentials(registry_url);
  Handle h = parse_handle(handle);
  if (!doc.is_object() || !doc.contains("versions") || !doc["versions"].is_array())
    throw_error(Code::kCorruption, "registry " + base + " answered without a 'versions' list for " + h.module.str());
  const json* best = nullptr;
  std::optional<Version> best_v;
  bool best_release = false;
  for (const json& v : doc["versions"]) {
    const std::string text = json_string(v, "version");
    if (text.empty()) continue;
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
    if (!best || (release && !best_release) || (release == best_release && compare_versions(ver, *best_v) > 0)) {
      best = &v;
      best_v = ver;
      best_release = release;
    }
  }
  if (!best)
    throw_error(Code::kNotFound, "registry " + base + " has no version " + h.version + " of " + h.module.str());
  const json& v = *best;
  const std::string sha = json_string(v, "sha256");
  if (!is_sha256_hex(sha) || sha != to_lower(sha))
    throw_error(Code::kCorruption, "registry " + base + " gave no valid sha256 for " + handle);
  ResolvedModule r;
  r.version = parse_version(json_string(v, "version")).text;
  r.handle = h.module.str() + "@" + r.version;
  r.sha256 = sha;
  r.size = json_uint(v, "size");
  std::string dl = json_string(v, "download_url", "/v1/blobs/sha256/" + r.sha256);
  if (dl.rfind("http://", 0) == 0 || dl.rfind("https://", 0) == 0) {
    r.download_url = dl;
  } else {
    r.download_url = join(registry_url, dl.empty() || dl[0] != '/' ? "/" + dl : dl);
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
    Fd fd(::mkstemp(buf.data()));
    if (!fd) throw_error(Code::kIOError, "cannot create temp archive " + pattern + ": " + std::strerror(errno));
    archive_path = buf.data();
    cleanup.reset(new fs::path(archive_path));
    pack_module_dir(source, archive_path);
  } else if (!fs::is_regular_file(source)) {
    throw_error(Code::kNotFound, "module " + source.string() + " is neither a directory nor an archive");
  }
  uint64_t size = 0;
  std::string sha = sha256_file(archive_path, &size);
  resolver::HttpCall call;
  call.method = "PUT";
  call.url = join(base, "/v1/modules/" + m.publisher + "/" + m.name + "/" + version);
  call.upload = archive_path;
  call.progress = opt.progress;
  call.max_response_bytes = 1 << 20;
  call.headers = {"Authorization: Bearer " + opt.token, "X-Hub-SHA256: " + sha, "Content-Type: application/gzip"};
  if (!opt.description.empty())
    call.headers.push_back("X-Hub-Metadata: " + json{{"description", opt.description}}.dump());
  resolver::HttpReply reply = resolver::http_call(call, resolver::FetchOptions::from_env());
  const long status = reply.status;
  const std::string& body = reply.body;
  const std::string what = "publishing " + m.str() + "@" + version + " to " + base;
  if (status != 201) throw_http(what, status, body);
  json doc = parse_json(body, what + ": the registry's reply");
  if (!doc.is_object()) throw_error(Code::kCorruption, what + ": the registry's reply is not a JSON object");
  if (json_string(doc, "sha256") != sha)
    throw_error(Code::kDataLoss, what + ": registry recorded SHA-256 " +
                                     printable(json_string(doc, "sha256", "?"), 80) + ", sent " + sha);
  return doc;
}

json search_modules(const std::string& registry_url, const std::string& query) {
  const std::string base = base_url(registry_url);
  resolver::CurlPtr curl = resolver::new_curl();
  char* esc = curl_easy_escape(curl.get(), query.c_str(), static_cast<int>(query.size()));
  std::string q = esc ? esc : "";
  curl_free(esc);
  std::string body;
  std::string url = join(base, "/v1/search?q=" + q);
  long status = http_get(url, &body);
  if (status == 200) {
    json doc = parse_json(body, "searching " + base + ": the registry's answer from " + url);
    if (!doc.is_object())
      throw_error(Code::kCorruption, "searching " + base + ": the answer from " + url + " is not a JSON object");
    return doc;
  }
  if (status != 404 && status != 405) throw_http("searching " + base, status, body);
  // A static registry has no search endpoint: filter its index.
  json index = get_json(join(base, "/v1/index.json"), "searching " + base);
  std::string lq = query;
  for (char& ch : lq) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  json mods = json::array();
  const json none = json::array();
  const json& listed = index.contains("modules") && index["modules"].is_array() ? index["modules"] : none;
  for (const json& m : listed) {
    std::string hay = json_string(m, "module") + "\n" + json_string(m, "description");
    for (char& ch : hay) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (hay.find(lq) != std::string::npos) mods.push_back(m);
  }
  return json{{"query", query}, {"modules", mods}};
}

json list_versions(const std::string& registry_url, const std::string& module, const resolver::FetchOptions& fetch) {
  const std::string base = base_url(registry_url);
  ModuleName m = parse_module_name(module);
  return get_json(join(base, "/v1/modules/" + m.publisher + "/" + m.name + "/versions.json"),
                  "listing versions of " + m.str() + " at " + redact_credentials(base), fetch);
}

RegistryClient::RegistryClient(std::string url, resolver::FetchOptions fetch)
    : url_(base_url(url)), fetch_(std::move(fetch)) {}

bool RegistryClient::owns(const std::string& handle) const {
  if (handle.find('@') == std::string::npos || handle.find("://") != std::string::npos) return false;
  try {
    parse_handle(handle);
    return true;
  } catch (const Error&) {
    return false;  // not shaped like a registry name: a path
  }
}

bool RegistryClient::is_moving(const std::string& handle) const { return parse_handle(handle).latest(); }

std::string RegistryClient::id() const {
  std::string id = redact_credentials(url_);
  while (!id.empty() && id.back() == '/') id.pop_back();
  return id;
}

resolver::RegistryModule RegistryClient::resolve(const std::string& handle) const {
  ResolvedModule r = resolve_registry_handle(url_, handle, fetch_);
  return {r.handle.substr(0, r.handle.find('@')), r.version, r.download_url, r.sha256};
}

}  // namespace hub::registry
