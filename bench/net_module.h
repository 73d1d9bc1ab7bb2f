// The module the inference benchmarks run: a built-in net as
// create_module_spec makes it (signature "default": images -> logits, 1000
// or 1001 classes), batch-norm statistics and offsets randomised so folding
// them is not a no-op.
#pragma once

#include <functional>
#include <string>

#include "hub/core/random.h"
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

inline bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
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
      if (ends_with(v, "moving_variance"))
        b.initial_values().set(v, uniform(shape, seed++, 0.5f, 2.0f));
      else if (ends_with(v, "moving_mean") || ends_with(v, "beta"))
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

}  // namespace bench
