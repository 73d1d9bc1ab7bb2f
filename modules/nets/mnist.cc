// TensorFlow's official MNIST CNN (official/mnist): conv 5x5x32 SAME + ReLU,
// max-pool 2x2/2, conv 5x5x64 + ReLU, max-pool, dense 1024 + ReLU, dropout
// 0.4 (keep 0.6), dense 10. 28x28x1 input in [0, 1].
#include "modules/nets/net_util.h"

namespace hub::nets {

Net mnist(const Scope& root, Output images, const NetOptions& o, const NetInfo&) {
  Scope s = root.sub("mnist");
  slim::LayerOptions lo = base_options(o, 0.0);
  Net net;
  Output x = slim::conv2d(s, images, 32, {5, 5}, "conv1", lo);
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "SAME", "pool1");
  x = slim::conv2d(s, x, 64, {5, 5}, "conv2", lo);
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "SAME", "pool2");
  net.end_points["pool2"] = x;
  dense_head(net, s, x, o, lo, {1024, "dense", "dropout", "logits", 0.6});
  return net;
}

}  // namespace hub::nets
