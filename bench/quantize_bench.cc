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

}  // namespace

int main(int argc, char** argv) {
  bench::NetArgs args;
  if (!bench::parse_net_args(argc, argv, "quantize_bench", &args)) return 2;
  const std::string& name = args.net;
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
    for (int64_t batch : args.batches) {
      const hub::Tensor x = bench::uniform({batch, image[0], image[1], image[2]}, 7, 0, 1);
      const hub::Tensor a = qm(x), b = fm(x);  // warm up both
      const double rel = bench::max_rel_diff(b.data<float>(), a.data<float>(), a.num_elements());
      const std::vector<double> seconds = bench::time_alternating(
          args.rounds, std::max<int>(2, static_cast<int>(64 / batch)), {[&] { qm(x); }, [&] { fm(x); }});
      const double s8 = seconds[0], s32 = seconds[1];
      const double gflop = 2.0 * static_cast<double>(macs) * static_cast<double>(batch) / 1e9;
      std::printf(
          "%s batch=%lld int8=%.1f img/s (%.1f GOP/s) float=%.1f img/s (%.1f GFLOP/s) max_rel_diff=%.1e "
          "ratio=int8/float=%.2f\n",
          name.c_str(), static_cast<long long>(batch), batch / s8, gflop / s8, batch / s32, gflop / s32, rel, s32 / s8);
      std::fflush(stdout);
    }
  } catch (const hub::Error& e) {
    std::fprintf(stderr, "quantize_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
