// The registry HTTP service: the JSON API of docs/registry-api.md over
// HttpServer, backed by Store.
//
// Publishing (PUT/POST /v1/modules/P/N/V) needs a bearer token for publisher
// P, Content-Length (<= max_upload_bytes, checked before reading the body) and
// X-Hub-SHA256. The body is streamed to a temp file under <root>/tmp while
// hashing; the version becomes visible only if the whole body arrived, its
// digest matches, and the validator accepts the archive (safe to unpack, has
// a loadable module.pb). Anything else removes the temp file and records
// nothing. Reads are anonymous.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "hub/resolver/unpack.h"
#include "registry/server/http.h"
#include "registry/server/store.h"

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
  ModuleValidator validator;  // empty = default_module_validator()
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
  HttpResponse publish(const HttpRequest& req, BodyReader& body, const std::string& publisher,
                       const std::string& name, const std::string& version);
  HttpResponse download(const HttpRequest& req, const std::string& sha256);

  RegistryServerOptions options_;
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
