#include "registry/server/registry_server.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <vector>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/core/fd.h"
#include "hub/core/json.h"
#include "hub/core/logging.h"
#include "hub/module/module.h"
#include "registry/names.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hub::registry {
namespace {

HttpResponse error_response(int status, std::string_view code, std::string_view message) {
  return HttpResponse::json(status, error_json(code, message));
}

int status_for(Code code) {
  switch (code) {
    case Code::kInvalidArgument:
      return 400;
    case Code::kCorruption:
      return 400;
    case Code::kDataLoss:
      return 400;
    case Code::kNotFound:
      return 404;
    case Code::kAlreadyExists:
      return 409;
    case Code::kPermissionDenied:
      return 403;
    case Code::kResourceExhausted:
      return 413;
    case Code::kDeadlineExceeded:
      return 408;
    default:
      return 500;
  }
}

std::string code_slug(Code code) {
  switch (code) {
    case Code::kInvalidArgument:
      return "invalid_argument";
    case Code::kCorruption:
      return "corrupt_archive";
    case Code::kDataLoss:
      return "incomplete_or_mismatched_body";
    case Code::kNotFound:
      return "not_found";
    case Code::kAlreadyExists:
      return "already_exists";
    case Code::kPermissionDenied:
      return "forbidden";
    case Code::kResourceExhausted:
      return "too_large";
    case Code::kDeadlineExceeded:
      return "timeout";
    default:
      return "internal";
  }
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    parts.push_back(url_decode(std::string_view(path).substr(start, end - start)));
    start = end + 1;
  }
  if (!parts.empty() && parts.back().empty()) parts.pop_back();
  return parts;
}

// An upload being received: a temp file, removed unless released. Blobs are
// public content, so the file is made 0644 whatever the umask (a static export
// hard-links them for a web server running as another user).
class TempFile {
 public:
  explicit TempFile(const fs::path& dir) {
    std::string tmpl = (dir / "upload-XXXXXX").string();
    fd_ = Fd(::mkostemp(tmpl.data(), O_CLOEXEC));
    if (!fd_) throw_error(Code::kIOError, "cannot create temp file in " + dir.string() + ": " + std::strerror(errno));
    path_ = tmpl;
    if (::fchmod(fd_.get(), 0644) != 0) throw_error(Code::kIOError, "cannot chmod " + path_.string());
  }
  ~TempFile() {
    if (!released_) ::unlink(path_.c_str());
  }
  void write(const char* p, size_t n) { write_all(fd_.get(), std::string_view(p, n), path_.string()); }
  void sync_and_close() {
    fsync_fd(fd_.get(), path_.string());
    fd_.close(path_.string());
  }
  const fs::path& path() const { return path_; }
  void release() { released_ = true; }

 private:
  Fd fd_;
  fs::path path_;
  bool released_ = false;
};

std::string bearer_token(const HttpRequest& req) {
  const std::string* auth = req.header("authorization");
  if (!auth) return {};
  std::string_view v = *auth;
  if (v.size() < 7) return {};
  std::string scheme(v.substr(0, 7));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "bearer ") return {};
  v.remove_prefix(7);
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  return std::string(v);
}

// Parses a single "bytes=" range against `size`. Returns false when the header
// should be ignored (malformed or multi-range); sets unsatisfiable when it is
// well-formed but outside the file.
bool parse_range(const std::string& h, uint64_t size, uint64_t* first, uint64_t* last, bool* unsatisfiable) {
  *unsatisfiable = false;
  if (h.rfind("bytes=", 0) != 0) return false;
  std::string spec = h.substr(6);
  if (spec.find(',') != std::string::npos) return false;
  size_t dash = spec.find('-');
  if (dash == std::string::npos) return false;
  std::string a = spec.substr(0, dash), b = spec.substr(dash + 1);
  auto num = [](const std::string& s, uint64_t* out) {
    if (s.empty() || s.size() > 19) return false;
    uint64_t v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    *out = v;
    return true;
  };
  if (a.empty()) {  // suffix: last N bytes
    uint64_t n;
    if (!num(b, &n)) return false;
    if (n == 0 || size == 0) {
      *unsatisfiable = true;
      return true;
    }
    *first = n >= size ? 0 : size - n;
    *last = size - 1;
    return true;
  }
  if (!num(a, first)) return false;
  if (b.empty()) {
    *last = size == 0 ? 0 : size - 1;
  } else if (!num(b, last) || *last < *first) {
    return false;
  }
  if (*first >= size) {
    *unsatisfiable = true;
    return true;
  }
  if (*last >= size) *last = size - 1;
  return true;
}

}  // namespace

std::string rfc3339(int64_t t) {
  time_t tt = static_cast<time_t>(t);
  tm g{};
  gmtime_r(&tt, &g);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &g);
  return buf;
}

json version_json(const VersionRecord& r) {
  json sig = json::parse(r.signatures_json, nullptr, false);
  if (sig.is_discarded()) sig = json::array();
  return json{{"publisher", r.publisher},
              {"name", r.name},
              {"version", r.version},
              {"handle", r.publisher + "/" + r.name + "@" + r.version},
              {"description", r.description},
              {"size", r.size},
              {"sha256", r.sha256},
              {"signatures", sig},
              {"published_at", rfc3339(r.published_at)},
              {"published_at_unix", r.published_at},
              {"download_url", "/v1/blobs/sha256/" + r.sha256}};
}

json module_json(const ModuleSummary& m) {
  return json{{"publisher", m.publisher},           {"name", m.name},     {"module", m.publisher + "/" + m.name},
              {"description", m.description},       {"latest", m.latest}, {"num_versions", m.num_versions},
              {"updated_at", rfc3339(m.updated_at)}};
}

json versions_doc(const std::string& publisher, const std::string& name, const std::vector<VersionRecord>& versions) {
  json list = json::array();
  for (const auto& v : versions) list.push_back(version_json(v));
  return json{{"publisher", publisher}, {"name", name}, {"module", publisher + "/" + name}, {"versions", list}};
}

ModuleValidator default_module_validator(resolver::UnpackLimits limits) {
  return [limits](const fs::path& archive) {
    fs::path dest = archive;
    dest += ".d";
    ModuleInfo info;
    resolver::UnpackOptions opt;
    opt.limits = limits;
    opt.display_name = "upload";
    opt.validator = [&info](const fs::path& dir) {
      ModuleSpec spec = load_module_spec(dir.string());
      info.description = spec.metadata().description;
      json sigs = json::array();
      auto tensors = [](const std::map<std::string, TensorInfo>& m) {
        json out = json::object();
        for (const auto& [k, t] : m)
          out[k] = json{{"dtype", std::string(dtype_name(t.dtype))}, {"shape", t.shape.to_string()}};
        return out;
      };
      for (const std::string& name : spec.signature_names()) {
        const SignatureInfo& sig = spec.signature(name);
        sigs.push_back(json{{"name", name}, {"inputs", tensors(sig.inputs)}, {"outputs", tensors(sig.outputs)}});
      }
      info.signatures = sigs;
    };
    std::error_code ec;
    try {
      resolver::unpack_archive(archive, dest, opt);
    } catch (const Error& e) {
      fs::remove_all(dest, ec);
      if (e.code() == Code::kResourceExhausted || e.code() == Code::kIOError) throw;
      throw Error(Code::kInvalidArgument, "not a safe, loadable module archive: " + e.message());
    }
    fs::remove_all(dest, ec);
    return info;
  };
}

RegistryServer::RegistryServer(RegistryServerOptions options) : options_(std::move(options)) {
  if (!options_.validator) options_.validator = default_module_validator();
  for (const std::string& proxy : options_.trusted_proxies) {
    std::string key = client_key(proxy);
    if (key.empty())
      throw_error(Code::kInvalidArgument, "trusted proxy '" + proxy + "' is not a numeric IPv4 or IPv6 address");
    trusted_proxy_keys_.push_back(key);
  }
  auth_throttle_ = std::make_unique<FailureThrottle>(options_.auth_failure_burst, options_.auth_failure_refill_ms);
  store_ = std::make_unique<Store>(options_.root);
  int removed = store_->recover();
  if (removed > 0) {
    HUB_LOG(Info) << "registry: removed " << removed << " leftover temp/orphan files";
  }
  http_ = std::make_unique<HttpServer>(options_.http,
                                       [this](const HttpRequest& req, BodyReader& body) { return handle(req, body); });
}

RegistryServer::~RegistryServer() { stop(); }

void RegistryServer::start() {
  http_->listen(options_.host, options_.port);
  http_->start();
}

void RegistryServer::stop() {
  if (http_) http_->stop();
}

HttpResponse RegistryServer::handle(const HttpRequest& req, BodyReader& body) {
  try {
    std::vector<std::string> p = split_path(req.path);
    const std::string& m = req.method;
    bool get = m == "GET" || m == "HEAD";
    auto not_allowed = [&] {
      HttpResponse r = error_response(405, "method_not_allowed", m + " is not allowed on " + req.path);
      r.close = body.remaining() > 0;
      return r;
    };
    if ((p.size() == 1 && p[0] == "healthz") || (p.size() == 2 && p[0] == "v1" && p[1] == "health")) {
      if (!get) return not_allowed();
      return HttpResponse::json(200, json{{"status", "ok"}}.dump());
    }
    for (const std::string& part : p)
      if (part == ".." || part == "." || part.find('/') != std::string::npos || part.find('\0') != std::string::npos)
        return error_response(400, "invalid_argument", "path segment '" + part.substr(0, 80) + "' is not allowed");
    if (p.empty() || p[0] != "v1") return error_response(404, "not_found", "no such endpoint " + req.path);
    if (p.size() == 2 && p[1] == "index.json") {
      if (!get) return not_allowed();
      json mods = json::array();
      for (const auto& s : store_->search("")) mods.push_back(module_json(s));
      return HttpResponse::json(200, json{{"modules", mods}}.dump());
    }
    if (p.size() == 2 && p[1] == "search") {
      std::string q;
      if (m == "POST") {
        // JSON body {"query": "..."}; bounded.
        if (!req.content_length) return error_response(411, "length_required", "Content-Length required");
        if (*req.content_length > options_.max_json_bytes) {
          HttpResponse r =
              error_response(413, "too_large", "JSON body larger than " + std::to_string(options_.max_json_bytes));
          r.close = true;
          return r;
        }
        std::string text(*req.content_length, '\0');
        size_t got = 0;
        while (got < text.size()) {
          size_t n = body.read(text.data() + got, text.size() - got);
          if (n == 0) break;
          got += n;
        }
        json doc;
        try {
          doc = parse_json(text, "request body");
        } catch (const Error& e) {
          return error_response(400, "malformed_json", e.message());
        }
        if (!doc.is_object()) return error_response(400, "malformed_json", "request body is not a JSON object");
        if (!doc.contains("query") || !doc["query"].is_string())
          return error_response(400, "malformed_json", "field 'query' must be a string");
        q = doc["query"].get<std::string>();
      } else if (get) {
        q = req.query("q");
      } else {
        return not_allowed();
      }
      if (q.size() > 256) return error_response(400, "invalid_argument", "query longer than 256 characters");
      json mods = json::array();
      for (const auto& s : store_->search(q)) mods.push_back(module_json(s));
      return HttpResponse::json(200, json{{"query", q}, {"modules", mods}}.dump());
    }
    if (p.size() == 4 && p[1] == "blobs" && p[2] == "sha256") {
      if (!get) return not_allowed();
      if (!is_sha256_hex(p[3]) || p[3] != to_lower(p[3]))
        return error_response(400, "invalid_argument", "malformed digest '" + p[3].substr(0, 80) + "'");
      return download(req, p[3]);
    }
    if (p.size() >= 4 && p.size() <= 6 && p[1] == "modules") {
      std::string publisher = normalize_name(p[2], "publisher");
      std::string name = normalize_name(p[3], "module");
      if (get) name = store_->published_name(publisher, name).value_or(name);  // any spelling reads the module
      if (p.size() == 4 || (p.size() == 5 && p[4] == "versions.json")) {
        if (!get) return not_allowed();
        auto versions = store_->versions(publisher, name);
        if (versions.empty()) return error_response(404, "not_found", "no module " + publisher + "/" + name);
        return HttpResponse::json(200, versions_doc(publisher, name, versions).dump());
      }
      std::string version = parse_version(p[4]).text;
      if (p.size() == 5) {
        if (m == "PUT" || m == "POST") return publish(req, body, publisher, name, version);
        if (!get) return not_allowed();
        auto rec = store_->version(publisher, name, version);
        if (!rec) return error_response(404, "not_found", "no version " + publisher + "/" + name + "@" + version);
        return HttpResponse::json(200, version_json(*rec).dump());
      }
      if (p[5] == "archive") {
        if (!get) return not_allowed();
        auto rec = store_->version(publisher, name, version);
        if (!rec) return error_response(404, "not_found", "no version " + publisher + "/" + name + "@" + version);
        return download(req, rec->sha256);
      }
    }
    return error_response(404, "not_found", "no such endpoint " + req.path);
  } catch (const Error& e) {
    HttpResponse r = error_response(status_for(e.code()), code_slug(e.code()), e.message());
    if (body.remaining() > 0) r.close = true;
    return r;
  }
}

HttpResponse RegistryServer::publish(const HttpRequest& req, BodyReader& body, const std::string& publisher,
                                     const std::string& name, const std::string& version) {
  const std::string handle = publisher + "/" + name + "@" + version;
  auto refuse = [&](int status, std::string_view code, std::string msg) {
    HttpResponse r = error_response(status, code, msg);
    r.close = true;  // the body is left unread
    return r;
  };
  std::string token = bearer_token(req);
  if (token.empty()) {
    HttpResponse r = refuse(401, "unauthorized", "publishing needs Authorization: Bearer <token>");
    r.add("WWW-Authenticate", "Bearer realm=\"hub-registry\"");
    return r;
  }
  const std::string client = client_of(req);
  if (int wait_s = auth_throttle_->retry_after_s(client)) {
    HUB_LOG(Warning) << "registry: " << client << " throttled: too many failed authentications (retry in " << wait_s
                     << " s)";
    HttpResponse r =
        refuse(429, "too_many_requests",
               "too many failed authentications from your address; retry in " + std::to_string(wait_s) + " s");
    r.add("Retry-After", std::to_string(wait_s));
    return r;
  }
  AuthResult auth = store_->authenticate(token);
  if (auth.status != AuthStatus::kOk) {
    auth_throttle_->record_failure(client);
    std::string why;
    switch (auth.status) {
      case AuthStatus::kMalformed:
        why = "malformed token";
        break;
      case AuthStatus::kUnknown:
        why = "unknown token";
        break;
      case AuthStatus::kWrongSecret:
        why = "wrong secret for token";
        break;
      case AuthStatus::kRevoked:
        why = "token revoked";
        break;
      case AuthStatus::kExpired:
        why = "token expired";
        break;
      case AuthStatus::kOk:
        break;
    }
    HUB_LOG(Warning) << "registry: authentication failed for " << client << ": " << why
                     << (auth.token_id.empty() ? "" : " id=" + auth.token_id);
    // Revoked and expired are told only to a client holding the real secret.
    bool tell = auth.status == AuthStatus::kRevoked || auth.status == AuthStatus::kExpired;
    HttpResponse r = refuse(401, "unauthorized", tell ? why : "invalid token");
    r.add("WWW-Authenticate", "Bearer realm=\"hub-registry\", error=\"invalid_token\"");
    return r;
  }
  if (auth.publisher != publisher) {
    HUB_LOG(Warning) << "registry: forbidden: token id=" << auth.token_id << " of publisher " << auth.publisher
                     << " used for " << handle << " by " << client;
    return refuse(403, "forbidden",
                  "token may publish only for publisher '" + auth.publisher + "', not '" + publisher + "'");
  }
  if (!req.content_length) return refuse(411, "length_required", "publishing needs Content-Length");
  uint64_t length = *req.content_length;
  if (length > options_.max_upload_bytes)
    return refuse(413, "too_large",
                  "upload of " + std::to_string(length) + " bytes exceeds the limit of " +
                      std::to_string(options_.max_upload_bytes));
  if (length == 0) return refuse(400, "invalid_argument", "empty upload");
  const std::string* declared = req.header("x-hub-sha256");
  if (!declared || !is_sha256_hex(*declared) || *declared != to_lower(*declared))
    return refuse(400, "invalid_argument", "publishing needs X-Hub-SHA256: <64 lower-case hex digits>");
  ModuleInfo extra;
  if (const std::string* meta = req.header("x-hub-metadata")) {
    json doc;
    try {
      doc = parse_json(*meta, "X-Hub-Metadata");
    } catch (const Error& e) {
      return refuse(400, "malformed_json", e.message());
    }
    if (!doc.is_object()) return refuse(400, "malformed_json", "X-Hub-Metadata is not a JSON object");
    if (doc.contains("description")) {
      if (!doc["description"].is_string() || doc["description"].get<std::string>().size() > 4096)
        return refuse(400, "malformed_json", "X-Hub-Metadata 'description' must be a string of <= 4096 bytes");
      extra.description = doc["description"].get<std::string>();
    }
  }
  try {
    store_->check_publishable(publisher, name, version);
  } catch (const Error& e) {
    if (e.code() != Code::kAlreadyExists) throw;
    return refuse(409, "already_exists", e.message());
  }

  TempFile temp(store_->tmp_dir());
  Sha256 hasher;
  std::vector<char> buf(1 << 16);
  uint64_t received = 0;
  while (received < length) {
    size_t n = body.read(buf.data(), buf.size());  // throws on stall / early close
    if (n == 0) break;
    hasher.update(buf.data(), n);
    temp.write(buf.data(), n);
    received += n;
  }
  if (received != length)
    throw_error(Code::kDataLoss,
                "received " + std::to_string(received) + " of " + std::to_string(length) + " declared bytes");
  std::string actual = hasher.hex_digest();
  if (actual != *declared)
    throw_error(Code::kDataLoss, "SHA-256 mismatch: declared " + *declared + ", received " + actual);
  temp.sync_and_close();
  ModuleInfo info;
  try {
    info = options_.validator(temp.path());
  } catch (const Error& e) {
    throw e.with_context("refusing " + handle);
  }
  VersionRecord rec;
  rec.publisher = publisher;
  rec.name = name;
  rec.version = version;
  rec.sha256 = actual;
  rec.size = length;
  rec.description = info.description.empty() ? extra.description : info.description;
  rec.signatures_json = info.signatures.dump();
  rec.published_at = static_cast<int64_t>(::time(nullptr));
  temp.release();  // commit_version consumes the file either way
  store_->commit_version(temp.path(), rec);
  HUB_LOG(Info) << "registry: published " << handle << " sha256=" << actual << " size=" << length
                << " token=" << auth.token_id << " client=" << client;
  json doc = version_json(rec);
  HttpResponse r = HttpResponse::json(201, doc.dump());
  r.add("Location", "/v1/modules/" + publisher + "/" + name + "/" + version);
  return r;
}

std::string RegistryServer::client_of(const HttpRequest& req) const {
  const std::string* real_ip = req.header("x-real-ip");
  if (!real_ip ||
      std::find(trusted_proxy_keys_.begin(), trusted_proxy_keys_.end(), req.client) == trusted_proxy_keys_.end())
    return req.client;
  std::string key = client_key(*real_ip);
  return key.empty() ? req.client : key;
}

HttpResponse RegistryServer::download(const HttpRequest& req, const std::string& sha256) {
  fs::path path = store_->blob_path(sha256);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return error_response(404, "not_found", "no blob " + sha256);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return error_response(500, "internal", "cannot stat blob");
  auto file = std::make_shared<FileBody>(FileBody{std::move(fd), 0, static_cast<uint64_t>(st.st_size)});
  const uint64_t size = file->length;
  const std::string etag = "\"" + sha256 + "\"";
  HttpResponse r;
  r.add("Content-Type", "application/gzip");
  r.add("ETag", etag);
  r.add("Accept-Ranges", "bytes");
  r.add("Cache-Control", "public, max-age=31536000, immutable");
  if (const std::string* inm = req.header("if-none-match")) {
    if (*inm == etag || *inm == "*" || inm->find(etag) != std::string::npos) {
      r.status = 304;
      return r;
    }
  }
  const std::string* range = req.header("range");
  if (range) {
    const std::string* if_range = req.header("if-range");
    bool range_applies = !if_range || *if_range == etag;  // a date or other tag: send it all
    uint64_t first = 0, last = 0;
    bool unsatisfiable = false;
    if (range_applies && parse_range(*range, size, &first, &last, &unsatisfiable)) {
      if (unsatisfiable) {
        HttpResponse e = error_response(416, "range_not_satisfiable",
                                        "range '" + range->substr(0, 80) + "' is outside 0.." + std::to_string(size));
        e.add("Content-Range", "bytes */" + std::to_string(size));
        return e;
      }
      r.status = 206;
      r.add("Content-Range",
            "bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" + std::to_string(size));
      file->offset = first;
      file->length = last - first + 1;
      r.file = file;
      return r;
    }
  }
  r.status = 200;
  r.file = file;
  return r;
}

}  // namespace hub::registry
