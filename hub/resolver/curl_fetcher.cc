// The libcurl Fetcher (see fetcher.h for the contract); libcurl's
// configuration, failure mapping and backoff are hub/resolver/curl.h's.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/core/fd.h"
#include "hub/core/logging.h"
#include "hub/core/text.h"
#include "hub/resolver/curl.h"
#include "hub/resolver/fetcher.h"

namespace hub::resolver {
namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// State of one HTTP attempt, shared with libcurl's callbacks.
struct Attempt {
  int fd = -1;
  uint64_t start = 0;            // file offset requested with Range (0 = whole body)
  uint64_t written = 0;          // bytes of the file that are valid (prefix)
  Sha256* hash = nullptr;        // covers bytes [0, written) unless unhashed_prefix
  bool unhashed_prefix = false;  // the file began with bytes from an earlier call
  uint64_t expected_total = 0;   // a 206 must report this total (0 = any)
  uint64_t max_bytes = 0;
  const ProgressFn* progress = nullptr;

  // Headers of the latest response (reset on each status line, so after
  // redirects they describe the final response).
  long status = 0;
  int64_t content_length = -1;
  std::string etag, last_modified, retry_after, content_range;

  bool body_started = false;
  bool discard = false;  // error response: body not stored
  bool size_exceeded = false;
  bool bad_range = false;   // 206 for a range we did not ask for
  bool restarted = false;   // 200 to a Range request: file truncated
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
  std::string key = to_lower(trim(line.substr(0, colon)));
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
  at->unhashed_prefix = false;
  return true;
}

// Content-Range "bytes FIRST-LAST/TOTAL" (TOTAL may be "*": *total = 0).
bool parse_content_range(const std::string& value, uint64_t* first, uint64_t* total) {
  unsigned long long f = 0, l = 0, t = 0;
  *total = 0;
  if (std::sscanf(value.c_str(), "bytes %llu-%llu/%llu", &f, &l, &t) == 3) {
    *first = f;
    *total = t;
    return true;
  }
  if (std::sscanf(value.c_str(), "bytes %llu-%llu/*", &f, &l) == 2) {
    *first = f;
    return true;
  }
  return false;
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
      // "bytes START-END/TOTAL": must continue exactly where our file ends,
      // of a body of the size we started (when we know it).
      uint64_t first = 0, total = 0;
      if (!parse_content_range(at->content_range, &first, &total) || first != at->start ||
          (at->expected_total > 0 && total != at->expected_total)) {
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

struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};

class CurlFetcher final : public Fetcher {
 public:
  FetchResult fetch(const std::string& url, const std::filesystem::path& dest, const FetchOptions& options,
                    const ProgressFn& progress, ResumeState* resume) override;
};

FetchResult CurlFetcher::fetch(const std::string& url, const std::filesystem::path& dest, const FetchOptions& options,
                               const ProgressFn& progress, ResumeState* resume) {
  Fd fd = open_fd(dest, O_RDWR | O_CREAT | (resume ? 0 : O_TRUNC), 0644);
  // What identifies the bytes we hold, for Range and If-Range: the caller's
  // (a body kept from an earlier call) or our own.
  ResumeState own;
  ResumeState& held = resume ? *resume : own;

  CurlPtr curl = new_curl();
  CURL* c = curl.get();
  Sha256 hash;
  Attempt at;
  at.fd = fd.get();
  at.hash = &hash;
  at.max_bytes = options.max_bytes;
  at.progress = &progress;
  if (resume) {
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) throw_error(Code::kIOError, dest.string() + ": " + std::strerror(errno));
    at.written = static_cast<uint64_t>(st.st_size);
    at.unhashed_prefix = at.written > 0;
  }
  char errbuf[CURL_ERROR_SIZE];

  bool resumed_any = false;
  FetchResult result;

  for (int attempt = 1;; ++attempt) {
    curl_easy_reset(c);
    configure_curl(c, url, options, errbuf);
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
    at.expected_total = held.total;
    if (at.written > 0 && (!held.validator.empty() || (held.digest_pinned && held.total > 0))) {
      at.start = at.written;
      range = std::to_string(at.written) + "-";
      curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
      if (!held.validator.empty()) {
        std::string if_range = "If-Range: " + held.validator;
        headers.reset(curl_slist_append(nullptr, if_range.c_str()));
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
      }
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
    if (at.body_started && !at.discard && !at.bad_range && (status == 200 || status == 206)) {
      if (!at.etag.empty() && at.etag.rfind("W/", 0) != 0) {
        held.validator = at.etag;
      } else if (!at.last_modified.empty()) {
        held.validator = at.last_modified;
      } else {
        held.validator.clear();
      }
      uint64_t first = 0, total = 0;
      if (status == 206 && parse_content_range(at.content_range, &first, &total)) {
        held.total = total;
      } else if (status == 200) {
        held.total = at.content_length >= 0 ? static_cast<uint64_t>(at.content_length) : 0;
      }
    }

    std::optional<CurlFailure> fail;
    const std::string where = "GET " + redact_credentials(effective);
    if (rc == CURLE_OK) {
      if (status == 200 || status == 206) {
        result.bytes = at.written;
        result.effective_url = effective;
        result.attempts = attempt;
        result.resumed = resumed_any;
        if (resumed_any || at.unhashed_prefix) {
          // Never trust a stitched body: hash the whole file as it is on disk.
          result.sha256 = sha256_file(dest);
        } else {
          result.sha256 = hash.hex_digest();
        }
        return result;
      }
      if (status == 416 && at.start > 0) {
        held = ResumeState{"", 0, held.digest_pinned};  // forces a fresh download next time
        fail = CurlFailure{Code::kUnavailable, where + ": HTTP 416 (range not satisfiable)", true};
      } else {
        fail = http_status_failure(status, where, at.retry_after);
      }
    } else if (rc == CURLE_WRITE_ERROR && at.size_exceeded) {
      fail = CurlFailure{
          Code::kResourceExhausted,
          where + ": body exceeds the download size limit of " + std::to_string(options.max_bytes) + " bytes", false};
    } else if (rc == CURLE_WRITE_ERROR && at.bad_range) {
      held = ResumeState{"", 0, held.digest_pinned};
      fail = CurlFailure{
          Code::kUnavailable,
          where + ": server answered the range request with Content-Range '" + printable(at.content_range, 100) + "'",
          true};
    } else if (rc == CURLE_WRITE_ERROR) {
      fail = CurlFailure{Code::kIOError, "writing " + dest.string() + ": " + at.write_error, false};
    } else if (rc == CURLE_UNSUPPORTED_PROTOCOL && effective != url) {
      fail =
          CurlFailure{Code::kPermissionDenied, where + ": redirect to a scheme other than http/https refused", false};
    } else {
      const int64_t total = at.content_length >= 0 ? static_cast<int64_t>(at.start) + at.content_length : int64_t{-1};
      fail = curl_failure(c, rc, where, options, at.written, total, errbuf);
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

}  // namespace

Fetcher& Fetcher::default_fetcher() {
  static CurlFetcher fetcher;
  return fetcher;
}

std::unique_ptr<Fetcher> make_curl_fetcher() { return std::make_unique<CurlFetcher>(); }

}  // namespace hub::resolver
