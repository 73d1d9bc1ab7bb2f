// Registry client (libcurl): publish, search, versions, and handle resolution.
//
// A registry URL is the base of the API ("http://host:port", or the root a
// static export is served from); the API lives under URL/v1/. Every function
// throws hub::Error: kUnavailable when the registry cannot be reached,
// kNotFound / kAlreadyExists / kPermissionDenied / kInvalidArgument /
// kResourceExhausted mapped from the server's 404 / 409 / 401,403 / 400,411 /
// 413, with the server's JSON error message. Thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace hub::registry {

// $HUB_REGISTRY; throws kInvalidArgument when it is unset or empty.
std::string default_registry_url();

struct ResolvedModule {
  std::string handle;        // publisher/name@version (concrete version)
  std::string version;
  std::string download_url;  // absolute
  std::string sha256;        // expected digest of the archive
  uint64_t size = 0;
};

// "publisher/name@X.Y.Z", "publisher/name@latest" or "publisher/name" (latest:
// highest semantic version, releases preferred over prereleases).
// Empty registry_url = default_registry_url(). Works against the server and a static export.
ResolvedModule resolve_registry_handle(const std::string& registry_url, const std::string& handle);

// Writes dir as a gzip'd tar (regular files and directories only, sorted,
// fixed mtime/owner so the same tree gives the same bytes). The directory must
// contain module.pb; links are refused. Returns the archive's SHA-256.
std::string pack_module_dir(const std::filesystem::path& dir, const std::filesystem::path& archive);

struct PublishOptions {
  std::string registry_url;  // empty = $HUB_REGISTRY
  std::string module;        // publisher/name
  std::string version;       // X.Y.Z
  std::string token;         // bearer token
  std::string description;   // optional, sent in X-Hub-Metadata
  bool progress = false;     // progress bar on stderr
};

// Publishes a module directory (packed first) or an existing archive. Returns
// the server's JSON for the new version (has "handle", "sha256", "size").
nlohmann::json publish_module(const std::filesystem::path& dir_or_archive, const PublishOptions& options);

// {"query":..., "modules":[...]}; falls back to filtering /v1/index.json on a static registry.
nlohmann::json search_modules(const std::string& registry_url, const std::string& query);
// {"module":..., "versions":[...]} highest version first.
nlohmann::json list_versions(const std::string& registry_url, const std::string& module);

// Low level: GET url into memory (at most max_bytes). Returns the HTTP status.
long http_get(const std::string& url, std::string* body, uint64_t max_bytes = 64ull << 20);
// Downloads url to a file, verifying the SHA-256; throws kDataLoss on mismatch (file removed).
void download_to_file(const std::string& url, const std::filesystem::path& out,
                      const std::string& expected_sha256);

}  // namespace hub::registry
