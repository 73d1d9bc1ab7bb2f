// engine_bench: convolution throughput through hub's Session, on the onednn
// and reference backends side by side, against the machine's GEMM rate.
//
//   ./build/bench/engine_bench [repeats [name-filter]]      (default 7, all cases)
//
// (a) dnnl_sgemm 1024^3 on all cores: the machine reference rate.
// (b) Conv2D forward / backprop-input / backprop-filter at the MNIST CNN shapes
//     (batch 100): 28x28x1 -> 32, 5x5 SAME and 14x14x32 -> 64, 5x5 SAME.
// (c) A MobileNet block at 112x112x64, batch 8: depthwise 3x3 SAME and
//     pointwise 1x1 64 -> 128, each alone (fwd and both backprops) and the
//     two chained in one graph (fwd).
// One line per case and backend: median time per call, GFLOP/s (2 flops per
// multiply-add), the GEMM rate measured in alternation with that case (so
// both see the same load on a shared machine) and `ratio=` their quotient.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <utility>
#include <vector>

#include "conv_case.h"
#include "hub/core/parallel.h"
#include "hub/core/random.h"
#include "hub/graph/session.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/state.h"

namespace {

using bench::build_conv;
using bench::ConvCase;
using Clock = std::chrono::steady_clock;

hub::Tensor random(const hub::Shape& shape, uint64_t seed) {
  hub::Tensor t(hub::DType::kFloat32, shape);
  hub::fill_uniform(t.data<float>(), t.num_elements(), seed, -1.0f, 1.0f);
  return t;
}

// dnnl_sgemm 1024^3 (row-major, no transposes) on all cores.
struct Gemm {
  static constexpr int64_t n = 1024;
  hub::Tensor a = random({n, n}, 1), b = random({n, n}, 2), c{hub::DType::kFloat32, {n, n}};
  void operator()() {
    dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data<float>(), n, b.data<float>(), n, 0.0f, c.data<float>(), n);
  }
  static double flops() { return 2.0 * n * n * n; }
};
Gemm* g_gemm = nullptr;
int g_repeats = 7;
std::string g_filter;  // only cases whose name contains this

double seconds_of(const std::function<void()>& fn, int inner) {
  auto start = Clock::now();
  for (int i = 0; i < inner; ++i) fn();
  return std::chrono::duration<double>(Clock::now() - start).count() / inner;
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds per call of fn and of the GEMM, sampled in alternation
// (g_repeats samples each, after warm-up; a sample lasts >= 50 ms).
std::pair<double, double> measure(const std::function<void()>& fn) {
  std::function<void()> gemm = [] { (*g_gemm)(); };
  fn();
  fn();
  gemm();
  const int inner = std::max(1, static_cast<int>(0.05 / std::max(seconds_of(fn, 1), 1e-9)));
  const int gemm_inner = std::max(1, static_cast<int>(0.05 / std::max(seconds_of(gemm, 1), 1e-9)));
  std::vector<double> t, tg;
  for (int r = 0; r < g_repeats; ++r) {
    tg.push_back(seconds_of(gemm, gemm_inner));
    t.push_back(seconds_of(fn, inner));
  }
  return {median(t), median(tg)};
}

// `backend` names the session's backend; when the node `node` of `session`
// fell back to another kernel, the line says so ("onednn>reference").
void report(const std::string& name, std::string backend, const std::function<void()>& fn, double flops,
            const hub::Session* session = nullptr, const std::string& node = "") {
  if (name.find(g_filter) == std::string::npos && name.find("sgemm") == std::string::npos) return;
  auto [s, sg] = measure(fn);
  if (session) {
    const std::string ran = session->last_kernels().at(node);
    if (ran != session->backend().name()) {
      backend += '>';
      backend += ran;
    }
  }
  double rate = flops / s * 1e-9, gemm_rate = Gemm::flops() / sg * 1e-9;
  std::printf("%-46s %-17s %9.3f ms %8.1f GFLOP/s  gemm %6.1f GFLOP/s  ratio=%.2f\n", name.c_str(), backend.c_str(),
              s * 1e3, rate, gemm_rate, rate / gemm_rate);
  std::fflush(stdout);
}

void bench_conv(const ConvCase& k) {
  using namespace hub;
  for (const char* backend : {"onednn", "reference"}) {
    Graph g;
    const auto [x, w, y, dy, dx, dw, flops] = build_conv(g, k);
    Tensor xt = random(k.x, 1), wt = random(k.w, 2), dyt = random(g.spec(y).shape, 3);
    FeedList feeds{{x, xt}, {w, wt}, {dy, dyt}};
    Session session(g, nullptr, {&find_backend(backend)});
    const std::string b(backend);
    report(
        k.name + " fwd", b,
        [&] {
          session.run({{x, xt}, {w, wt}}, {y});
        },
        flops, &session, g.node(y).name);
    report(
        k.name + " bwd data", b, [&] { session.run(feeds, {dx}); }, flops, &session, g.node(dx).name);
    report(
        k.name + " bwd weights", b, [&] { session.run(feeds, {dw}); }, flops, &session, g.node(dw).name);
  }
}

// Depthwise 3x3 SAME followed by pointwise 1x1, in one graph, forward.
void bench_block() {
  using namespace hub;
  const Shape xs{8, 112, 112, 64}, dws{3, 3, 64, 1}, pws{1, 1, 64, 128};
  for (const char* backend : {"onednn", "reference"}) {
    Graph g;
    Scope s(g);
    Output x = ops::placeholder(s, DType::kFloat32, xs, "x");
    Output dw = ops::placeholder(s, DType::kFloat32, dws, "dw");
    Output pw = ops::placeholder(s, DType::kFloat32, pws, "pw");
    Output y = ops::conv2d(s, ops::depthwise_conv2d(s, x, dw), pw);
    Tensor xt = random(xs, 1), dwt = random(dws, 2), pwt = random(pws, 3);
    Session session(g, nullptr, {&find_backend(backend)});
    const double px = 8.0 * 112 * 112;
    const double flops = 2 * px * 64 * 9 + 2 * px * 64 * 128;
    report(
        "mobilenet block dw3x3+pw1x1 112x112x64 b8 fwd", std::string(backend),
        [&] {
          session.run({{x, xt}, {dw, dwt}, {pw, pwt}}, {y});
        },
        flops);
  }
}

}  // namespace

int main(int argc, char** argv) {
  g_repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  g_filter = argc > 2 ? argv[2] : "";
  std::printf("engine_bench: %d threads, median of %d\n", hub::num_threads(), g_repeats);
  Gemm gemm;
  g_gemm = &gemm;
  report(
      "dnnl_sgemm 1024^3 (machine reference)", "onednn", [&] { gemm(); }, Gemm::flops());
  using hub::ops::ConvOptions;
  std::vector<ConvCase> cases{
      {"conv 5x5 28x28x1->32 SAME b100", false, {100, 28, 28, 1}, {5, 5, 1, 32}, ConvOptions{}},
      {"conv 5x5 14x14x32->64 SAME b100", false, {100, 14, 14, 32}, {5, 5, 32, 64}, ConvOptions{}},
      {"depthwise 3x3 112x112x64 SAME b8", true, {8, 112, 112, 64}, {3, 3, 64, 1}, ConvOptions{}},
      {"pointwise 1x1 112x112x64->128 b8", false, {8, 112, 112, 64}, {1, 1, 64, 128}, ConvOptions{}},
  };
  for (const ConvCase& k : cases) bench_conv(k);
  bench_block();
  return 0;
}
