// Resolver: a module handle -> the local directory holding the module.
//
// Handles (each optionally followed by "#sha256=HEX", the archive's expected
// SHA-256):
//   /path/to/module_dir, ./rel/dir       a local module directory, used in place
//   /path/to/module.tar.gz, file://...    a local archive: unpacked into the cache
//   http://... , https://...              a tar or tar.gz archive: downloaded,
//                                         verified, unpacked into the cache
//   publisher/name@version, @latest       a registry name, only when the Resolver
//                                         was given a registry (RegistryMapper)
//
// Wiring is explicit: a Resolver holds its cache directory, offline flag,
// fetcher and (optionally) the registry it may ask; nothing is installed at
// load time, and load_module_spec() (hub/module) reads local directories only.
// An application that wants registry names passes the registry client
// (hub::registry::RegistryClient, library hub-registry) as options.registry.
//
// Foreign models are converted on install (hub/interop/import.h): an archive
// whose root (or single top-level folder) holds a TF Hub module
// (tfhub_module.pb, as tfhub.dev serves with ?tf-hub-format=compressed), a
// SavedModel or a TF.js graph model, and a file that is an ONNX model, are
// imported with ResolverOptions::import and the module is cached; the
// descriptor records the source format. An http(s) handle on tfhub.dev
// without a query is fetched with "?tf-hub-format=compressed" (as TF Hub's
// own resolver does); its cache key is the handle as given.
//
// Archives are cached (see cache.h for the layout and guarantees). A cache hit
// of a URL, an archive or a pinned registry version reads only local files,
// no network connection. A moving registry reference (like "@latest") is
// re-resolved by the registry on every online resolve (the archive itself is
// downloaded only when that version is not cached); offline it is served from
// what it last resolved to. Resolution::resolved says which version it was.
// Offline mode: ResolverOptions::offline, default $HUB_OFFLINE = 1/true/yes/on.
//
// Errors are hub::Error whose message starts with "module '<handle>': " (the
// handle with any credentials in it redacted) and names the cause:
// kNotFound (no such path, HTTP 404, unknown registry version),
// kUnavailable (network, offline and not cached, interrupted: a resolve is an
// InterruptibleScope (hub/core/interrupt.h) and stops at SIGINT/SIGTERM when
// the program installed the interrupt handlers),
// kDeadlineExceeded (timeouts), kDataLoss (digest mismatch, both digests
// given), kPermissionDenied/kCorruption (unsafe or malformed archive, naming
// the entry; an insecure cache directory), kResourceExhausted (size caps),
// kInvalidArgument (malformed handle or digest; a registry name without a
// registry). On any failure nothing is added to the cache and the lock and
// work folder are removed.
//
// Downloads continue across runs: when a download is cut short (connection
// cut, timeout, interrupted: kUnavailable, kDeadlineExceeded, kDataLoss)
// after some of the body arrived, and the server gave
// a validator (strong ETag or Last-Modified) or, for a download with an
// expected digest, the total size, the bytes are kept in the cache's
// .partial/<key>/ (cache.h), never as an entry. The next resolve of the same
// handle asks for the rest with Range (fetcher.h) and restarts from zero when
// the server answers 200, or the validator or size changed; the expected
// digest is still checked over the whole file, and a continued file that
// fails it is deleted (kDataLoss saying so) so the next run starts afresh.
//
// Thread- and process-safe: a Resolver is immutable after construction; any
// number of threads and processes may resolve the same handle at once; one
// downloads, the others wait for it (or, if the lock is stale, take over),
// and all return the same path.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "hub/interop/import.h"
#include "hub/module/module.h"
#include "hub/resolver/fetcher.h"
#include "hub/resolver/unpack.h"

namespace hub::resolver {

// A concrete module version as a registry reports it.
struct RegistryModule {
  std::string name;     // "publisher/name"
  std::string version;  // concrete, e.g. "1.2.0"
  std::string url;      // the archive (http, https or file URL)
  std::string sha256;   // the archive's digest as the registry recorded it
};

// What the resolver needs from a registry (implemented by
// hub::registry::RegistryClient). Implementations must be thread-safe.
class RegistryMapper {
 public:
  virtual ~RegistryMapper() = default;
  // True when `handle` has the shape of a name this registry resolves
  // (syntax only, no I/O). Handles it does not own are treated as paths.
  virtual bool owns(const std::string& handle) const = 0;
  // True when what `handle` names can change (e.g. "@latest").
  virtual bool is_moving(const std::string& handle) const = 0;
  // The registry's identity for cache keys and messages: its URL with any
  // credentials removed.
  virtual std::string id() const = 0;
  // Asks the registry (network). Throws hub::Error.
  virtual RegistryModule resolve(const std::string& handle) const = 0;
};

struct ResolverOptions {
  // Cache root; empty = default_cache_dir() when a handle needs the cache.
  std::filesystem::path cache_dir;
  // Cache only. Default: $HUB_OFFLINE is "1", "true", "yes" or "on".
  std::optional<bool> offline;
  // No progress display (progress is shown only when stderr is a TTY anyway).
  bool quiet = false;
  FetchOptions fetch = FetchOptions::from_env();
  UnpackLimits limits;
  // The fetcher for http(s); null = Fetcher::default_fetcher() (libcurl).
  std::shared_ptr<Fetcher> fetcher;
  // The registry that resolves registry names; null = none (such names are
  // then refused with InvalidArgument saying how to give one).
  std::shared_ptr<const RegistryMapper> registry;
  // Accepts an unpacked (or local) module directory; empty = it must load
  // with load_module_spec().
  ModuleValidator validator;
  // How a foreign model is converted on install. Non-default options are
  // part of the cache key, so each conversion is cached apart.
  interop::ImportOptions import;
  // A lock not refreshed for this long (or whose owner died) is taken over.
  double lock_stale_s = 600;
  double lock_poll_s = 0.05;
};

// A plain file downloaded into the cache by Resolver::fetch_file.
struct FileResolution {
  std::filesystem::path path;  // the cached file, named by the URL's last path segment
  std::string url;             // as given, credentials redacted, no #sha256 fragment
  std::string sha256;          // the file's SHA-256
  bool cached = false;         // no download was needed
  bool offline = false;        // resolved in offline mode
};

// The outcome of resolving one handle.
struct Resolution {
  std::filesystem::path dir;  // the module directory
  std::string handle;         // as given, credentials redacted, no #sha256 fragment
  // What it resolved to: "publisher/name@1.2.0" for a registry name, else == handle.
  std::string resolved;
  std::string registry;  // the registry's id, for a registry name
  std::string sha256;    // the archive's SHA-256 (empty for a local directory)
  bool cached = false;   // no download was needed
  bool offline = false;  // resolved in offline mode
  // The foreign format the module was converted from on install (the
  // module's attached source_format, e.g. "tf_hub_module"); empty for a
  // hub module.
  std::string source_format;
};

class Resolver {
 public:
  explicit Resolver(ResolverOptions options = {});

  // Resolves `handle` (see the file comment). `expected_sha256` (hex, may be
  // empty) is combined with any "#sha256=" fragment and the registry's digest;
  // all that are given must agree.
  Resolution resolve(const std::string& handle, const std::string& expected_sha256 = "") const;
  // resolve() then load_module_spec() of the directory (a local directory is
  // loaded once, not validated first); `resolution`, when given, receives
  // what resolve() returned.
  ModuleSpec load(const std::string& handle, Resolution* resolution = nullptr) const;

  // Downloads the file at an http(s) `url` into the cache as it is (not
  // unpacked, not validated as a module): what a data set's source archives
  // need. The same cache, lock, offline, digest and interrupt rules as
  // resolve() apply (a cut download is continued with Range, in the same run
  // and in the next one); the entry
  // is <cache>/<file_cache_key(url)>/file/<name>, so a file and a module
  // fetched from one URL never share an entry. `expected_sha256` combines with
  // a "#sha256=" fragment as in resolve(); a cached file whose digest differs
  // from the expected one is downloaded again. Errors start with
  // "file '<url>': " and use resolve()'s codes (kInvalidArgument also for a
  // URL that is not http(s) or has no file name).
  FileResolution fetch_file(const std::string& url, const std::string& expected_sha256 = "") const;

  const ResolverOptions& options() const { return options_; }

 private:
  ResolverOptions options_;
};

// True when the handle names an http(s) URL (case-insensitive scheme).
bool is_http_url(const std::string& handle);

// The URL an http(s) handle is downloaded from: the handle, with
// "?tf-hub-format=compressed" appended for a tfhub.dev URL without a query.
std::string download_url(const std::string& url);

// True when `path` is a regular file that starts like a gzip stream or a tar
// archive (ustar magic at offset 257): what unpack_archive() takes.
bool is_archive_file(const std::filesystem::path& path);

}  // namespace hub::resolver
