// resolve(): a module handle -> the local directory holding the module.
//
// Handles (each optionally followed by "#sha256=HEX", the archive's expected
// SHA-256):
//   /path/to/module_dir, ./rel/dir       a local module directory, used in place
//   /path/to/module.tar.gz, file://...    a local archive: unpacked into the cache
//   http://... , https://...              a tar or tar.gz archive: downloaded,
//                                         verified, unpacked into the cache
//   anything else                         offered to the handle hooks (registry
//                                         names); see add_handle_hook()
//
// Archives are cached (see cache.h for the layout and guarantees). A cache hit
// reads only local files — no network connection. With offline mode
// ($HUB_OFFLINE=1 or ResolveOptions::offline) only the cache is consulted.
//
// Errors are hub::Error whose message starts with "module '<handle>': " and
// names the cause: kNotFound (no such path, HTTP 404, offline and not cached),
// kUnavailable (network), kDeadlineExceeded (timeouts), kDataLoss (digest
// mismatch, both digests given), kPermissionDenied/kCorruption (unsafe or
// malformed archive, naming the entry), kResourceExhausted (size caps),
// kInvalidArgument (malformed handle or digest). On any failure nothing is
// added to the cache.
//
// Thread- and process-safe: any number of threads and processes may resolve
// the same handle at once; one downloads, the others wait for it (or, if the
// lock is stale, take over), and all return the same path.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "hub/resolver/fetcher.h"
#include "hub/resolver/unpack.h"

namespace hub::resolver {

struct ResolveOptions {
  // Expected SHA-256 of the archive (hex). Combined with a "#sha256=" in the
  // handle; if both are given they must agree.
  std::string sha256;
  // No progress display (progress is shown only when stderr is a TTY anyway).
  bool quiet = false;
  // Cache only. Default: $HUB_OFFLINE is "1", "true" or "yes".
  std::optional<bool> offline;
  // Cache root; empty = default_cache_dir().
  std::filesystem::path cache_dir;
  FetchOptions fetch = FetchOptions::from_env();
  UnpackLimits limits;
  // The fetcher for http(s); null = Fetcher::default_fetcher() (libcurl).
  Fetcher* fetcher = nullptr;
  // A lock not refreshed for this long (or whose owner died) is taken over.
  double lock_stale_s = 600;
  double lock_poll_s = 0.05;
};

std::filesystem::path resolve(const std::string& handle, const ResolveOptions& options = {});

// ------------------------------------------------------------ extension point
// A handle hook maps a handle that is neither a path nor a URL (e.g. a registry
// name "google/mobilenet_v1/1") to the archive URL to fetch and its expected
// SHA-256 (may be empty). It returns nullopt for handles it does not own and
// throws hub::Error for handles it owns but cannot map. The result is cached
// under the original handle. Hooks are tried in the order they were added.
struct HandleSource {
  std::string url;     // http(s)://, file:// or a local archive path
  std::string sha256;  // expected archive digest, or empty
};
using HandleHook = std::function<std::optional<HandleSource>(const std::string& handle)>;

// Adds (or replaces) the hook called `name`. Thread-safe.
void add_handle_hook(const std::string& name, HandleHook hook);
void remove_handle_hook(const std::string& name);

// True when the handle names an http(s) URL (case-insensitive scheme).
bool is_http_url(const std::string& handle);

}  // namespace hub::resolver
