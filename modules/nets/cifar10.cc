// The TensorFlow CIFAR-10 tutorial model (cifar10.py inference()), on 24x24x3
// crops: conv1 5x5x64, pool1 3x3/2 SAME, norm1 LRN(4, 1.0, 0.001/9, 0.75),
// conv2 5x5x64 (biases 0.1), norm2, pool2, local3 384, local4 192 (weights
// N(0, 0.04), decay 0.004, biases 0.1), softmax_linear 10 (N(0, 1/192)).
#include "hub/ops/lrn.h"
#include "modules/nets/nets.h"
#include "modules/slim/layers.h"

namespace hub::nets {

Net cifar10(const Scope& s, Output images, const NetOptions& o, const NetInfo&) {
  ops::LrnOptions lrn;
  lrn.depth_radius = 4;
  lrn.bias = 1.0f;
  lrn.alpha = 0.001f / 9.0f;
  lrn.beta = 0.75f;
  slim::LayerOptions conv;
  conv.is_training = o.is_training;
  conv.weights_init.initializer = "truncated_normal";
  conv.weights_init.init_params = {0.0, 5e-2};
  slim::LayerOptions conv2 = conv;
  conv2.biases_init.initializer = "constant";
  conv2.biases_init.init_params = {0.1};
  slim::LayerOptions local = conv2;
  local.weights_init.init_params = {0.0, 0.04};
  local.weight_decay = o.weight_decay >= 0 ? o.weight_decay : 0.004;
  Net net;
  Output x = slim::conv2d(s, images, 64, {5, 5}, "conv1", conv);
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "SAME", "pool1");
  x = ops::lrn(s, x, lrn, "norm1");
  x = slim::conv2d(s, x, 64, {5, 5}, "conv2", conv2);
  x = ops::lrn(s, x, lrn, "norm2");
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "SAME", "pool2");
  x = slim::flatten(s, x);
  x = slim::fully_connected(s, x, 384, "local3", local);
  x = slim::fully_connected(s, x, 192, "local4", local);
  net.end_points["local4"] = x;
  net.features = x;
  if (o.num_classes > 0) {
    slim::LayerOptions linear = conv;
    linear.activation = nullptr;
    linear.weights_init.init_params = {0.0, 1.0 / 192.0};
    net.logits = slim::fully_connected(s, x, o.num_classes, "softmax_linear", linear);
    net.end_points["Logits"] = net.logits;
  }
  return net;
}

}  // namespace hub::nets
