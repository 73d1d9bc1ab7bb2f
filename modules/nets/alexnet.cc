// slim's alexnet_v2 (alexnet.py), 224x224x3: conv1 11x11/4 VALID 64, pool1
// 3x3/2, conv2 5x5 192, pool2, conv3 3x3 384, conv4 384, conv5 256, pool5,
// fc6 5x5 VALID 4096 (as conv), dropout6, fc7 1x1 4096, dropout7, fc8 1x1.
// arg scope: biases 0.1, weight decay 0.0005, conv SAME, pools VALID;
// fc6/fc7 weights N(0, 0.005) truncated.
#include "modules/nets/net_util.h"

namespace hub::nets {

Net alexnet_v2(const Scope& root, Output images, const NetOptions& o, const NetInfo&) {
  Scope s = root.sub("alexnet_v2");
  slim::LayerOptions lo = base_options(o, 0.0005);
  lo.biases_init.initializer = "constant";
  lo.biases_init.init_params = {0.1};
  Net net;
  slim::LayerOptions valid = lo;
  valid.padding = "VALID";
  Output x = slim::conv2d(s, images, 64, {11, 11}, "conv1", valid, {4, 4});
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "VALID", "pool1");
  x = slim::conv2d(s, x, 192, {5, 5}, "conv2", lo);
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "VALID", "pool2");
  x = slim::conv2d(s, x, 384, {3, 3}, "conv3", lo);
  x = slim::conv2d(s, x, 384, {3, 3}, "conv4", lo);
  x = slim::conv2d(s, x, 256, {3, 3}, "conv5", lo);
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "VALID", "pool5");
  net.end_points["pool5"] = x;
  slim::LayerOptions fc = lo;
  fc.weights_init.initializer = "truncated_normal";
  fc.weights_init.init_params = {0.0, 0.005};
  conv_fc_head(net, s, x, o, fc, 5, 4096, keep_prob_or(o, 0.5));
  return net;
}

}  // namespace hub::nets
