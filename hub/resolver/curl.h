// The one libcurl wrapper: how every HTTP request of hub is configured, how
// its failures map to hub::Error codes, and how transient failures are
// retried. Used by the fetcher (archive downloads, with resume) and by the
// registry client (JSON requests and uploads).
//
// Every request:
//   - http and https only, also for redirects (at most FetchOptions::max_redirects);
//     credentials are not sent to another host after a redirect;
//   - TLS peers and host names verified, against FetchOptions::ca_bundle
//     ($SSL_CERT_FILE) when set, else the system bundle;
//   - connect timeout and low-speed abort from FetchOptions; no signals;
//   - User-Agent "hub/<version>" unless FetchOptions::user_agent says otherwise.
// Messages name the method and URL with credentials redacted.
//
// Thread safety: the functions may be called from several threads at once
// (libcurl is initialised once, thread-safely).
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hub/core/error.h"
#include "hub/resolver/fetcher.h"

namespace hub::resolver {

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
using CurlPtr = std::unique_ptr<CURL, CurlDeleter>;

// A fresh easy handle (libcurl initialised once per process). Throws Internal
// when libcurl cannot allocate one.
CurlPtr new_curl();

// Sets the common options above on `c` (after curl_easy_reset) for `url`.
// `errbuf` (CURL_ERROR_SIZE bytes) receives libcurl's detail. Throws
// InvalidArgument naming $SSL_CERT_FILE when options.ca_bundle cannot be read.
void configure_curl(CURL* c, const std::string& url, const FetchOptions& options, char* errbuf);

// A request that did not succeed: the error to report and whether trying
// again may help.
struct CurlFailure {
  Code code = Code::kUnavailable;
  std::string message;
  bool transient = false;
  double retry_after_s = -1;  // from Retry-After, when the server sent one
};

// The failure for a transfer that ended with `rc` (not CURLE_OK); `what` is
// "GET <url>" (redacted by the caller), `bytes_so_far` what had arrived of
// `expected_total` (-1 when unknown).
CurlFailure curl_failure(CURL* c, CURLcode rc, const std::string& what, const FetchOptions& options,
                         uint64_t bytes_so_far, int64_t expected_total, const char* errbuf);
// The failure for a completed exchange answered with HTTP `status` (>= 300).
CurlFailure http_status_failure(long status, const std::string& what, const std::string& retry_after);

// Seconds to wait before attempt `attempt` + 1 (exponential backoff with
// jitter, or the server's Retry-After, capped by options.backoff_max_s).
double retry_delay(const FetchOptions& options, int attempt, double retry_after_s);

// Sleeps `seconds` in short steps; throws kUnavailable "interrupted" as soon
// as hub::interrupted() (hub/core/interrupt.h).
void sleep_unless_interrupted(double seconds);

// Seconds in a Retry-After header value (delta-seconds or an HTTP date), or -1.
double parse_retry_after(const std::string& value);

// A small request whose answer is kept in memory (JSON APIs).
struct HttpCall {
  std::string method = "GET";  // GET, PUT or POST
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  // Body to send from a file (PUT/POST), with its size; empty = none.
  std::filesystem::path upload;
  uint64_t max_response_bytes = uint64_t{64} << 20;
  // Upload progress on stderr ("upload [####    ]  40% ...") when true.
  bool progress = false;
};
struct HttpReply {
  long status = 0;
  std::string body;
  std::string effective_url;
};

// Performs `call`: any HTTP status is a reply (the caller decides what it
// means). Transport failures (DNS, refused or reset connections, timeouts)
// and 408/429/5xx answers are retried up to options.max_retries times with
// backoff, honouring Retry-After, for GET; an upload is retried only when the
// connection could not be made (nothing was sent). After the retries a
// transport failure throws its CurlFailure as hub::Error, and a 408/429/5xx
// is returned as the reply. A body over max_response_bytes is
// ResourceExhausted.
HttpReply http_call(const HttpCall& call, const FetchOptions& options);

}  // namespace hub::resolver
