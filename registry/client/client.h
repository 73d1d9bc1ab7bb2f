// Registry client: publish, search, versions, and handle resolution.
//
// A registry URL is the base of the API ("http://host:port", or the root a
// static export is served from); the API lives under URL/v1/. Requests go
// through hub/resolver/curl.h (TLS with $SSL_CERT_FILE, timeouts, retries of
// transient failures with backoff, FetchOptions::from_env()). Every answer is
// parsed with hub::parse_json (bounded nesting). Every function throws
// hub::Error: kUnavailable when the registry cannot be reached,
// kNotFound / kAlreadyExists / kPermissionDenied / kInvalidArgument /
// kResourceExhausted mapped from the server's 404 / 409 / 401,403 / 400,411 /
// 413, with the server's JSON error message; kCorruption for an answer that
// is not what the protocol says. URLs in messages have credentials redacted.
// Thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "hub/resolver/resolver.h"

namespace hub::registry {

struct ResolvedModule {
  std::string handle;  // publisher/name@version (concrete version)
  std::string version;
  std::string download_url;  // absolute
  std::string sha256;        // expected digest of the archive
  uint64_t size = 0;
};

// "publisher/name@X.Y.Z", "publisher/name@latest" or "publisher/name" (latest:
// highest semantic version, releases preferred over prereleases).
// Works against the server and a static export. An empty registry_url (here
// and below) is InvalidArgument: the library never picks a registry by itself.
ResolvedModule resolve_registry_handle(const std::string& registry_url, const std::string& handle,
                                       const resolver::FetchOptions& fetch = resolver::FetchOptions::from_env());
// The part of resolve_registry_handle that reads the registry's answer: picks
// `handle`'s version from a versions document (as list_versions returns it;
// untrusted: every field is checked). No I/O.
ResolvedModule pick_version(const std::string& registry_url, const std::string& handle, const nlohmann::json& versions);

// Writes dir as a gzip'd tar (regular files and directories only, sorted,
// fixed mtime/owner so the same tree gives the same bytes). The directory must
// contain module.pb; links are refused. Returns the archive's SHA-256.
std::string pack_module_dir(const std::filesystem::path& dir, const std::filesystem::path& archive);

struct PublishOptions {
  std::string registry_url;
  std::string module;       // publisher/name
  std::string version;      // X.Y.Z
  std::string token;        // bearer token
  std::string description;  // optional, sent in X-Hub-Metadata
  bool progress = false;    // progress bar on stderr
};

// Publishes a module directory (packed first) or an existing archive. Returns
// the server's JSON for the new version (has "handle", "sha256", "size").
nlohmann::json publish_module(const std::filesystem::path& dir_or_archive, const PublishOptions& options);

// {"query":..., "modules":[...]}; falls back to filtering /v1/index.json on a static registry.
nlohmann::json search_modules(const std::string& registry_url, const std::string& query);
// {"module":..., "versions":[...]} highest version first.
nlohmann::json list_versions(const std::string& registry_url, const std::string& module,
                             const resolver::FetchOptions& fetch = resolver::FetchOptions::from_env());

// Low level: GET url into memory (at most max_bytes). Returns the HTTP status.
long http_get(const std::string& url, std::string* body, uint64_t max_bytes = 64ull << 20);
// Downloads url to a file with the resolver's fetcher, verifying the SHA-256;
// throws kDataLoss on mismatch (nothing is left at `out`).
void download_to_file(const std::string& url, const std::filesystem::path& out, const std::string& expected_sha256);

// The registry as the resolver sees it: pass one as
// hub::resolver::ResolverOptions::registry to let a Resolver resolve
// registry names ("publisher/name@X.Y.Z", "publisher/name@latest"; the '@' is
// required, so relative paths like "models/net" are never taken for names).
// "@latest" is a moving reference. Immutable and thread-safe.
class RegistryClient final : public resolver::RegistryMapper {
 public:
  // `url`: the registry's base URL (InvalidArgument unless http(s)://);
  // `fetch`: timeouts, retries and CA bundle of its requests.
  explicit RegistryClient(std::string url, resolver::FetchOptions fetch = resolver::FetchOptions::from_env());
  bool owns(const std::string& handle) const override;
  bool is_moving(const std::string& handle) const override;
  std::string id() const override;
  resolver::RegistryModule resolve(const std::string& handle) const override;
  const std::string& url() const { return url_; }

 private:
  std::string url_;
  resolver::FetchOptions fetch_;
};

}  // namespace hub::registry
