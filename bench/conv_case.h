// One convolution case for the convolution benchmarks: its shapes and the
// graph that runs its three passes (forward, backprop-input, backprop-filter)
// from placeholders.
#pragma once

#include <string>

#include "hub/graph/graph.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/scope.h"
#include "hub/ops/state.h"

namespace bench {

struct ConvCase {
  std::string name;
  bool depthwise;
  hub::Shape x, w;
  hub::ops::ConvOptions options;
};

struct ConvGraph {
  hub::Output x, w, y, dy, dx, dw;
  // Flops of one pass (2 per multiply-add; the backprops do as many).
  double flops;
};

inline ConvGraph build_conv(hub::Graph& g, const ConvCase& k) {
  namespace ops = hub::ops;
  hub::Scope s(g);
  ConvGraph c;
  c.x = ops::placeholder(s, hub::DType::kFloat32, k.x, "x");
  c.w = ops::placeholder(s, hub::DType::kFloat32, k.w, "w");
  c.y = k.depthwise ? ops::depthwise_conv2d(s, c.x, c.w, k.options) : ops::conv2d(s, c.x, c.w, k.options);
  c.dy = ops::placeholder(s, hub::DType::kFloat32, g.spec(c.y).shape, "dy");
  c.dx = k.depthwise ? ops::depthwise_conv2d_backprop_input(s, c.x, c.w, c.dy, k.options)
                     : ops::conv2d_backprop_input(s, c.x, c.w, c.dy, k.options);
  c.dw = k.depthwise ? ops::depthwise_conv2d_backprop_filter(s, c.x, c.w, c.dy, k.options)
                     : ops::conv2d_backprop_filter(s, c.x, c.w, c.dy, k.options);
  c.flops = 2.0 * static_cast<double>(g.spec(c.y).shape.num_elements()) * k.w[0] * k.w[1] * (k.depthwise ? 1 : k.w[2]);
  return c;
}

}  // namespace bench
