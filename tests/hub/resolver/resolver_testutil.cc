#include "resolver_testutil.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "hub/resolver/unpack.h"

namespace fs = std::filesystem;

namespace hub::testing {

namespace {
// Proxies from the environment must not capture loopback test traffic.
struct NoProxy {
  NoProxy() {
    for (const char* v : {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"})
      ::unsetenv(v);
  }
} no_proxy;
}  // namespace

std::string gzip_bytes(const std::string& data, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  out.resize(z.total_out);
  return out;
}

const std::string& good_archive() {
  static const std::string bytes = make_tar(module_entries());
  return bytes;
}

Sandbox::Sandbox() : dir("hub-resolver-test"), root(dir.path) {
  cache = root / "cache";
  outside = root / "outside";
  fs::create_directories(outside);
}

resolver::ResolverOptions Sandbox::options() const { return fast_options(cache); }

fs::path resolve_dir(const std::string& handle, const resolver::ResolverOptions& o, const std::string& sha256) {
  return resolver::Resolver(o).resolve(handle, sha256).dir;
}

resolver::ResolverOptions fast_options(const std::filesystem::path& cache) {
  resolver::ResolverOptions o;
  o.quiet = true;
  o.offline = false;
  o.cache_dir = cache;
  o.fetch = resolver::FetchOptions{};
  o.fetch.connect_timeout_s = 2;
  o.fetch.low_speed_time_s = 1;
  o.fetch.low_speed_limit = 100;
  o.fetch.max_retries = 2;
  o.fetch.backoff_initial_s = 0.01;
  o.fetch.backoff_max_s = 2;
  o.lock_poll_s = 0.01;
  o.validator = resolver::check_module_pb_present;
  return o;
}

namespace {
struct Capture {
  std::string out;
  bool stop = false;  // refuse further output (the writer's padding)
};
la_ssize_t capture_cb(struct archive*, void* user, const void* buf, size_t n) {
  auto* c = static_cast<Capture*>(user);
  if (c->stop) return -1;
  c->out.append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}
la_ssize_t append_cb(struct archive*, void* user, const void* buf, size_t n) {
  static_cast<std::string*>(user)->append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}
}  // namespace

std::string make_declared_size_bomb(const std::string& path, int64_t size) {
  Capture cap;
  struct archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  archive_write_set_bytes_per_block(a, 0);  // unbuffered: headers reach us at once
  archive_write_open2(a, &cap, nullptr, capture_cb, nullptr, nullptr);
  struct archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, path.c_str());
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_size(e, size);
  archive_write_header(a, e);
  archive_entry_free(e);
  // Never write the 10 GB: make the writer's padding fail immediately.
  cap.stop = true;
  archive_write_free(a);
  if (cap.out.empty() || cap.out.size() % 512 != 0) throw std::runtime_error("bomb header");
  cap.out.append(4096, '\0');  // a few KB of body, then the data simply ends
  return cap.out;
}

std::string make_sparse_bomb(const std::string& path, int64_t size) {
  std::string out;
  struct archive* a = archive_write_new();
  archive_write_set_format_pax(a);
  archive_write_add_filter_gzip(a);
  archive_write_open2(a, &out, nullptr, append_cb, nullptr, nullptr);
  struct archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, path.c_str());
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_size(e, size);
  archive_entry_sparse_add_entry(e, size - 1, 1);
  if (archive_write_header(a, e) < ARCHIVE_WARN) {
    throw std::runtime_error(std::string("sparse header: ") + archive_error_string(a));
  }
  archive_write_data(a, "x", 1);
  archive_entry_free(e);
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

std::vector<TarEntry> module_entries(const std::string& prefix) {
  std::vector<TarEntry> v;
  if (!prefix.empty()) v.push_back({prefix, TarEntry::kDir});
  std::string p = prefix.empty() ? "" : prefix + "/";
  v.push_back({p + "module.pb", TarEntry::kFile, std::string("\x08\x01\x12\x04test", 7)});
  v.push_back({p + "variables.safetensors", TarEntry::kFile, std::string(3000, 'w')});
  v.push_back({p + "assets", TarEntry::kDir});
  v.push_back({p + "assets/labels.txt", TarEntry::kFile, "cat\ndog\n"});
  return v;
}

std::string noise(size_t n, uint32_t seed) {
  std::string out(n, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    out[i] = static_cast<char>(x >> 56);
  }
  return out;
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

std::vector<std::string> list_tree(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) return out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    out.push_back(it->path().lexically_relative(dir).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hub::testing
