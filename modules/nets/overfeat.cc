// slim's OverFeat (overfeat.py), 231x231x3: conv1 11x11/4 VALID 64, pool1
// 2x2/2, conv2 5x5 VALID 256, pool2, conv3 3x3 512, conv4 3x3 1024, conv5 3x3
// 1024, pool5, fc6 6x6 VALID 3072 (as conv), dropout6, fc7 1x1 4096,
// dropout7, fc8 1x1. arg scope: ReLU, weight decay 0.0005, zero biases, conv
// SAME, pools VALID; fc6/fc7 weights N(0, 0.005) truncated with biases 0.1.
#include "modules/nets/net_util.h"

namespace hub::nets {

Net overfeat(const Scope& root, Output images, const NetOptions& o, const NetInfo&) {
  Scope s = root.sub("overfeat");
  slim::LayerOptions lo = base_options(o, 0.0005);
  slim::LayerOptions valid = lo;
  valid.padding = "VALID";
  Net net;
  Output x = slim::conv2d(s, images, 64, {11, 11}, "conv1", valid, {4, 4});
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "VALID", "pool1");
  x = slim::conv2d(s, x, 256, {5, 5}, "conv2", valid);
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "VALID", "pool2");
  x = slim::conv2d(s, x, 512, {3, 3}, "conv3", lo);
  x = slim::conv2d(s, x, 1024, {3, 3}, "conv4", lo);
  x = slim::conv2d(s, x, 1024, {3, 3}, "conv5", lo);
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "VALID", "pool5");
  net.end_points["pool5"] = x;
  slim::LayerOptions fc = lo;
  fc.weights_init.initializer = "truncated_normal";
  fc.weights_init.init_params = {0.0, 0.005};
  fc.biases_init.initializer = "constant";
  fc.biases_init.init_params = {0.1};
  conv_fc_head(net, s, x, o, fc, 6, 3072, keep_prob_or(o, 0.5));
  return net;
}

}  // namespace hub::nets
