// slim's MobileNet v2 (mobilenet/mobilenet_v2.py with mobilenet.py and
// conv_blocks.py): "Conv" 3x3/2 of 32, 17 inverted residual blocks
// "expanded_conv", "expanded_conv_1", ... (expand 1x1 to 6x the input depth,
// 3x3 depthwise with the block's stride, linear 1x1 "project"; the input is
// added back when the stride is 1 and the depths agree; the first block has
// expansion 1 and so no "expand" layer), "Conv_1" 1x1 of 1280, global
// average pool, dropout (keep 0.8), 1x1 conv logits. Depths d become
// make_divisible(d * multiplier, 8); below multiplier 1 the last layer keeps
// 1280 (slim's finegrain_classification_mode, as the published checkpoints).
// training_scope: batch norm (decay 0.997, epsilon 0.001, scale) and ReLU6
// everywhere but "project"; weights N(0, 0.09) truncated; weight decay 4e-5
// on convolutions, none on depthwise weights.
#include <algorithm>

#include "hub/ops/elementwise.h"
#include "modules/nets/net_util.h"

namespace hub::nets {

namespace {

// conv_blocks._make_divisible(v, 8): nearest multiple of 8 (at least 8), one
// step up when rounding lost more than 10%.
int64_t make_divisible(double v) {
  int64_t d = std::max<int64_t>(8, static_cast<int64_t>(v + 4.0) / 8 * 8);
  if (static_cast<double>(d) < 0.9 * v) d += 8;
  return d;
}

}  // namespace

Net mobilenet_v2(const Scope& root, Output images, const NetOptions& o, const NetInfo& info) {
  Scope s = root.sub("MobilenetV2");
  const double m = info.depth_multiplier;
  slim::LayerOptions lo = base_options(o, 4e-5);
  lo.activation = slim::relu6();
  set_batch_norm(lo, 0.997f, 0.001f, true);
  lo.weights_init.initializer = "truncated_normal";
  lo.weights_init.init_params = {0.0, 0.09};
  slim::LayerOptions dw = lo;
  dw.weight_decay = 0;
  slim::LayerOptions project = lo;
  project.activation = nullptr;
  Net net;
  Output x = slim::conv2d(s, images, make_divisible(32 * m), {3, 3}, "Conv", lo, {2, 2});
  net.end_points["layer_1"] = x;
  struct Block {
    int64_t stride, depth;
  };
  const Block blocks[] = {{1, 16}, {2, 24}, {1, 24}, {2, 32}, {1, 32},  {1, 32},  {2, 64},  {1, 64}, {1, 64},
                          {1, 64}, {1, 96}, {1, 96}, {1, 96}, {2, 160}, {1, 160}, {1, 160}, {1, 320}};
  for (size_t i = 0; i < std::size(blocks); ++i) {
    Scope b = s.sub(i == 0 ? std::string("expanded_conv") : "expanded_conv_" + std::to_string(i));
    const int64_t in = s.graph().spec(x).shape.dim(-1);
    const int64_t inner = i == 0 ? in : make_divisible(static_cast<double>(in) * 6);
    Output y = x;
    if (inner > in) y = slim::conv2d(b, y, inner, {1, 1}, "expand", lo);
    y = slim::depthwise_conv2d(b, y, {3, 3}, "depthwise", dw, {blocks[i].stride, blocks[i].stride});
    const int64_t out = make_divisible(static_cast<double>(blocks[i].depth) * m);
    y = slim::conv2d(b, y, out, {1, 1}, "project", project);
    if (blocks[i].stride == 1 && out == in) y = ops::add(b, x, y, "add");
    x = y;
    net.end_points["layer_" + std::to_string(i + 2)] = x;
  }
  x = slim::conv2d(s, x, m < 1 ? 1280 : make_divisible(1280 * m), {1, 1}, "Conv_1", lo);
  net.end_points["layer_19"] = x;
  const Shape& shape = s.graph().spec(x).shape;
  pooled_logits_head(net, s, x, {shape[1] > 0 ? shape[1] : 7, shape[2] > 0 ? shape[2] : 7}, "global_pool",
                     "Conv2d_1c_1x1", o, lo, 0.8);
  return net;
}

}  // namespace hub::nets
