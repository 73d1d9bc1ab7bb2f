// slim's CifarNet (cifarnet.py): conv1 5x5x64, pool1 2x2/2, norm1 LRN, conv2
// 5x5x64, norm2, pool2, fc3 384, dropout, fc4 192, logits. 32x32x3 input.
// arg scope: conv weights N(0, 5e-2) truncated; fc weights N(0, 0.04) truncated
// with biases 0.1; weight decay 0.004; logits N(0, 1/192), no decay.
#include "modules/nets/net_util.h"

namespace hub::nets {

Net cifarnet(const Scope& root, Output images, const NetOptions& o, const NetInfo&) {
  Scope s = root.sub("CifarNet");
  const CifarLayers l = cifar_layers(o);
  const slim::LayerOptions& conv = l.conv;
  const slim::LayerOptions& fc = l.fc;
  Net net;
  Output x = slim::conv2d(s, images, 64, {5, 5}, "conv1", conv);
  net.end_points["conv1"] = x;
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "VALID", "pool1");
  x = ops::lrn(s, x, cifar_lrn(), "norm1");
  x = slim::conv2d(s, x, 64, {5, 5}, "conv2", conv);
  net.end_points["conv2"] = x;
  x = ops::lrn(s, x, cifar_lrn(), "norm2");
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "VALID", "pool2");
  x = slim::flatten(s, x);
  x = slim::fully_connected(s, x, 384, "fc3", fc);
  x = slim::dropout(s, x, keep_prob_or(o, 0.5), o.is_training, "dropout3");
  x = slim::fully_connected(s, x, 192, "fc4", fc);
  net.end_points["fc4"] = x;
  net.features = x;
  if (o.num_classes > 0) fc_logits(net, s, x, o.num_classes, "logits", l.logits);
  return net;
}

}  // namespace hub::nets
