// The module the inference benchmarks run: a built-in net as
// create_module_spec makes it (signature "default": images -> logits, 1000
// or 1001 classes), batch-norm statistics and offsets randomised so folding
// them is not a no-op.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "hub/core/random.h"
#include "hub/graph/optimize/optimize.h"
#include "hub/graph/session.h"
#include "hub/module/module.h"
#include "hub/module/quantize.h"
#include "hub/ops/state.h"
#include "modules/nets/nets.h"

namespace bench {

inline hub::Tensor uniform(const hub::Shape& shape, uint64_t seed, float lo, float hi) {
  hub::Tensor t(hub::DType::kFloat32, shape);
  hub::fill_uniform(t.data<float>(), t.num_elements(), seed, lo, hi);
  return t;
}

// `macs`: multiply-adds per image (nets::count_macs).
inline hub::ModuleSpec net_module(const std::string& name, int64_t* macs) {
  return hub::create_module_spec([&](hub::ModuleBuilder& b) {
    const hub::nets::NetInfo& info = hub::nets::find_net(name);
    hub::Scope s = b.scope();
    hub::Output images = hub::ops::placeholder(
        s, hub::DType::kFloat32, {hub::kUnknownDim, info.image_size, info.image_size, info.channels}, "images");
    hub::nets::NetOptions o;
    hub::nets::Net net = hub::nets::build_net(name, s, images, o);
    b.add_signature("default", images, net.logits, "images");
    *macs = hub::nets::count_macs(b.graph());
    hub::VariableStore vars;
    vars.initialize(b.graph());
    uint64_t seed = 1;
    for (const std::string& v : vars.names()) {
      const hub::Shape shape = vars.at(v).shape();
      if (v.ends_with("moving_variance"))
        b.initial_values().set(v, uniform(shape, seed++, 0.5f, 2.0f));
      else if (v.ends_with("moving_mean") || v.ends_with("beta"))
        b.initial_values().set(v, uniform(shape, seed++, -0.2f, 0.2f));
    }
  });
}

// The int8 module of a net_module (hub/module/quantize.h): per-channel
// weights, min/max ranges over 32 calibration images of uniform noise (the
// weights are random too: this is for timing, not accuracy).
inline hub::ModuleSpec quantized_net_module(const hub::ModuleSpec& spec, const hub::nets::NetInfo& info,
                                            hub::QuantizeReport* report = nullptr) {
  hub::QuantizeOptions options;
  options.per_channel = true;
  return hub::quantize_module(
      spec,
      [&](const std::function<void(const hub::Tensor&)>& feed) {
        for (uint64_t b = 0; b < 4; ++b)
          feed(uniform({8, info.image_size, info.image_size, info.channels}, 100 + b, 0, 1));
      },
      options, report);
}

// max |a - b| / max |a| over n values (max |a - b| when a is all zero).
inline double max_rel_diff(const float* a, const float* b, int64_t n) {
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::abs(a[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// The `[rounds [net [batch...]]]` arguments of the per-net benchmarks
// (default 5 rounds, mobilenet_v1, batches 1 and 32); rounds < 1 is an error
// (false, with a message naming `program`).
struct NetArgs {
  int rounds = 5;
  std::string net = "mobilenet_v1";
  std::vector<int64_t> batches{1, 32};
};
inline bool parse_net_args(int argc, char** argv, const char* program, NetArgs* args) {
  if (argc > 1) args->rounds = std::atoi(argv[1]);
  if (argc > 2) args->net = argv[2];
  if (argc > 3) args->batches.clear();
  for (int i = 3; i < argc; ++i) args->batches.push_back(std::atoll(argv[i]));
  if (args->rounds >= 1) return true;
  std::fprintf(stderr, "%s: rounds must be >= 1, got '%s'\n", program, argv[1]);
  return false;
}

// Times the variants in turn, `rounds` times, each `calls` calls in a row,
// so they all see the same load; returns each one's median seconds per call.
inline std::vector<double> time_alternating(int rounds, int calls, const std::vector<std::function<void()>>& variants) {
  std::vector<std::vector<double>> times(variants.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t v = 0; v < variants.size(); ++v) {
      const auto start = std::chrono::steady_clock::now();
      for (int c = 0; c < calls; ++c) variants[v]();
      times[v].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls);
    }
  std::vector<double> medians;
  for (std::vector<double>& t : times) {
    std::sort(t.begin(), t.end());
    medians.push_back(t[t.size() / 2]);
  }
  return medians;
}

// Calls `run` (one run of `session`, made with SessionOptions::profile)
// `runs` times and prints where the time goes: the medians of each node's
// time summed per op and backend (largest first), each with its share of the sum, and with
// `per_node` each node's median and fastest time too. On a loaded machine a
// node's median can hold a wait for a descheduled OpenMP thread; its fastest
// run is what the kernel itself costs.
inline void print_profile(const hub::Session& session, const std::function<void()>& run, int runs, bool per_node) {
  std::vector<hub::NodeTime> nodes;
  std::vector<std::vector<double>> times;
  for (int r = 0; r < runs; ++r) {
    run();
    nodes = session.last_profile();
    times.resize(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) times[i].push_back(nodes[i].seconds);
  }
  double total = 0, total_min = 0;
  struct OpTime {
    std::string key;  // "op (backend)"
    double seconds = 0;
    int nodes = 0;
  };
  std::vector<OpTime> per_op;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::sort(times[i].begin(), times[i].end());
    nodes[i].seconds = times[i][times[i].size() / 2];
    total += nodes[i].seconds;
    total_min += times[i][0];
    const std::string key = nodes[i].op + " (" + nodes[i].backend + ")";
    auto it = std::find_if(per_op.begin(), per_op.end(), [&](const OpTime& e) { return e.key == key; });
    if (it == per_op.end()) it = per_op.insert(per_op.end(), OpTime{key});
    it->seconds += nodes[i].seconds;
    ++it->nodes;
  }
  std::printf("  per node (%d runs; sum of medians %.3f ms, of fastest %.3f ms)%s\n", runs, total * 1e3,
              total_min * 1e3, per_node ? ":" : "");
  if (per_node)
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].op != "Const")
        std::printf("    %-58s %-14s %-9s median %8.3f ms %5.1f%%  fastest %8.3f ms %5.1f%%\n", nodes[i].node.c_str(),
                    nodes[i].op.c_str(), nodes[i].backend.c_str(), nodes[i].seconds * 1e3,
                    100 * nodes[i].seconds / total, times[i][0] * 1e3, 100 * times[i][0] / total_min);
  std::stable_sort(per_op.begin(), per_op.end(),
                   [](const OpTime& a, const OpTime& b) { return a.seconds > b.seconds; });
  std::printf("  per op (medians, largest first):\n");
  for (const OpTime& o : per_op)
    std::printf("    %-44s %3d nodes %9.3f ms %5.1f%%\n", o.key.c_str(), o.nodes, o.seconds * 1e3,
                100 * o.seconds / total);
}

// The optimised graph run as a module runs it (a memory-planned Session on
// the default backend) with SessionOptions::profile: print_profile of
// `runs` runs on x, after a warm-up run (primitives, weight reorders, the
// memory plan).
inline void print_inference_profile(const hub::OptimizedGraph& og, hub::VariableStore& variables, hub::Output images,
                                    hub::Output logits, const hub::Tensor& x, int runs) {
  hub::SessionOptions options;
  options.plan_memory = true;
  options.profile = true;
  hub::Session session(og.graph(), &variables, options);
  const hub::FeedList feeds{{og.tensor(images), x}};
  session.run(feeds, {og.tensor(logits)});
  print_profile(
      session, [&] { session.run(feeds, {og.tensor(logits)}); }, runs, true);
}

}  // namespace bench
