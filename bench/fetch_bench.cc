// fetch_bench: the resolver's cost on this machine, side by side with the
// plain-tools baseline in the same run.
//
//   1. download + verify + unpack + install of a ~100 MB module (gzip tar of
//      float32 weights) from a loopback HTTP server, against
//      `curl -s URL | tar xz -C DIR` on the same archive and server;
//   2. cache-hit latency of resolve() (no network; a few stats and a read);
//   3. cache hit + load_module_spec() of a MobileNet v1 1.0/224 module (the
//      exported network, 17 MB of weights) served from the same server: the
//      first fetch, then --hits hits (median, p99) against the 5 ms target,
//      with the split between resolve and load.
//
// Usage: fetch_bench [--mb N (0: skip part 1)] [--reps R] [--hits H]
#include <sys/wait.h>
#include <time.h>

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
#include "hub/module/module.h"
#include "hub/resolver/cache.h"
#include "hub/resolver/resolver.h"
#include "modules/train/train.h"
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

// CPU time of the process: on a loaded machine the wall time of a hit is
// mostly waiting for a core, so the CPU time says what the code costs.
double cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double p99(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() * 99 / 100];
}

}  // namespace

int main(int argc, char** argv) {
  size_t mb = 100;
  int reps = 3;
  int module_hits = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--mb")) mb = std::strtoul(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--hits")) module_hits = std::max(1, std::atoi(argv[i + 1]));
  }
  for (const char* v : {"http_proxy", "HTTP_PROXY", "ALL_PROXY", "all_proxy"}) ::unsetenv(v);

  Sandbox sb;
  HttpServer server;
  auto opts = sb.options();
  opts.fetch.max_retries = 0;
  std::string archive;  // outlives the server's route to it
  if (mb > 0) {
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
    archive = make_tar(entries, true, 6);
    entries.clear();
    std::printf("archive: %.1f MB gzip (%.1f MB unpacked), built in %.1f s\n", archive.size() / 1e6, (mb << 20) / 1e6,
                secs(t0, clk::now()));

    server.route("/m.tar.gz", [&](const HttpRequest& r, HttpConn& c) { serve_body(r, c, archive); });
    const std::string url = server.url("/m.tar.gz");

    // Download + unpack, fresh cache each time.
    std::vector<double> hub_t, base_t;
    for (int r = 0; r < reps; ++r) {
      fs::remove_all(sb.cache);
      auto a = clk::now();
      resolve_dir(url, opts);
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
    // ratio = hub's throughput / the baseline's (target >= 0.8).
    std::printf(
        "download+unpack  hub resolve: %.3f s (%.0f MB/s of archive)   "
        "curl|tar xz: %.3f s (%.0f MB/s)   ratio=%.2f (throughput, hub/baseline; target >= 0.8)\n",
        h, archive.size() / 1e6 / h, b, archive.size() / 1e6 / b, b / h);

    // Cache hits.
    const int hits = 2000;
    std::vector<double> lat;
    lat.reserve(hits);
    int conns = server.connections();
    for (int i = 0; i < hits; ++i) {
      auto a = clk::now();
      resolve_dir(url, opts);
      lat.push_back(secs(a, clk::now()) * 1e6);
    }
    std::printf("cache hit        median %.1f us, p99 %.1f us over %d calls (%d new connections)\n", median(lat),
                p99(lat), hits, server.connections() - conns);
  }

  // A MobileNet v1 1.0/224 module as `hub export` writes it (random weights:
  // the cost of loading does not depend on their values).
  const fs::path exported = sb.root / "mobilenet_v1";
  {
    train::ExportConfig ec;
    ec.model_name = "mobilenet_v1";
    ec.output_dir = exported.string();
    train::export_module(ec);
  }
  uint64_t weight_bytes = fs::file_size(exported / "variables.safetensors");
  uint64_t pb_bytes = fs::file_size(exported / "module.pb");
  const std::string mn_archive = make_tar(dir_entries(exported), true, 1);
  server.route("/mobilenet_v1.tar.gz", [&](const HttpRequest& r, HttpConn& c) { serve_body(r, c, mn_archive); });
  const std::string mn_url = server.url("/mobilenet_v1.tar.gz");
  std::printf("mobilenet_v1 1.0/224 module: module.pb %.1f kB, variables.safetensors %.1f MB, archive %.1f MB\n",
              pb_bytes / 1e3, weight_bytes / 1e6, mn_archive.size() / 1e6);

  auto a = clk::now();
  ModuleSpec first = load_module_spec(resolve_dir(mn_url, opts).string());
  std::printf("first fetch + load_module_spec: %.3f s (%zu weights)\n", secs(a, clk::now()), first.weights().size());
  int mn_conns = server.connections();
  std::vector<double> total, res, load, cpu;
  for (int i = 0; i < module_hits; ++i) {
    const double c0 = cpu_ms();
    auto t0 = clk::now();
    fs::path dir = resolve_dir(mn_url, opts);
    auto t1 = clk::now();
    ModuleSpec spec = load_module_spec(dir.string());
    auto t2 = clk::now();
    cpu.push_back(cpu_ms() - c0);
    if (spec.weights().size() != first.weights().size()) {
      std::fprintf(stderr, "hit %d loaded %zu weights, expected %zu\n", i, spec.weights().size(),
                   first.weights().size());
      return 1;
    }
    res.push_back(secs(t0, t1) * 1e3);
    load.push_back(secs(t1, t2) * 1e3);
    total.push_back(secs(t0, t2) * 1e3);
  }
  const double med = median(total);
  std::printf(
      "cache hit + load_module_spec (mobilenet_v1)  median %.2f ms, p99 %.2f ms over %d calls "
      "(resolve median %.3f ms, load median %.2f ms; CPU time median %.2f ms, p99 %.2f ms; "
      "%d new connections)   target < 5 ms: %s\n",
      med, p99(total), module_hits, median(res), median(load), median(cpu), p99(cpu), server.connections() - mn_conns,
      med < 5 ? "met" : "MISSED");
  double load_avg[3] = {0, 0, 0};
  if (getloadavg(load_avg, 3) == 3)
    std::printf("load average during the run: %.2f %.2f %.2f\n", load_avg[0], load_avg[1], load_avg[2]);
  return 0;
}
