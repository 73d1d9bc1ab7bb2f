// fetch_bench: the resolver's cost on this machine, side by side with the
// plain-tools baseline in the same run.
//
//   1. cache-hit latency of resolve() (no network; a few stats and a read);
//   2. download + verify + unpack + install of a ~100 MB module (gzip tar of
//      float32 weights) from a loopback HTTP server, against
//      `curl -s URL | tar xz -C DIR` on the same archive and server.
//
// Usage: fetch_bench [--mb N] [--reps R]
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "http_server.h"
#include "hub/resolver/cache.h"
#include "hub/resolver/resolver.h"
#include "resolver_testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;
using clk = std::chrono::steady_clock;

namespace {
double secs(clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  size_t mb = 100;
  int reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--mb")) mb = std::strtoul(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  }
  for (const char* v : {"http_proxy", "HTTP_PROXY", "ALL_PROXY", "all_proxy"}) ::unsetenv(v);

  // Weights as a trained network has them: N(0, 0.05) float32 (compress ~10%).
  std::string weights(mb << 20, '\0');
  {
    std::mt19937 rng(42);
    std::normal_distribution<float> dist(0.f, 0.05f);
    float* f = reinterpret_cast<float*>(weights.data());
    for (size_t i = 0; i < weights.size() / 4; ++i) f[i] = dist(rng);
  }
  auto entries = module_entries();
  entries.push_back({"variables.bin", TarEntry::kFile, std::move(weights)});
  auto t0 = clk::now();
  const std::string archive = make_tar(entries, true, 6);
  entries.clear();
  std::printf("archive: %.1f MB gzip (%.1f MB unpacked), built in %.1f s\n",
              archive.size() / 1e6, (mb << 20) / 1e6, secs(t0, clk::now()));

  Sandbox sb;
  HttpServer server;
  server.route("/m.tar.gz", [&](const HttpRequest& r, HttpConn& c) { serve_body(r, c, archive); });
  const std::string url = server.url("/m.tar.gz");
  auto opts = sb.options();
  opts.fetch.max_retries = 0;

  // Download + unpack, fresh cache each time.
  std::vector<double> hub_t, base_t;
  for (int r = 0; r < reps; ++r) {
    fs::remove_all(sb.cache);
    auto a = clk::now();
    resolver::resolve(url, opts);
    hub_t.push_back(secs(a, clk::now()));

    fs::path out = sb.root / "baseline";
    fs::remove_all(out);
    fs::create_directories(out);
    std::string cmd = "curl -s '" + url + "' | tar xz -C '" + out.string() + "'";
    a = clk::now();
    int rc = std::system(cmd.c_str());
    base_t.push_back(secs(a, clk::now()));
    if (rc != 0) {
      std::fprintf(stderr, "baseline command failed (%d): %s\n", rc, cmd.c_str());
      return 1;
    }
  }
  double h = median(hub_t), b = median(base_t);
  std::printf("download+unpack  hub resolve: %.3f s (%.0f MB/s of archive)   "
              "curl|tar xz: %.3f s (%.0f MB/s)   hub/baseline time ratio: %.2f\n",
              h, archive.size() / 1e6 / h, b, archive.size() / 1e6 / b, h / b);

  // Cache hits.
  const int hits = 2000;
  std::vector<double> lat;
  lat.reserve(hits);
  int conns = server.connections();
  for (int i = 0; i < hits; ++i) {
    auto a = clk::now();
    resolver::resolve(url, opts);
    lat.push_back(secs(a, clk::now()) * 1e6);
  }
  std::printf("cache hit        median %.1f us, p99 %.1f us over %d calls (%d new connections)\n",
              median(lat), [&] {
                std::sort(lat.begin(), lat.end());
                return lat[lat.size() * 99 / 100];
              }(),
              hits, server.connections() - conns);
  return 0;
}
