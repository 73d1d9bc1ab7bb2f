#include "hub/resolver/curl.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "hub/core/digest.h"
#include "hub/core/fd.h"
#include "hub/core/interrupt.h"
#include "hub/core/logging.h"
#include "hub/core/text.h"

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
                std::string("$") + name + "='" + printable(v, 80) + "' is not a non-negative number");
  }
  return d;
}

std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};

// Sink of an in-memory reply.
struct Sink {
  std::string* body;
  uint64_t max;
  bool overflow = false;
};

size_t write_string(char* p, size_t size, size_t n, void* user) {
  Sink* s = static_cast<Sink*>(user);
  size_t bytes = size * n;
  if (s->body->size() + bytes > s->max) {
    s->overflow = true;
    return 0;
  }
  s->body->append(p, bytes);
  return bytes;
}

size_t read_fd(char* p, size_t size, size_t n, void* user) {
  for (;;) {
    ssize_t got = ::read(*static_cast<int*>(user), p, size * n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) return CURL_READFUNC_ABORT;
  }
}

struct UploadProgress {
  bool enabled;
  int last_percent = -1;
};

int upload_progress(void* user, curl_off_t, curl_off_t, curl_off_t ultotal, curl_off_t ulnow) {
  if (interrupted()) return 1;
  auto* p = static_cast<UploadProgress*>(user);
  if (!p->enabled || ultotal <= 0) return 0;
  int percent = static_cast<int>(100 * ulnow / ultotal);
  if (percent == p->last_percent) return 0;
  p->last_percent = percent;
  std::fprintf(stderr, "\rupload [%-25s] %3d%% %lld/%lld bytes", std::string(percent / 4, '#').c_str(), percent,
               static_cast<long long>(ulnow), static_cast<long long>(ultotal));
  if (percent == 100) std::fprintf(stderr, "\n");
  return 0;
}

struct Headers {
  std::string retry_after;
};

size_t header_cb(char* data, size_t size, size_t n, void* user) {
  auto* h = static_cast<Headers*>(user);
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) h->retry_after.clear();
  if (line.size() > 12 && to_lower(line.substr(0, 12)) == "retry-after:") {
    std::string v = line.substr(12);
    while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.pop_back();
    while (!v.empty() && v.front() == ' ') v.erase(v.begin());
    h->retry_after = v;
  }
  return size * n;
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

CurlPtr new_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  CurlPtr c(curl_easy_init());
  if (!c) throw_error(Code::kInternal, "curl_easy_init failed");
  return c;
}

void configure_curl(CURL* c, const std::string& url, const FetchOptions& options, char* errbuf) {
  if (!options.ca_bundle.empty()) {
    // libcurl would only say "error setting certificate file" on the first TLS handshake.
    Fd ca(::open(options.ca_bundle.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ca) {
      throw_error(Code::kInvalidArgument, redact_credentials(url) + ": cannot read the CA bundle '" +
                                              options.ca_bundle + "' ($SSL_CERT_FILE): " + std::strerror(errno));
    }
  }
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
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::ceil(options.connect_timeout_s * 1000)));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options.low_speed_limit));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, std::max(1L, static_cast<long>(std::lround(options.low_speed_time_s))));
  const std::string agent = options.user_agent.empty() ? std::string("hub/") + HUB_VERSION : options.user_agent;
  curl_easy_setopt(c, CURLOPT_USERAGENT, agent.c_str());  // libcurl copies strings
}

double parse_retry_after(const std::string& v) {
  if (v.empty()) return -1;
  char* end = nullptr;
  long secs = std::strtol(v.c_str(), &end, 10);
  if (end != v.c_str() && *end == '\0') return std::max(0L, secs);
  time_t when = curl_getdate(v.c_str(), nullptr);
  if (when < 0) return -1;
  return std::max<double>(0, static_cast<double>(when - std::time(nullptr)));
}

CurlFailure http_status_failure(long status, const std::string& what, const std::string& retry_after) {
  const std::string head = what + ": HTTP " + std::to_string(status);
  if (status == 404 || status == 410) return {Code::kNotFound, head + " (not found)", false};
  if (status == 401 || status == 403) return {Code::kPermissionDenied, head + " (access denied)", false};
  if (status == 408 || status == 429 || status >= 500)
    return {Code::kUnavailable, head + " (server busy or failing)", true, parse_retry_after(retry_after)};
  if (status >= 300 && status < 400) return {Code::kUnavailable, head + " (redirect without a usable Location)", false};
  return {Code::kUnavailable, head + " (unexpected status)", false};
}

CurlFailure curl_failure(CURL* c, CURLcode rc, const std::string& what, const FetchOptions& options,
                         uint64_t bytes_so_far, int64_t expected_total, const char* errbuf) {
  const std::string detail = errbuf && errbuf[0] ? std::string(" (") + errbuf + ")" : "";
  switch (rc) {
    case CURLE_FILESIZE_EXCEEDED:
      return {
          Code::kResourceExhausted,
          what + ": Content-Length exceeds the download size limit of " + std::to_string(options.max_bytes) + " bytes",
          false};
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return {Code::kUnavailable, what + ": DNS lookup failed" + detail, true};
    case CURLE_COULDNT_CONNECT:
      return {Code::kUnavailable, what + ": cannot connect" + detail, true};
    case CURLE_OPERATION_TIMEDOUT: {
      curl_off_t connect_us = 0;
      curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &connect_us);
      if (connect_us == 0)
        return {Code::kDeadlineExceeded,
                what + ": timed out after " + fmt_seconds(options.connect_timeout_s) + " s connecting to the server" +
                    detail,
                true};
      return {Code::kDeadlineExceeded,
              what + ": timed out after " + fmt_seconds(options.low_speed_time_s) + " s with less than " +
                  std::to_string(options.low_speed_limit) + " bytes/s (stalled at " + std::to_string(bytes_so_far) +
                  " bytes)",
              true};
    }
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return {rc == CURLE_PARTIAL_FILE ? Code::kDataLoss : Code::kUnavailable,
              what + ": connection dropped after " + std::to_string(bytes_so_far) + " bytes" +
                  (expected_total >= 0 ? " of " + std::to_string(expected_total) : std::string()) + detail,
              true};
    case CURLE_TOO_MANY_REDIRECTS:
      return {Code::kUnavailable, what + ": more than " + std::to_string(options.max_redirects) + " redirects" + detail,
              false};
    case CURLE_UNSUPPORTED_PROTOCOL: {
      long redirects = 0;
      curl_easy_getinfo(c, CURLINFO_REDIRECT_COUNT, &redirects);
      return {Code::kPermissionDenied,
              (redirects > 0 ? what + ": redirect to a scheme other than http/https refused"
                             : what + ": only http and https URLs are fetched") +
                  detail,
              false};
    }
    case CURLE_PEER_FAILED_VERIFICATION:
      return {Code::kUnavailable,
              what + ": TLS certificate verification failed" + detail +
                  "; to trust a private CA, point $SSL_CERT_FILE at its PEM bundle",
              false};
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CACERT_BADFILE:
      return {Code::kUnavailable, what + ": TLS handshake failed" + detail, false};
    case CURLE_ABORTED_BY_CALLBACK:
      return {Code::kUnavailable, what + ": interrupted", false};
    default:
      return {Code::kUnavailable, what + ": " + curl_easy_strerror(rc) + detail, false};
  }
}

double retry_delay(const FetchOptions& options, int attempt, double retry_after_s) {
  static thread_local std::mt19937 rng(std::random_device{}());
  double delay = options.backoff_initial_s * std::pow(2.0, attempt - 1);
  delay *= std::uniform_real_distribution<double>(0.75, 1.0)(rng);
  if (retry_after_s >= 0) delay = retry_after_s;
  return std::min(delay, options.backoff_max_s);
}

void sleep_unless_interrupted(double seconds) {
  using clock = std::chrono::steady_clock;
  const clock::time_point end =
      clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
  while (!interrupted()) {
    const clock::time_point now = clock::now();
    if (now >= end) return;
    std::this_thread::sleep_for(std::min<clock::duration>(end - now, std::chrono::milliseconds(100)));
  }
  throw_error(Code::kUnavailable, "interrupted");
}

HttpReply http_call(const HttpCall& call, const FetchOptions& options) {
  const std::string what = call.method + " " + redact_credentials(call.url);
  CurlPtr curl = new_curl();
  CURL* c = curl.get();
  char errbuf[CURL_ERROR_SIZE];
  const bool upload = !call.upload.empty();
  for (int attempt = 1;; ++attempt) {
    curl_easy_reset(c);
    configure_curl(c, call.url, options, errbuf);
    HttpReply reply;
    Sink sink{&reply.body, call.max_response_bytes};
    Headers headers;
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &write_string);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &header_cb);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &headers);
    std::unique_ptr<curl_slist, SlistDeleter> list;
    for (const std::string& h : call.headers) list.reset(curl_slist_append(list.release(), h.c_str()));
    if (list) curl_easy_setopt(c, CURLOPT_HTTPHEADER, list.get());
    Fd body;
    int body_fd = -1;
    UploadProgress progress{call.progress};
    if (upload) {
      body = open_fd(call.upload, O_RDONLY);
      body_fd = body.get();
      curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
      if (call.method != "PUT") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, call.method.c_str());
      curl_easy_setopt(c, CURLOPT_READFUNCTION, &read_fd);
      curl_easy_setopt(c, CURLOPT_READDATA, &body_fd);
      curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(std::filesystem::file_size(call.upload)));
    } else if (call.method != "GET") {
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, call.method.c_str());
    }
    // Also polls hub::interrupted() about once a second, even while stalled.
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &upload_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &progress);
    CURLcode rc = curl_easy_perform(c);
    if (sink.overflow)
      throw_error(Code::kResourceExhausted,
                  what + ": the response is larger than " + std::to_string(call.max_response_bytes) + " bytes");
    std::optional<CurlFailure> fail;
    if (rc != CURLE_OK) {
      fail = curl_failure(c, rc, what, options, reply.body.size(), -1, errbuf);
      if (upload && rc != CURLE_COULDNT_CONNECT && rc != CURLE_COULDNT_RESOLVE_HOST) fail->transient = false;
    } else {
      curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
      char* eff = nullptr;
      curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff);
      reply.effective_url = eff ? eff : call.url;
      CurlFailure busy = http_status_failure(reply.status, what, headers.retry_after);
      if (upload || reply.status < 400 || !busy.transient || attempt > options.max_retries) return reply;
      fail = busy;
    }
    if (!fail->transient || attempt > options.max_retries) {
      std::string msg = fail->message;
      if (attempt > 1) msg += " (after " + std::to_string(attempt) + " attempts)";
      throw_error(fail->code, msg);
    }
    const double delay = retry_delay(options, attempt, fail->retry_after_s);
    HUB_LOG(Debug) << fail->message << "; retrying in " << delay << " s";
    sleep_unless_interrupted(delay);
  }
}

}  // namespace hub::resolver
