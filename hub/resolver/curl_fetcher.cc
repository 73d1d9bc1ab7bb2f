// The libcurl Fetcher (see fetcher.h for the contract).
#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "hub/core/error.h"
#include "hub/core/fd.h"
#include "hub/core/logging.h"
#include "hub/core/digest.h"
#include "hub/resolver/fetcher.h"

#ifndef HUB_VERSION
#define HUB_VERSION "unknown"
#endif

namespace hub::resolver {
namespace {

double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  double d = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(d >= 0)) {
    throw_error(Code::kInvalidArgument,
                std::string("$") + name + "='" + v + "' is not a non-negative number");
  }
  return d;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t'))
    s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

std::string lower(std::string s) { return to_lower(std::move(s)); }

std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// State of one HTTP attempt, shared with libcurl's callbacks.
struct Attempt {
  int fd = -1;
  uint64_t start = 0;     // file offset requested with Range (0 = whole body)
  uint64_t written = 0;   // bytes of the file that are valid (prefix)
  Sha256* hash = nullptr;  // covers bytes [0, written)
  uint64_t max_bytes = 0;
  const ProgressFn* progress = nullptr;

  // Headers of the latest response (reset on each status line, so after
  // redirects they describe the final response).
  long status = 0;
  int64_t content_length = -1;
  std::string etag, last_modified, retry_after, content_range;

  bool body_started = false;
  bool discard = false;         // error response: body not stored
  bool size_exceeded = false;
  bool bad_range = false;       // 206 for a range we did not ask for
  bool restarted = false;       // 200 to a Range request: file truncated
  std::string write_error;  // why writing the file failed
  bool aborted = false;
};

size_t header_cb(char* data, size_t size, size_t n, void* user) {
  auto* at = static_cast<Attempt*>(user);
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    at->status = 0;
    size_t sp = line.find(' ');
    if (sp != std::string::npos) at->status = std::strtol(line.c_str() + sp + 1, nullptr, 10);
    at->content_length = -1;
    at->etag.clear();
    at->last_modified.clear();
    at->retry_after.clear();
    at->content_range.clear();
    return size * n;
  }
  size_t colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string key = lower(trim(line.substr(0, colon)));
  std::string value = trim(line.substr(colon + 1));
  if (key == "content-length") {
    at->content_length = std::strtoll(value.c_str(), nullptr, 10);
  } else if (key == "etag") {
    at->etag = value;
  } else if (key == "last-modified") {
    at->last_modified = value;
  } else if (key == "retry-after") {
    at->retry_after = value;
  } else if (key == "content-range") {
    at->content_range = value;
  }
  return size * n;
}

bool truncate_file(Attempt* at) {
  if (::ftruncate(at->fd, 0) != 0) {
    at->write_error = std::string("truncate: ") + std::strerror(errno);
    return false;
  }
  at->written = 0;
  at->hash->reset();
  return true;
}

size_t write_cb(char* data, size_t size, size_t n, void* user) {
  auto* at = static_cast<Attempt*>(user);
  size_t len = size * n;
  if (!at->body_started) {
    at->body_started = true;
    if (at->status == 206 && at->start == 0) {
      at->bad_range = true;  // a partial answer to a request for everything
      return 0;
    }
    if (at->status == 206) {
      // "bytes START-END/TOTAL": must continue exactly where our file ends.
      unsigned long long first = 0;
      if (std::sscanf(at->content_range.c_str(), "bytes %llu-", &first) != 1 ||
          first != at->start) {
        at->bad_range = true;
        return 0;
      }
    } else if (at->status == 200) {
      if (at->written > 0) {
        // The server ignored Range (or If-Range did not match): start over.
        at->restarted = true;
        if (!truncate_file(at)) return 0;
      }
    } else {
      at->discard = true;
    }
  }
  if (at->discard) return len;
  if (at->written + len > at->max_bytes) {
    at->size_exceeded = true;
    return 0;
  }
  try {
    pwrite_all(at->fd, data, len, static_cast<int64_t>(at->written), "download file");
  } catch (const Error& e) {
    at->write_error = e.message();
    return 0;
  }
  at->hash->update(data, len);
  at->written += len;
  return len;
}

int xferinfo_cb(void* user, curl_off_t dltotal, curl_off_t, curl_off_t, curl_off_t) {
  auto* at = static_cast<Attempt*>(user);
  if (!at->progress || !*at->progress || at->discard) return 0;
  uint64_t total = 0;
  if (dltotal > 0 && (at->status == 200 || at->status == 206)) {
    total = (at->status == 206 ? at->start : 0) + static_cast<uint64_t>(dltotal);
  }
  if (!(*at->progress)(at->written, total)) {
    at->aborted = true;
    return 1;
  }
  return 0;
}

// Seconds to wait before the next attempt according to Retry-After, or -1.
double parse_retry_after(const std::string& v) {
  if (v.empty()) return -1;
  char* end = nullptr;
  long secs = std::strtol(v.c_str(), &end, 10);
  if (end != v.c_str() && *end == '\0') return std::max(0L, secs);
  time_t when = curl_getdate(v.c_str(), nullptr);
  if (when < 0) return -1;
  return std::max<double>(0, static_cast<double>(when - std::time(nullptr)));
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};

class CurlFetcher final : public Fetcher {
 public:
  CurlFetcher() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }

  FetchResult fetch(const std::string& url, const std::filesystem::path& dest,
                    const FetchOptions& options, const ProgressFn& progress) override;
};

// Outcome of one attempt that did not succeed.
struct Failure {
  Code code;
  std::string message;
  bool transient;
  double retry_after = -1;
};

FetchResult CurlFetcher::fetch(const std::string& url, const std::filesystem::path& dest,
                               const FetchOptions& options, const ProgressFn& progress) {
  const std::string user_agent =
      options.user_agent.empty() ? std::string("hub/") + HUB_VERSION : options.user_agent;
  if (!options.ca_bundle.empty()) {
    // libcurl would only say "error setting certificate file" on the first TLS handshake.
    Fd ca(::open(options.ca_bundle.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ca) {
      throw_error(Code::kInvalidArgument, "GET " + url + ": cannot read the CA bundle '" + options.ca_bundle +
                                              "' ($SSL_CERT_FILE): " + std::strerror(errno));
    }
  }
  Fd fd = open_fd(dest, O_RDWR | O_CREAT | O_TRUNC, 0644);

  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) throw_error(Code::kInternal, "curl_easy_init failed");
  CURL* c = curl.get();
  Sha256 hash;
  Attempt at;
  at.fd = fd.get();
  at.hash = &hash;
  at.max_bytes = options.max_bytes;
  at.progress = &progress;
  char errbuf[CURL_ERROR_SIZE];

  // Validator of the bytes we hold, for If-Range.
  std::string validator;
  bool resumed_any = false;
  std::mt19937 rng(std::random_device{}());
  FetchResult result;

  for (int attempt = 1;; ++attempt) {
    curl_easy_reset(c);
    errbuf[0] = '\0';
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, static_cast<long>(options.max_redirects));
    curl_easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (!options.ca_bundle.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options.ca_bundle.c_str());
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(std::ceil(options.connect_timeout_s * 1000)));
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options.low_speed_limit));
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(std::lround(options.low_speed_time_s))));
    curl_easy_setopt(c, CURLOPT_USERAGENT, user_agent.c_str());
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options.max_bytes));
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &at);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &at);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, xferinfo_cb);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &at);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);

    std::unique_ptr<curl_slist, SlistDeleter> headers;
    std::string range;
    at.start = 0;
    if (at.written > 0 && !validator.empty()) {
      at.start = at.written;
      range = std::to_string(at.written) + "-";
      curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
      std::string if_range = "If-Range: " + validator;
      headers.reset(curl_slist_append(nullptr, if_range.c_str()));
      curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
    } else if (at.written > 0) {
      // Nothing to guard a resume with: start over.
      if (!truncate_file(&at)) {
        throw_error(Code::kIOError, dest.string() + ": " + at.write_error);
      }
    }
    at.body_started = at.discard = at.size_exceeded = at.bad_range = at.restarted = false;
    at.aborted = false;
    at.write_error.clear();
    at.status = 0;

    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    char* eff = nullptr;
    curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff);
    std::string effective = eff ? eff : url;
    if (at.start > 0 && status == 206 && at.body_started && !at.bad_range) resumed_any = true;
    // Remember what identifies the bytes we now hold.
    if (at.body_started && !at.discard && (status == 200 || status == 206)) {
      if (!at.etag.empty() && at.etag.rfind("W/", 0) != 0) {
        validator = at.etag;
      } else if (!at.last_modified.empty()) {
        validator = at.last_modified;
      } else {
        validator.clear();
      }
    }

    std::optional<Failure> fail;
    const std::string where = "GET " + effective;
    const std::string detail = errbuf[0] ? std::string(" (") + errbuf + ")" : "";
    if (rc == CURLE_OK) {
      if (status == 200 || status == 206) {
        result.bytes = at.written;
        result.effective_url = effective;
        result.attempts = attempt;
        result.resumed = resumed_any;
        if (resumed_any) {
          // Never trust a stitched body: hash the whole file as it is on disk.
          result.sha256 = sha256_file(dest);
        } else {
          result.sha256 = hash.hex_digest();
        }
        return result;
      }
      std::string what = where + ": HTTP " + std::to_string(status);
      if (status == 404 || status == 410) {
        fail = Failure{Code::kNotFound, what + " (not found)", false};
      } else if (status == 401 || status == 403) {
        fail = Failure{Code::kPermissionDenied, what + " (access denied)", false};
      } else if (status == 408 || status == 429 || status >= 500) {
        fail = Failure{Code::kUnavailable, what + " (server busy or failing)", true,
                       parse_retry_after(at.retry_after)};
      } else if (status == 416 && at.start > 0) {
        validator.clear();  // forces a fresh download next time
        fail = Failure{Code::kUnavailable, what + " (range not satisfiable)", true};
      } else if (status >= 300 && status < 400) {
        fail = Failure{Code::kUnavailable, what + " (redirect without a usable Location)", false};
      } else {
        fail = Failure{Code::kUnavailable, what + " (unexpected status)", false};
      }
    } else {
      switch (rc) {
        case CURLE_WRITE_ERROR:
          if (at.size_exceeded) {
            fail = Failure{Code::kResourceExhausted,
                           where + ": body exceeds the download size limit of " +
                               std::to_string(options.max_bytes) + " bytes",
                           false};
          } else if (at.bad_range) {
            validator.clear();
            fail = Failure{Code::kUnavailable,
                           where + ": server answered the range request with Content-Range '" +
                               at.content_range + "'",
                           true};
          } else {
            fail = Failure{Code::kIOError,
                           "writing " + dest.string() + ": " + at.write_error,
                           false};
          }
          break;
        case CURLE_FILESIZE_EXCEEDED:
          fail = Failure{Code::kResourceExhausted,
                         where + ": Content-Length exceeds the download size limit of " +
                             std::to_string(options.max_bytes) + " bytes",
                         false};
          break;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
          fail = Failure{Code::kUnavailable, where + ": DNS lookup failed" + detail, true};
          break;
        case CURLE_COULDNT_CONNECT:
          fail = Failure{Code::kUnavailable, where + ": cannot connect" + detail, true};
          break;
        case CURLE_OPERATION_TIMEDOUT: {
          curl_off_t connect_us = 0;
          curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &connect_us);
          if (connect_us == 0) {
            fail = Failure{Code::kDeadlineExceeded,
                           where + ": timed out after " + fmt_seconds(options.connect_timeout_s) +
                               " s connecting to the server" + detail,
                           true};
          } else {
            fail = Failure{Code::kDeadlineExceeded,
                           where + ": timed out after " + fmt_seconds(options.low_speed_time_s) +
                               " s with less than " + std::to_string(options.low_speed_limit) +
                               " bytes/s (stalled at " + std::to_string(at.written) + " bytes)",
                           true};
          }
          break;
        }
        case CURLE_PARTIAL_FILE:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM: {
          std::string got = std::to_string(at.written) + " bytes";
          if (at.content_length >= 0) {
            got += " of " + std::to_string(at.start + static_cast<uint64_t>(at.content_length));
          }
          fail = Failure{rc == CURLE_PARTIAL_FILE ? Code::kDataLoss : Code::kUnavailable,
                         where + ": connection dropped after " + got + detail, true};
          break;
        }
        case CURLE_TOO_MANY_REDIRECTS:
          fail = Failure{Code::kUnavailable,
                         where + ": more than " + std::to_string(options.max_redirects) +
                             " redirects" + detail,
                         false};
          break;
        case CURLE_UNSUPPORTED_PROTOCOL: {
          long redirects = 0;
          curl_easy_getinfo(c, CURLINFO_REDIRECT_COUNT, &redirects);
          fail = Failure{Code::kPermissionDenied,
                         (redirects > 0 || effective != url
                              ? where + ": redirect to a scheme other than http/https refused"
                              : "GET " + url + ": only http and https URLs are fetched") +
                             detail,
                         false};
          break;
        }
        case CURLE_PEER_FAILED_VERIFICATION:
          fail = Failure{Code::kUnavailable,
                         where + ": TLS certificate verification failed" + detail +
                             "; to trust a private CA, point $SSL_CERT_FILE at its PEM bundle",
                         false};
          break;
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_SSL_CACERT_BADFILE:
          fail = Failure{Code::kUnavailable, where + ": TLS handshake failed" + detail, false};
          break;
        case CURLE_ABORTED_BY_CALLBACK:
          fail = Failure{Code::kUnavailable, where + ": download aborted", false};
          break;
        default:
          fail = Failure{Code::kUnavailable,
                         where + ": " + curl_easy_strerror(rc) + detail, false};
          break;
      }
    }
    if (!fail->transient || attempt > options.max_retries) {
      std::string msg = fail->message;
      if (attempt > 1) msg += " (after " + std::to_string(attempt) + " attempts)";
      throw_error(fail->code, msg);
    }
    double delay = options.backoff_initial_s * std::pow(2.0, attempt - 1);
    delay *= std::uniform_real_distribution<double>(0.75, 1.0)(rng);
    if (fail->retry_after >= 0) delay = fail->retry_after;
    delay = std::min(delay, options.backoff_max_s);
    HUB_LOG(Debug) << fail->message << "; retrying in " << delay << " s";
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
  }
}

}  // namespace

FetchOptions FetchOptions::from_env() {
  FetchOptions o;
  o.connect_timeout_s = env_double("HUB_FETCH_CONNECT_TIMEOUT", o.connect_timeout_s);
  o.low_speed_time_s = env_double("HUB_FETCH_LOW_SPEED_TIME", o.low_speed_time_s);
  o.max_retries = static_cast<int>(env_double("HUB_FETCH_RETRIES", o.max_retries));
  o.max_bytes = static_cast<uint64_t>(env_double("HUB_FETCH_MAX_BYTES", static_cast<double>(o.max_bytes)));
  if (const char* ca = std::getenv("SSL_CERT_FILE")) o.ca_bundle = ca;
  return o;
}

Fetcher& Fetcher::default_fetcher() {
  static CurlFetcher fetcher;
  return fetcher;
}

std::unique_ptr<Fetcher> make_curl_fetcher() { return std::make_unique<CurlFetcher>(); }

}  // namespace hub::resolver
