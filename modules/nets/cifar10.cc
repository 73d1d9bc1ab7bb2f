// The TensorFlow CIFAR-10 tutorial model (cifar10.py inference()), on 24x24x3
// crops: conv1 5x5x64, pool1 3x3/2 SAME, norm1 LRN(4, 1.0, 0.001/9, 0.75),
// conv2 5x5x64 (biases 0.1), norm2, pool2, local3 384, local4 192 (weights
// N(0, 0.04), decay 0.004, biases 0.1), softmax_linear 10 (N(0, 1/192)).
#include "modules/nets/net_util.h"

namespace hub::nets {

Net cifar10(const Scope& s, Output images, const NetOptions& o, const NetInfo&) {
  const ops::LrnOptions lrn = cifar_lrn();
  const CifarLayers l = cifar_layers(o);  // local3/4 are CifarNet's fc layers
  slim::LayerOptions conv2 = l.conv;
  conv2.biases_init = l.fc.biases_init;  // 0.1
  Net net;
  Output x = slim::conv2d(s, images, 64, {5, 5}, "conv1", l.conv);
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "SAME", "pool1");
  x = ops::lrn(s, x, lrn, "norm1");
  x = slim::conv2d(s, x, 64, {5, 5}, "conv2", conv2);
  x = ops::lrn(s, x, lrn, "norm2");
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "SAME", "pool2");
  x = slim::flatten(s, x);
  x = slim::fully_connected(s, x, 384, "local3", l.fc);
  x = slim::fully_connected(s, x, 192, "local4", l.fc);
  net.end_points["local4"] = x;
  net.features = x;
  if (o.num_classes > 0) fc_logits(net, s, x, o.num_classes, "softmax_linear", l.logits);
  return net;
}

}  // namespace hub::nets
