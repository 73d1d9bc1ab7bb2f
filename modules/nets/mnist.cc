// TensorFlow's official MNIST CNN (official/mnist): conv 5x5x32 SAME + ReLU,
// max-pool 2x2/2, conv 5x5x64 + ReLU, max-pool, dense 1024 + ReLU, dropout
// 0.4 (keep 0.6), dense 10. 28x28x1 input in [0, 1].
#include "modules/nets/nets.h"
#include "modules/slim/layers.h"

namespace hub::nets {

Net mnist(const Scope& root, Output images, const NetOptions& o, const NetInfo&) {
  Scope s = root.sub("mnist");
  slim::LayerOptions lo;
  lo.is_training = o.is_training;
  lo.weight_decay = o.weight_decay >= 0 ? o.weight_decay : 0.0;
  Net net;
  Output x = slim::conv2d(s, images, 32, {5, 5}, "conv1", lo);
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "SAME", "pool1");
  x = slim::conv2d(s, x, 64, {5, 5}, "conv2", lo);
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "SAME", "pool2");
  net.end_points["pool2"] = x;
  x = slim::flatten(s, x);
  x = slim::fully_connected(s, x, 1024, "dense", lo);
  net.end_points["dense"] = x;
  net.features = x;
  if (o.num_classes > 0) {
    x = slim::dropout(s, x, o.dropout_keep_prob >= 0 ? o.dropout_keep_prob : 0.6, o.is_training, "dropout");
    slim::LayerOptions linear = lo;
    linear.activation = nullptr;
    net.logits = slim::fully_connected(s, x, o.num_classes, "logits", linear);
    net.end_points["Logits"] = net.logits;
  }
  return net;
}

}  // namespace hub::nets
