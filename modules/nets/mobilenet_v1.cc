// slim's MobileNet v1 (mobilenet_v1.py): a 3x3/2 conv of 32 then 13
// depthwise-separable blocks (3x3 depthwise + BN + ReLU6, 1x1 pointwise + BN
// + ReLU6) of 64, 128/2, 128, 256/2, 256, 512/2, 5x512, 1024/2, 1024; each depth
// scaled by the multiplier (min 8). Logits: average pool over the final
// feature map, dropout (keep 0.999), 1x1 conv. Batch norm decay 0.9997,
// epsilon 0.001, scale; weights N(0, 0.09) truncated; weight decay 4e-5.
#include <algorithm>

#include "modules/nets/net_util.h"

namespace hub::nets {

Net mobilenet_v1(const Scope& root, Output images, const NetOptions& o, const NetInfo& info) {
  Scope s = root.sub("MobilenetV1");
  auto depth = [&](int64_t d) { return std::max<int64_t>(static_cast<int64_t>(d * info.depth_multiplier), 8); };
  slim::LayerOptions lo = base_options(o, 4e-5);
  lo.activation = slim::relu6();
  set_batch_norm(lo, 0.9997f, 0.001f, true);
  lo.weights_init.initializer = "truncated_normal";
  lo.weights_init.init_params = {0.0, 0.09};
  slim::LayerOptions dw = lo;
  dw.weight_decay = 0;  // slim does not regularize depthwise weights
  struct Layer {
    int64_t stride, depth;
  };
  const Layer layers[] = {{2, 32},  {1, 64},  {2, 128}, {1, 128}, {2, 256}, {1, 256},  {2, 512},
                          {1, 512}, {1, 512}, {1, 512}, {1, 512}, {1, 512}, {2, 1024}, {1, 1024}};
  Net net;
  Output x = slim::conv2d(s, images, depth(layers[0].depth), {3, 3}, "Conv2d_0", lo, {2, 2});
  net.end_points["Conv2d_0"] = x;
  for (int i = 1; i < 14; ++i) {
    std::string base = "Conv2d_" + std::to_string(i);
    int64_t st = layers[i].stride;
    x = slim::depthwise_conv2d(s, x, {3, 3}, base + "_depthwise", dw, {st, st});
    net.end_points[base + "_depthwise"] = x;
    x = slim::conv2d(s, x, depth(layers[i].depth), {1, 1}, base + "_pointwise", lo);
    net.end_points[base + "_pointwise"] = x;
  }
  const Shape& shape = s.graph().spec(x).shape;
  int64_t kh = shape[1] > 0 ? shape[1] : 7, kw = shape[2] > 0 ? shape[2] : 7;
  pooled_logits_head(net, s, x, {kh, kw}, "AvgPool_1a", "Conv2d_1c_1x1", o, lo, 0.999);
  return net;
}

}  // namespace hub::nets
