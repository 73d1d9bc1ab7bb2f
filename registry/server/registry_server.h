// The registry HTTP service: the JSON API of docs/registry-api.md over
// HttpServer, backed by Store.
//
// Publishing (PUT/POST /v1/modules/P/N/V) needs a bearer token for publisher
// P (not revoked, not expired), Content-Length (<= max_upload_bytes, checked before reading the body) and
// X-Hub-SHA256. The body is streamed to a temp file under <root>/tmp while
// hashing; the version becomes visible only if the whole body arrived, its
// digest matches, and the validator accepts the archive (safe to unpack, has
// a loadable module.pb). Anything else removes the temp file and records
// nothing. Reads are anonymous.
//
// Failed authentications (a malformed, unknown, wrong, revoked or expired
// token; not a missing token, nor a valid token for another publisher) are
// throttled per client (FailureThrottle): auth_failure_burst failures, one
// regained every auth_failure_refill_ms; past that the client's publishes get
// 429 with Retry-After (seconds) before its token is looked at. The client is
// the connection's client_key(), or, when the peer is one of
// trusted_proxies, the X-Real-IP header the proxy sets (a missing or
// unparsable one counts as the proxy itself).
//
// Logging: every publish, refusal of a token and throttling is logged with
// the client and the token's id (the public part, which `hub registry token
// revoke` takes), never the token's secret nor a malformed token's text.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hub/resolver/unpack.h"
#include "registry/server/http.h"
#include "registry/server/store.h"
#include "registry/server/throttle.h"

namespace hub::registry {

// What the validator learned from an accepted archive.
struct ModuleInfo {
  std::string description;
  nlohmann::json signatures = nlohmann::json::array();  // summary, e.g. [{"name":"default",...}]
};

// Throws hub::Error when the archive must be refused: kInvalidArgument /
// kCorruption (400), kResourceExhausted (413).
using ModuleValidator = std::function<ModuleInfo(const std::filesystem::path& archive)>;

// Unpacks the archive with hub::resolver::unpack_archive() (no absolute or
// `..` paths, no escaping links, no devices, entry-count and size caps checked
// before writing) into a sibling temp directory, loads it with
// hub::load_module_spec(), reports its metadata description and signatures,
// and removes the directory. Unsafe or unloadable archives become
// kInvalidArgument (400); size caps stay kResourceExhausted (413).
ModuleValidator default_module_validator(resolver::UnpackLimits limits = {});

struct RegistryServerOptions {
  std::filesystem::path root;
  std::string host = "127.0.0.1";
  int port = 0;
  uint64_t max_upload_bytes = 1ull << 30;
  uint64_t max_json_bytes = 64 * 1024;
  HttpLimits http;
  ModuleValidator validator;                 // empty = default_module_validator()
  int auth_failure_burst = 10;               // failed authentications a client may spend at once
  int auth_failure_refill_ms = 6000;         // milliseconds per failure regained (10 a minute)
  std::vector<std::string> trusted_proxies;  // numeric peer addresses (IPv6: their /64) whose X-Real-IP is believed
};

class RegistryServer {
 public:
  // Opens the store and removes leftovers of interrupted uploads (one server per root).
  explicit RegistryServer(RegistryServerOptions options);
  ~RegistryServer();
  // Binds and starts serving; port() is valid afterwards.
  void start();
  void stop();
  int port() const { return http_->port(); }
  Store& store() { return *store_; }

  // The request handler (exposed for tests that drive it without sockets).
  HttpResponse handle(const HttpRequest& req, BodyReader& body);

 private:
  HttpResponse publish(const HttpRequest& req, BodyReader& body, const std::string& publisher, const std::string& name,
                       const std::string& version);
  HttpResponse download(const HttpRequest& req, const std::string& sha256);
  // The client a request counts against (see the file comment).
  std::string client_of(const HttpRequest& req) const;

  RegistryServerOptions options_;
  std::vector<std::string> trusted_proxy_keys_;
  std::unique_ptr<FailureThrottle> auth_throttle_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<HttpServer> http_;
};

// JSON shapes shared by the server and the static export.
nlohmann::json version_json(const VersionRecord& r);
nlohmann::json module_json(const ModuleSummary& m);
nlohmann::json versions_doc(const std::string& publisher, const std::string& name,
                            const std::vector<VersionRecord>& versions);
std::string rfc3339(int64_t unix_seconds);

}  // namespace hub::registry
