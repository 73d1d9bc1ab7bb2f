// inference_bench: a module's inference call with the graph optimiser
// (hub/graph/optimize/optimize.h) against the same module with
// HUB_GRAPH_OPT=0, alternating in one run so both see the same load.
//
//   ./build/bench/inference_bench [--profile] [--int8] [rounds [net [batch...]]]
//       (default: 5 rounds, mobilenet_v1 1.0/224, batches 1 and 32)
//
// The module is the net with randomised batch-norm statistics, as
// create_module_spec makes it (signature "default": logits), on the default
// backend ($HUB_BACKEND, else onednn) with all cores. Each round times a
// fixed number of calls of each variant; a line per batch gives the median
// images/s of each, GFLOP/s (2 flops per multiply-add of the convolutions
// and matmuls) and `ratio=opt/noopt`.
//
// Each line names the activation layout the module timed faster for that
// batch and runs in (optimize.h: nhwc or nChw<b>c), and times a third
// module fixed to the other layout (HUB_GRAPH_LAYOUT) beside the two:
// `layout_ratio=opt/other` (>= 1 when the timed choice was right).
//
// --profile adds, per batch, where the optimised graph's time goes: the
// optimised graph in that layout run as the module runs it (a memory-planned Session) with
// SessionOptions::profile, each node's median and fastest time over `rounds`
// runs, each as a share of the sum, and the medians summed per op and backend.
// --int8 times the net's int8 module (bench::quantized_net_module) instead:
// noopt is then its QDQ graph run op by op.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hub/graph/optimize/optimize.h"
#include "hub/module/module.h"
#include "net_module.h"

namespace {

// The activation layout of the graph a module's last call ran: the channel
// block its convolutions exchange tensors in, 0 for NHWC.
int64_t block_of(const hub::Graph& g) {
  for (const hub::Node& n : g.nodes())
    if (n.op == "_Relayout" && n.attrs.get_int("to_block") > 0) return n.attrs.get_int("to_block");
  return 0;
}

// A module built with $HUB_GRAPH_OPT and $HUB_GRAPH_LAYOUT as given (null:
// unset).
hub::Module make_module(const hub::ModuleSpec& spec, bool optimise, const char* layout = nullptr) {
  if (optimise)
    ::unsetenv("HUB_GRAPH_OPT");
  else
    ::setenv("HUB_GRAPH_OPT", "0", 1);
  if (layout) ::setenv("HUB_GRAPH_LAYOUT", layout, 1);
  hub::Module m(spec);
  ::unsetenv("HUB_GRAPH_OPT");
  ::unsetenv("HUB_GRAPH_LAYOUT");
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  bool profile = false, int8 = false;
  while (argc > 1 && (std::string(argv[1]) == "--profile" || std::string(argv[1]) == "--int8")) {
    (std::string(argv[1]) == "--profile" ? profile : int8) = true;
    --argc;
    ++argv;
  }
  bench::NetArgs args;
  if (!bench::parse_net_args(argc, argv, "inference_bench", &args)) return 2;
  const int rounds = args.rounds;
  const std::string& name = args.net;
  const std::vector<int64_t>& batches = args.batches;
  try {
    int64_t macs = 0;
    const hub::nets::NetInfo& info = hub::nets::find_net(name);
    hub::ModuleSpec spec = bench::net_module(name, &macs);
    if (int8) spec = bench::quantized_net_module(spec, info);
    hub::Module opt = make_module(spec, true), noopt = make_module(spec, false);
    // What the optimiser made of the graph (the module makes the same on its first call).
    const hub::Graph& g = opt.graph();
    const hub::Output images = g.tensor(spec.signature().inputs.at("images").tensor_name);
    const hub::Output logits = g.tensor(spec.signature().outputs.at("default").tensor_name);
    const hub::OptimizedGraph optimized = hub::optimize_for_inference(g, opt.variables(), {images, logits});
    {
      const hub::OptimizeStats& st = optimized.stats();
      std::printf(
          "%s: %d nodes -> %d; %d fused, %d batch norms folded, %d post-ops, %d constants folded, "
          "block %lld, %d relayouts\n",
          name.c_str(), st.nodes_before, st.nodes_after, st.fused, st.batch_norms_folded, st.post_ops,
          st.constants_folded, static_cast<long long>(st.block), st.relayouts);
    }
    for (int64_t batch : batches) {
      const hub::Tensor x = bench::uniform({batch, info.image_size, info.image_size, info.channels}, 7, 0, 1);
      // Warm up (the optimiser, primitive creation, weight reorders; the
      // optimised module's turns between layouts), and check both give the
      // same logits.
      const hub::Tensor b = noopt(x);
      hub::Tensor a;
      for (int call = 0; call < hub::Contest::calls_to_settle(2); ++call) a = opt(x);
      // The layout the module timed faster for this batch, and a module fixed
      // to the other one.
      const int64_t block = block_of(opt.execution_graph());
      hub::Module other = make_module(spec, true, block > 0 ? "nhwc" : "blocked");
      other(x);
      const int64_t other_block = block_of(other.execution_graph());
      auto name_of = [](int64_t b) { return b > 0 ? "nChw" + std::to_string(b) + "c" : std::string("nhwc"); };
      const double rel = bench::max_rel_diff(b.data<float>(), a.data<float>(), a.num_elements());
      const std::vector<double> seconds =
          bench::time_alternating(rounds, std::max<int>(2, static_cast<int>(64 / batch)),
                                  {[&] { opt(x); }, [&] { noopt(x); }, [&] { other(x); }});
      const double s_opt = seconds[0], s_noopt = seconds[1], s_other = seconds[2];
      const double gflop = 2.0 * static_cast<double>(macs) * static_cast<double>(batch) / 1e9;
      std::printf(
          "%s batch=%lld opt=%.1f img/s (%.1f GFLOP/s, %s) %s=%.1f img/s noopt=%.1f img/s (%.1f GFLOP/s) "
          "max_rel_diff=%.1e layout_ratio=%.2f ratio=%.2f\n",
          name.c_str(), static_cast<long long>(batch), batch / s_opt, gflop / s_opt, name_of(block).c_str(),
          name_of(other_block).c_str(), batch / s_other, batch / s_noopt, gflop / s_noopt, rel, s_other / s_opt,
          s_noopt / s_opt);
      if (profile) {
        hub::OptimizeOptions layout_options;
        layout_options.block = block;
        bench::print_inference_profile(
            hub::optimize_for_inference(g, opt.variables(), {images, logits}, layout_options), opt.variables(), images,
            logits, x, rounds);
      }
      std::fflush(stdout);
    }
  } catch (const hub::Error& e) {
    std::fprintf(stderr, "inference_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
