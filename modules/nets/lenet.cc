// slim's LeNet (lenet.py): conv1 5x5x32, pool1, conv2 5x5x64, pool2, fc3 1024,
// dropout3 (keep 0.5), fc4 logits. 28x28x1 input. Weights N(0, 0.1) truncated.
#include "modules/nets/net_util.h"

namespace hub::nets {

Net lenet(const Scope& root, Output images, const NetOptions& o, const NetInfo&) {
  Scope s = root.sub("LeNet");
  slim::LayerOptions lo = base_options(o, 0.0);
  lo.weights_init.initializer = "truncated_normal";
  lo.weights_init.init_params = {0.0, 0.1};
  Net net;
  Output x = slim::conv2d(s, images, 32, {5, 5}, "conv1", lo);
  net.end_points["conv1"] = x;
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "VALID", "pool1");
  x = slim::conv2d(s, x, 64, {5, 5}, "conv2", lo);
  net.end_points["conv2"] = x;
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "VALID", "pool2");
  dense_head(net, s, x, o, lo, {1024, "fc3", "dropout3", "fc4", 0.5});
  return net;
}

}  // namespace hub::nets
