// The hub side of bench/run_ort_bench.sh (hub vs ONNX Runtime on the same
// weights).
//
//   ort_bench export DIR [NET [int8]]   writes DIR/module (the net as bench/net_module.h makes it,
//                                       default mobilenet_v1; with int8 its quantized_net_module)
//                                       and DIR/model.onnx (its ONNX export: a QDQ model for int8)
//   ort_bench time DIR BATCH SECONDS    loads DIR/module for inference (the optimised graph unless
//                                       HUB_GRAPH_OPT=0), warm-up calls (the first, and the module's
//                                       timed turns between layouts), then calls for SECONDS;
//                                       prints `hub IMAGES_PER_SECOND`
//   ort_bench peak THREADS              prints the measured FP32 FMA peak of THREADS threads in
//                                       GFLOP/s (bench/fma_peak.h)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fma_peak.h"
#include "hub/graph/optimize/optimize.h"
#include "hub/interop/onnx/exporter.h"
#include "hub/module/module.h"
#include "net_module.h"

namespace {

int usage() {
  std::fprintf(
      stderr, "usage: ort_bench export DIR [NET [int8]] | ort_bench time DIR BATCH SECONDS | ort_bench peak THREADS\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 2 ? argv[1] : "";
  try {
    if (mode == "export" && argc <= 5 && (argc < 5 || std::string(argv[4]) == "int8")) {
      const std::filesystem::path dir = argv[2];
      const std::string net = argc > 3 ? argv[3] : "mobilenet_v1";
      int64_t macs = 0;
      hub::ModuleSpec spec = bench::net_module(net, &macs);
      if (argc == 5) spec = bench::quantized_net_module(spec, hub::nets::find_net(net));
      hub::Module(spec).export_to((dir / "module").string());
      hub::onnx_interop::export_onnx(spec, (dir / "model.onnx").string());
      std::printf("macs %lld\n", static_cast<long long>(macs));
      return 0;
    }
    if (mode == "peak" && argc == 3 && std::atoi(argv[2]) >= 1) {
      std::printf("%.0f\n", bench::fma_peak_gflops(std::atoi(argv[2])));
      return 0;
    }
    if (mode == "time" && argc == 5) {
      const int64_t batch = std::atoll(argv[3]);
      const double seconds = std::atof(argv[4]);
      if (batch < 1 || seconds <= 0) return usage();
      hub::Module m(hub::load_module_spec((std::filesystem::path(argv[2]) / "module").string()));
      const hub::Shape& in = m.spec().input_info().at("images").shape;
      const hub::Tensor x = bench::uniform({batch, in[1], in[2], in[3]}, 7, 0, 1);
      for (int call = 0; call < hub::Contest::calls_to_settle(2); ++call) m(x);
      using Clock = std::chrono::steady_clock;
      const auto start = Clock::now();
      int64_t calls = 0;
      double elapsed = 0;
      while (elapsed < seconds) {
        m(x);
        ++calls;
        elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      }
      std::printf("hub %.2f\n", static_cast<double>(calls * batch) / elapsed);
      return 0;
    }
  } catch (const hub::Error& e) {
    std::fprintf(stderr, "ort_bench: %s\n", e.what());
    return 1;
  }
  return usage();
}
