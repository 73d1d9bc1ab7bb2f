// engine_bench: convolution throughput through hub's Session, on the onednn
// and reference backends side by side, against the machine's GEMM rate.
//
//   ./build/bench/engine_bench [repeats]      (default 7)
//
// (a) dnnl_sgemm 1024^3 on all cores: the machine reference rate R.
// (b) Conv2D forward / backprop-input / backprop-filter at the MNIST CNN shapes
//     (batch 100): 28x28x1 -> 32, 5x5 SAME and 14x14x32 -> 64, 5x5 SAME.
// (c) A MobileNet block at 112x112x64, batch 8: depthwise 3x3 SAME then
//     pointwise 1x1 64 -> 128, each alone and the two chained in one graph.
// One line per case and backend: median time over `repeats` timed runs (each
// after warm-up), GFLOP/s (2 flops per multiply-add) and `ratio=` GFLOP/s / R.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "hub/core/parallel.h"
#include "hub/core/random.h"
#include "hub/graph/session.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/state.h"

namespace {

using Clock = std::chrono::steady_clock;

// Median seconds of `repeats` calls of fn, after `warmup` untimed calls. Each
// timed sample runs fn enough times to last >= 50 ms.
double median_seconds(const std::function<void()>& fn, int repeats, int warmup = 2) {
  for (int i = 0; i < warmup; ++i) fn();
  auto t0 = Clock::now();
  fn();
  double once = std::chrono::duration<double>(Clock::now() - t0).count();
  int inner = std::max(1, static_cast<int>(0.05 / std::max(once, 1e-9)));
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    auto start = Clock::now();
    for (int i = 0; i < inner; ++i) fn();
    samples.push_back(std::chrono::duration<double>(Clock::now() - start).count() / inner);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

hub::Tensor random(const hub::Shape& shape, uint64_t seed) {
  hub::Tensor t(hub::DType::kFloat32, shape);
  hub::fill_uniform(t.data<float>(), t.num_elements(), seed, -1.0f, 1.0f);
  return t;
}

double g_gemm_rate = 0;  // GFLOP/s of (a)

void report(const std::string& name, const std::string& backend, double seconds, double flops) {
  double rate = flops / seconds * 1e-9;
  std::printf("%-44s %-9s %9.3f ms %8.1f GFLOP/s  ratio=%.2f\n", name.c_str(), backend.c_str(), seconds * 1e3,
              rate, rate / g_gemm_rate);
  std::fflush(stdout);
}

void bench_gemm(int repeats) {
  const int64_t n = 1024;
  hub::Tensor a = random({n, n}, 1), b = random({n, n}, 2), c(hub::DType::kFloat32, {n, n});
  double s = median_seconds(
      [&] {
        dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data<float>(), n, b.data<float>(), n, 0.0f, c.data<float>(), n);
      },
      repeats);
  g_gemm_rate = 2.0 * n * n * n / s * 1e-9;
  std::printf("%-44s %-9s %9.3f ms %8.1f GFLOP/s  ratio=%.2f\n", "dnnl_sgemm 1024^3 (machine reference)", "onednn",
              s * 1e3, g_gemm_rate, 1.0);
}

struct ConvCase {
  std::string name;
  bool depthwise;
  hub::Shape x, w;
  hub::ops::ConvOptions options;
};

// Multiply-adds of one convolution pass (forward = backprop-input = backprop-filter).
double conv_flops(const hub::Graph& g, hub::Output y, const ConvCase& k) {
  const hub::Shape& out = g.spec(y).shape;
  double macs = static_cast<double>(out.num_elements()) * k.w[0] * k.w[1] * (k.depthwise ? 1 : k.w[2]);
  return 2 * macs;
}

void bench_conv(const ConvCase& k, int repeats) {
  using namespace hub;
  for (Backend backend : {Backend::kOneDNN, Backend::kReference}) {
    Graph g;
    Scope s(g);
    Output x = ops::placeholder(s, DType::kFloat32, k.x, "x");
    Output w = ops::placeholder(s, DType::kFloat32, k.w, "w");
    Output y = k.depthwise ? ops::depthwise_conv2d(s, x, w, k.options) : ops::conv2d(s, x, w, k.options);
    Output dy = ops::placeholder(s, DType::kFloat32, g.spec(y).shape, "dy");
    Output dx = k.depthwise ? ops::depthwise_conv2d_backprop_input(s, x, w, dy, k.options)
                            : ops::conv2d_backprop_input(s, x, w, dy, k.options);
    Output dw = k.depthwise ? ops::depthwise_conv2d_backprop_filter(s, x, w, dy, k.options)
                            : ops::conv2d_backprop_filter(s, x, w, dy, k.options);
    Tensor xt = random(k.x, 1), wt = random(k.w, 2), dyt = random(g.spec(y).shape, 3);
    FeedList feeds{{x, xt}, {w, wt}, {dy, dyt}};
    Session session(g, nullptr, {backend});
    const double flops = conv_flops(g, y, k);
    const std::string b(backend_name(backend));
    report(k.name + " fwd", b, median_seconds([&] { session.run({{x, xt}, {w, wt}}, {y}); }, repeats), flops);
    report(k.name + " bwd data", b, median_seconds([&] { session.run(feeds, {dx}); }, repeats), flops);
    report(k.name + " bwd weights", b, median_seconds([&] { session.run(feeds, {dw}); }, repeats), flops);
  }
}

// Depthwise 3x3 SAME followed by pointwise 1x1, in one graph, forward.
void bench_block(int repeats) {
  using namespace hub;
  const Shape xs{8, 112, 112, 64}, dws{3, 3, 64, 1}, pws{1, 1, 64, 128};
  for (Backend backend : {Backend::kOneDNN, Backend::kReference}) {
    Graph g;
    Scope s(g);
    Output x = ops::placeholder(s, DType::kFloat32, xs, "x");
    Output dw = ops::placeholder(s, DType::kFloat32, dws, "dw");
    Output pw = ops::placeholder(s, DType::kFloat32, pws, "pw");
    Output y = ops::conv2d(s, ops::depthwise_conv2d(s, x, dw), pw);
    Tensor xt = random(xs, 1), dwt = random(dws, 2), pwt = random(pws, 3);
    Session session(g, nullptr, {backend});
    const double px = 8.0 * 112 * 112;
    const double flops = 2 * px * 64 * 9 + 2 * px * 64 * 128;
    report("mobilenet block dw3x3+pw1x1 112x112x64 b8 fwd", std::string(backend_name(backend)),
           median_seconds([&] { session.run({{x, xt}, {dw, dwt}, {pw, pwt}}, {y}); }, repeats), flops);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  std::printf("engine_bench: %d threads, median of %d\n", hub::num_threads(), repeats);
  bench_gemm(repeats);
  using hub::ops::ConvOptions;
  std::vector<ConvCase> cases{
      {"conv 5x5 28x28x1->32 SAME b100", false, {100, 28, 28, 1}, {5, 5, 1, 32}, ConvOptions{}},
      {"conv 5x5 14x14x32->64 SAME b100", false, {100, 14, 14, 32}, {5, 5, 32, 64}, ConvOptions{}},
      {"depthwise 3x3 112x112x64 SAME b8", true, {8, 112, 112, 64}, {3, 3, 64, 1}, ConvOptions{}},
      {"pointwise 1x1 112x112x64->128 b8", false, {8, 112, 112, 64}, {1, 1, 64, 128}, ConvOptions{}},
  };
  for (const ConvCase& k : cases) bench_conv(k, repeats);
  bench_block(repeats);
  return 0;
}
