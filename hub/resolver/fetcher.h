// Fetcher: downloads one URL to one local file.
//
// An interface with one production implementation (libcurl, make_curl_fetcher())
// so tests and embedders can substitute their own, as leveldb's Env is swapped
// for an in-memory one. The resolver only talks to this interface.
//
// Contract of Fetcher::fetch(url, dest, options, progress):
//   - `dest` is a file path private to the caller (the caller chose a unique
//     temporary name); without `resume` it is created or truncated, and on
//     success holds exactly the response body. On failure its content is
//     unspecified (the caller deletes it), except as `resume` says below.
//   - Only http:// and https:// URLs; redirects are followed up to
//     options.max_redirects and only to http/https. Credentials in the URL are
//     never sent to another host after a redirect.
//   - Transient failures (connection refused/reset, truncated body, timeouts,
//     HTTP 408/429/5xx) are retried up to options.max_retries times with
//     exponential backoff (429/503 honour Retry-After). A download cut short is
//     resumed with `Range` guarded by `If-Range` (the ETag, else Last-Modified,
//     of the first response); a server that answers 200 instead restarts it.
//   - `resume` (optional) carries a body across calls, even across processes
//     (Resolver keeps it in its cache's .partial/ folder, see cache.h): `dest`
//     is then opened without truncating, and when it holds K > 0 bytes that
//     *resume describes, the first request asks for `Range: bytes=K-` (with
//     `If-Range: <validator>` when there is one; without a validator only when
//     resume->digest_pinned and the total size is known, and then a 206 whose
//     Content-Range total differs restarts from zero). A 200, a 206 starting
//     elsewhere, or a 416 restarts from zero, as within one call. The fetcher
//     keeps *resume up to date with each response it stores, so after any
//     failure `dest`'s bytes (its size) and *resume describe what is held and
//     can be passed to a later call.
//   - Permanent failures (HTTP 404 and other 4xx, too many redirects, a redirect
//     to another scheme, the size cap) fail on the first attempt.
//   - Errors are hub::Error naming the URL and the cause:
//       kNotFound          HTTP 404/410
//       kPermissionDenied  HTTP 401/403
//       kUnavailable       DNS failure, connection refused/reset, 5xx after retries,
//                          redirect loops, refused redirect, TLS certificate
//                          verification failure, other HTTP errors
//       kDeadlineExceeded  connect or low-speed timeout ("timed out after N s")
//       kResourceExhausted body larger than options.max_bytes
//       kDataLoss          body shorter than Content-Length after all retries
//       kIOError           writing `dest` failed
//       kInvalidArgument   options.ca_bundle cannot be read
//   - The result's sha256 is computed over the whole final file (re-read from
//     disk when a resume happened).
// Thread safety: one Fetcher may be used from several threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace hub::resolver {

struct FetchOptions {
  double connect_timeout_s = 30;  // $HUB_FETCH_CONNECT_TIMEOUT
  // Abort when fewer than low_speed_limit bytes/s arrive for low_speed_time_s.
  double low_speed_time_s = 30;     // $HUB_FETCH_LOW_SPEED_TIME
  uint64_t low_speed_limit = 1024;  // bytes per second
  int max_redirects = 10;
  int max_retries = 4;                     // $HUB_FETCH_RETRIES (attempts = 1 + retries)
  double backoff_initial_s = 0.5;          // doubled after each retry ...
  double backoff_max_s = 30;               // ... up to this; also caps Retry-After
  uint64_t max_bytes = uint64_t{4} << 30;  // $HUB_FETCH_MAX_BYTES (4 GiB)
  std::string user_agent;                  // empty = "hub/<HUB_VERSION>"
  // PEM file of the CAs to trust for https, instead of the system bundle
  // (/etc/ssl/certs/ca-certificates.crt); empty = the system bundle.
  // $SSL_CERT_FILE, the variable OpenSSL-based tools use for the same purpose
  // (libcurl itself ignores it). A file that cannot be read fails the fetch
  // with InvalidArgument naming it.
  std::string ca_bundle;

  // Defaults overridden by the environment variables named above.
  static FetchOptions from_env();
};

// What identifies a partly downloaded body (see the `resume` rule above).
struct ResumeState {
  // The strong ETag, else the Last-Modified date, of the response the bytes
  // came from; empty when the server gave neither.
  std::string validator;
  // The whole body's size as the server gave it (a 200's Content-Length, the
  // total of a 206's Content-Range); 0 when unknown.
  uint64_t total = 0;
  // Set by the caller when it verifies a pinned SHA-256 over the whole file
  // afterwards: then a body without a validator may be continued when the
  // server reports the same total size (a changed file of the same size is
  // caught by that digest). Without a pin such a body restarts from zero.
  bool digest_pinned = false;
};

struct FetchResult {
  uint64_t bytes = 0;
  std::string sha256;         // lower-case hex of the whole body
  std::string effective_url;  // after redirects
  int attempts = 0;           // HTTP requests made for the body (1 = no retry)
  bool resumed = false;       // a Range request continued a partial body
};

// Called with (bytes received so far, total expected or 0 if unknown).
// Returning false aborts the download (Code::kUnavailable "aborted").
using ProgressFn = std::function<bool(uint64_t now, uint64_t total)>;

class Fetcher {
 public:
  virtual ~Fetcher() = default;
  virtual FetchResult fetch(const std::string& url, const std::filesystem::path& dest, const FetchOptions& options,
                            const ProgressFn& progress, ResumeState* resume = nullptr) = 0;

  // The process-wide libcurl fetcher.
  static Fetcher& default_fetcher();
};

std::unique_ptr<Fetcher> make_curl_fetcher();

}  // namespace hub::resolver
