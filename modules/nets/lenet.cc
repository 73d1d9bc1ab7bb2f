// slim's LeNet (lenet.py): conv1 5x5x32, pool1, conv2 5x5x64, pool2, fc3 1024,
// dropout3 (keep 0.5), fc4 logits. 28x28x1 input. Weights N(0, 0.1) truncated.
#include "hub/ops/state.h"
#include "modules/nets/nets.h"
#include "modules/slim/layers.h"

namespace hub::nets {

Net lenet(const Scope& root, Output images, const NetOptions& o, const NetInfo&) {
  Scope s = root.sub("LeNet");
  slim::LayerOptions lo;
  lo.is_training = o.is_training;
  lo.weight_decay = o.weight_decay >= 0 ? o.weight_decay : 0.0;
  lo.weights_init.initializer = "truncated_normal";
  lo.weights_init.init_params = {0.0, 0.1};
  Net net;
  Output x = slim::conv2d(s, images, 32, {5, 5}, "conv1", lo);
  net.end_points["conv1"] = x;
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "VALID", "pool1");
  x = slim::conv2d(s, x, 64, {5, 5}, "conv2", lo);
  net.end_points["conv2"] = x;
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "VALID", "pool2");
  x = slim::flatten(s, x);
  x = slim::fully_connected(s, x, 1024, "fc3", lo);
  net.end_points["fc3"] = x;
  net.features = x;
  if (o.num_classes > 0) {
    x = slim::dropout(s, x, o.dropout_keep_prob >= 0 ? o.dropout_keep_prob : 0.5, o.is_training, "dropout3");
    slim::LayerOptions linear = lo;
    linear.activation = nullptr;
    net.logits = slim::fully_connected(s, x, o.num_classes, "fc4", linear);
    net.end_points["Logits"] = net.logits;
  }
  return net;
}

}  // namespace hub::nets
