// cuda_conv_bench: hub's cuDNN convolutions through a Session on the `cuda`
// backend against cuBLAS SGEMM's rate measured beside them (issue #16's
// target: >= 70% of SGEMM at the MNIST and MobileNet shapes).
//
//   ./build/bench/cuda_conv_bench [repeats [name-filter]]    (default 7, all cases)
//
// Reference: cublasSgemm 4096^3 in float32 (no TF32, as hub's default). Cases:
// Conv2D forward / backprop-input / backprop-filter at the MNIST tutorial's
// shapes (batch 100) and at MobileNet v1 1.0/224's (batch 64: the stem, a
// depthwise and a pointwise layer from each resolution). Inputs live on the
// device and results stay there (SessionOptions::fetch_to_host = false), so
// a call is the kernels and the session's own work; each sample queues
// enough calls to last >= 20 ms and waits for the device once. One line per
// case: median ms per call, GFLOP/s (2 flops per multiply-add, the same count
// for the backprops), SGEMM's rate sampled in alternation, and `ratio=`
// their quotient. Depthwise convolutions move far more bytes than they
// compute, so their ratio measures memory traffic, not arithmetic; their
// line also gives GB/s (input + filter + output read or written once).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "conv_case.h"
#include "hub/backend/backend.h"
#include "hub/core/random.h"
#include "hub/graph/session.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/state.h"

namespace {

using bench::build_conv;
using bench::ConvCase;
using Clock = std::chrono::steady_clock;

#define CHECK_CUDA(expr)                                                                \
  do {                                                                                  \
    if ((expr) != 0) {                                                                  \
      std::fprintf(stderr, "cuda_conv_bench: %s failed at line %d\n", #expr, __LINE__); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

hub::Tensor device_random(const hub::Shape& shape, uint64_t seed) {
  hub::Tensor t(hub::DType::kFloat32, shape);
  hub::fill_uniform(t.data<float>(), t.num_elements(), seed, -1.0f, 1.0f);
  return hub::to_device(t, hub::Device::kCUDA);
}

const hub::Backend* g_cuda = nullptr;

// cublasSgemm n^3, float32, on its own handle and the default stream.
struct Sgemm {
  static constexpr int n = 4096;
  cublasHandle_t handle = nullptr;
  hub::Tensor a = device_random({n, n}, 1), b = device_random({n, n}, 2), c = device_random({n, n}, 3);
  Sgemm() {
    CHECK_CUDA(cublasCreate(&handle));
    CHECK_CUDA(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  }
  ~Sgemm() { cublasDestroy(handle); }
  void operator()() {
    const float one = 1, zero = 0;
    CHECK_CUDA(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.device_data<float>(), n,
                           b.device_data<float>(), n, &zero, c.device_data<float>(), n));
  }
  void wait() { CHECK_CUDA(cudaDeviceSynchronize()); }
  static double flops() { return 2.0 * n * n * n; }
};
Sgemm* g_sgemm = nullptr;
int g_repeats = 7;
std::string g_filter;

// Seconds per call of `calls` calls queued back to back, then one wait.
double seconds_of(const std::function<void()>& fn, const std::function<void()>& wait, int calls) {
  const auto start = Clock::now();
  for (int i = 0; i < calls; ++i) fn();
  wait();
  return std::chrono::duration<double>(Clock::now() - start).count() / calls;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds per call of fn and of SGEMM, sampled in alternation.
std::pair<double, double> measure(const std::function<void()>& fn) {
  auto device_wait = [] { g_cuda->synchronize(); };
  auto gemm = [] { (*g_sgemm)(); };
  auto gemm_wait = [] { g_sgemm->wait(); };
  seconds_of(fn, device_wait, 3);
  seconds_of(gemm, gemm_wait, 2);
  const int calls = std::max(1, static_cast<int>(0.02 / std::max(seconds_of(fn, device_wait, 3), 1e-7)));
  const int gemm_calls = std::max(1, static_cast<int>(0.02 / std::max(seconds_of(gemm, gemm_wait, 1), 1e-7)));
  std::vector<double> t, tg;
  for (int r = 0; r < g_repeats; ++r) {
    tg.push_back(seconds_of(gemm, gemm_wait, gemm_calls));
    t.push_back(seconds_of(fn, device_wait, calls));
  }
  return {median(t), median(tg)};
}

void report(const std::string& name, const std::function<void()>& fn, double flops, double bytes,
            const hub::Session& session, const std::string& node) {
  auto [s, sg] = measure(fn);
  const std::string ran = session.last_kernels().at(node);
  const double rate = flops / s * 1e-9, gemm_rate = Sgemm::flops() / sg * 1e-9;
  std::printf("%-52s %-6s %9.4f ms %9.1f GFLOP/s %7.1f GB/s  sgemm %8.1f GFLOP/s  ratio=%.2f\n", name.c_str(),
              ran.c_str(), s * 1e3, rate, bytes / s * 1e-9, gemm_rate, rate / gemm_rate);
  std::fflush(stdout);
}

void bench_conv(const ConvCase& k) {
  using namespace hub;
  if (k.name.find(g_filter) == std::string::npos) return;
  Graph g;
  const auto [x, w, y, dy, dx, dw, flops] = build_conv(g, k);
  Tensor xt = device_random(k.x, 1), wt = device_random(k.w, 2), dyt = device_random(g.spec(y).shape, 3);
  SessionOptions o;
  o.backend = g_cuda;
  o.fetch_to_host = false;
  Session session(g, nullptr, o);
  const Shape& out = g.spec(y).shape;
  const double bytes = 4.0 * static_cast<double>(k.x.num_elements() + k.w.num_elements() + out.num_elements());
  FeedList feeds{{x, xt}, {w, wt}, {dy, dyt}};
  report(
      k.name + " fwd",
      [&] {
        session.run({{x, xt}, {w, wt}}, {y});
      },
      flops, bytes, session, g.node(y).name);
  report(
      k.name + " bwd data", [&] { session.run(feeds, {dx}); }, flops, bytes, session, g.node(dx).name);
  report(
      k.name + " bwd filter", [&] { session.run(feeds, {dw}); }, flops, bytes, session, g.node(dw).name);
}

}  // namespace

int main(int argc, char** argv) {
  g_repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  g_filter = argc > 2 ? argv[2] : "";
  try {
    g_cuda = &hub::find_backend("cuda");
  } catch (const hub::Error& e) {
    std::fprintf(stderr, "cuda_conv_bench: %s\n", e.what());
    return 1;
  }
  Sgemm sgemm;
  g_sgemm = &sgemm;
  std::printf("cuda_conv_bench: median of %d samples; sgemm %d^3 float32\n", g_repeats, Sgemm::n);
  using hub::ops::ConvOptions;
  const ConvOptions same, same2{{2, 2}, "SAME"};
  const std::vector<ConvCase> cases{
      {"mnist conv 5x5 28x28x1->32 SAME b100", false, {100, 28, 28, 1}, {5, 5, 1, 32}, same},
      {"mnist conv 5x5 14x14x32->64 SAME b100", false, {100, 14, 14, 32}, {5, 5, 32, 64}, same},
      {"mobilenet conv0 3x3/2 224x224x3->32 b64", false, {64, 224, 224, 3}, {3, 3, 3, 32}, same2},
      {"mobilenet dw 3x3 112x112x32 b64", true, {64, 112, 112, 32}, {3, 3, 32, 1}, same},
      {"mobilenet pw 1x1 112x112x32->64 b64", false, {64, 112, 112, 32}, {1, 1, 32, 64}, same},
      {"mobilenet dw 3x3/2 112x112x64 b64", true, {64, 112, 112, 64}, {3, 3, 64, 1}, same2},
      {"mobilenet pw 1x1 56x56x128->128 b64", false, {64, 56, 56, 128}, {1, 1, 128, 128}, same},
      {"mobilenet pw 1x1 28x28x256->256 b64", false, {64, 28, 28, 256}, {1, 1, 256, 256}, same},
      {"mobilenet dw 3x3 14x14x512 b64", true, {64, 14, 14, 512}, {3, 3, 512, 1}, same},
      {"mobilenet pw 1x1 14x14x512->512 b64", false, {64, 14, 14, 512}, {1, 1, 512, 512}, same},
      {"mobilenet pw 1x1 7x7x1024->1024 b64", false, {64, 7, 7, 1024}, {1, 1, 1024, 1024}, same},
  };
  try {
    for (const ConvCase& k : cases) bench_conv(k);
  } catch (const hub::Error& e) {
    std::fprintf(stderr, "cuda_conv_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
