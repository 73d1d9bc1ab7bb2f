// quantize_bench: a net's int8 module (hub/module/quantize.h) against its
// float module, both through the inference optimiser, alternating in one run.
//
//   ./build/bench/quantize_bench [rounds [net [batch...]]]
//       (default: 5 rounds, mobilenet_v1 1.0/224, batches 1 and 32)
//
// The float module is bench/net_module.h's (randomised batch-norm
// statistics); the int8 one its quantized_net_module. Each round times a
// fixed number of calls of each; a line per batch gives the median images/s
// of each, GFLOP/s, the int8 logits' largest difference from float relative
// to the largest float logit, and `ratio=int8/float`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "net_module.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::string name = argc > 2 ? argv[2] : "mobilenet_v1";
  std::vector<int64_t> batches;
  for (int i = 3; i < argc; ++i) batches.push_back(std::atoll(argv[i]));
  if (batches.empty()) batches = {1, 32};
  if (rounds < 1) {
    std::fprintf(stderr, "quantize_bench: rounds must be >= 1, got '%s'\n", argv[1]);
    return 2;
  }
  try {
    int64_t macs = 0;
    const hub::ModuleSpec spec = bench::net_module(name, &macs);
    const hub::nets::NetInfo& info = hub::nets::find_net(name);
    const hub::Shape image{info.image_size, info.image_size, info.channels};
    hub::QuantizeReport report;
    const auto start = Clock::now();
    const hub::ModuleSpec q = bench::quantized_net_module(spec, info, &report);
    std::printf("%s: %d int8 layers, %d quantized activations, %zu notes; quantize_module %.1f s\n", name.c_str(),
                report.layers, report.activations, report.notes.size(),
                std::chrono::duration<double>(Clock::now() - start).count());
    hub::Module fm(spec), qm(q);
    for (int64_t batch : batches) {
      const hub::Tensor x = bench::uniform({batch, image[0], image[1], image[2]}, 7, 0, 1);
      const hub::Tensor a = qm(x), b = fm(x);  // warm up both
      double max_diff = 0, max_abs = 0;
      for (int64_t i = 0; i < a.num_elements(); ++i) {
        max_diff = std::max(max_diff, static_cast<double>(std::abs(a.data<float>()[i] - b.data<float>()[i])));
        max_abs = std::max(max_abs, static_cast<double>(std::abs(b.data<float>()[i])));
      }
      const int calls = std::max<int>(2, static_cast<int>(64 / batch));
      std::vector<double> t_int8, t_float;
      for (int r = 0; r < rounds; ++r)
        for (int variant = 0; variant < 2; ++variant) {
          hub::Module& m = variant == 0 ? qm : fm;
          auto t0 = Clock::now();
          for (int c = 0; c < calls; ++c) m(x);
          (variant == 0 ? t_int8 : t_float).push_back(std::chrono::duration<double>(Clock::now() - t0).count() / calls);
        }
      const double s8 = median(t_int8), s32 = median(t_float);
      const double gflop = 2.0 * static_cast<double>(macs) * static_cast<double>(batch) / 1e9;
      std::printf(
          "%s batch=%lld int8=%.1f img/s (%.1f GOP/s) float=%.1f img/s (%.1f GFLOP/s) max_rel_diff=%.1e "
          "ratio=int8/float=%.2f\n",
          name.c_str(), static_cast<long long>(batch), batch / s8, gflop / s8, batch / s32, gflop / s32,
          max_abs > 0 ? max_diff / max_abs : max_diff, s32 / s8);
      std::fflush(stdout);
    }
  } catch (const hub::Error& e) {
    std::fprintf(stderr, "quantize_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
