// slim's ResNet v1 (resnet_v1.py) and v2 (resnet_v2.py), bottleneck units.
// Blocks (base depth, units, stride of the last unit):
//   block1 (64, 3, 2), block2 (128, 4|4|8|24, 2), block3 (256, 6|23|36|36, 2),
//   block4 (512, 3, 1) for 50|101|152|200 layers. v1 unit: relu(shortcut + conv3(conv2(conv1(x)))),
// v2 unit: shortcut + conv3(conv2(conv1(preact))) with preact = relu(bn(x)).
// arg scope: weight decay 1e-4, batch norm decay 0.997, epsilon 1e-5, scale;
// variance-scaling (He) initialization. 224x224x3.
#include "hub/ops/activation.h"
#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/reduction.h"
#include "modules/nets/net_util.h"

namespace hub::nets {

namespace {

// slim's conv2d_same: SAME conv for stride 1, else explicit symmetric-ish pad + VALID.
Output conv2d_same(const Scope& s, Output x, int64_t depth, int64_t k, int64_t stride, const std::string& name,
                   slim::LayerOptions lo) {
  if (stride == 1) {
    lo.padding = "SAME";
    return slim::conv2d(s, x, depth, {k, k}, name, lo);
  }
  int64_t total = k - 1, beg = total / 2, end = total - beg;
  x = ops::pad(s, x, {0, 0, beg, end, beg, end, 0, 0}, name + "_pad");
  lo.padding = "VALID";
  return slim::conv2d(s, x, depth, {k, k}, name, lo, {stride, stride});
}

Output subsample(const Scope& s, Output x, int64_t stride) {
  if (stride == 1) return x;
  return slim::max_pool2d(s, x, {1, 1}, {stride, stride}, "SAME", "shortcut");
}

// v2's pre-activation: relu(batch_norm(x)) with its variables directly under
// scope s (slim.batch_norm(scope='preact' | 'postnorm')), lo's settings.
Output bn_relu(const Scope& s, Output x, const slim::LayerOptions& lo) {
  ops::BatchNormOptions bo = lo.batch_norm;
  bo.is_training = lo.is_training;
  return ops::relu(s, slim::batch_norm(s, x, bo));
}

Output bottleneck(const Scope& s, Output x, int64_t depth, int64_t bottleneck, int64_t stride, bool v2,
                  const slim::LayerOptions& lo) {
  Scope u = s.sub(v2 ? "bottleneck_v2" : "bottleneck_v1");
  int64_t depth_in = s.graph().spec(x).shape.dim(-1);
  slim::LayerOptions linear = lo;
  linear.activation = nullptr;
  Output inner = x;
  if (v2) inner = bn_relu(u.sub("preact"), x, lo);
  Output shortcut;
  if (depth == depth_in) {
    shortcut = subsample(u, x, stride);
  } else {
    slim::LayerOptions sc = linear;
    if (v2) sc.use_batch_norm = false;  // plain conv with biases on the pre-activation
    shortcut = slim::conv2d(u, inner, depth, {1, 1}, "shortcut", sc, {stride, stride});
  }
  Output r = slim::conv2d(u, inner, bottleneck, {1, 1}, "conv1", lo);
  r = conv2d_same(u, r, bottleneck, 3, stride, "conv2", lo);
  slim::LayerOptions last = linear;
  if (v2) last.use_batch_norm = false;
  r = slim::conv2d(u, r, depth, {1, 1}, "conv3", last);
  Output sum = ops::add(u, shortcut, r, "add");
  return v2 ? sum : ops::relu(u, sum, "Relu");
}

}  // namespace

Net resnet(const Scope& root, Output images, const NetOptions& o, const NetInfo& info) {
  bool v2 = info.name.rfind("resnet_v2", 0) == 0;
  const int layers = std::stoi(info.name.substr(info.name.rfind('_') + 1));
  const int block2 = layers == 152 ? 8 : layers == 200 ? 24 : 4;
  const int block3 = layers == 50 ? 6 : layers == 101 ? 23 : 36;
  Scope s = root.sub(info.name);
  slim::LayerOptions lo = base_options(o, 1e-4);
  set_batch_norm(lo, 0.997f, 1e-5f, true);
  lo.weights_init.initializer = "variance_scaling";
  lo.weights_init.init_params = {2.0};
  lo.weights_init.init_mode = "fan_in";
  Net net;
  slim::LayerOptions root_conv = lo;
  if (v2) {  // v2's first conv has neither batch norm nor activation
    root_conv.use_batch_norm = false;
    root_conv.activation = nullptr;
  }
  Output x = conv2d_same(s, images, 64, 7, 2, "conv1", root_conv);
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "SAME", "pool1");
  struct Block {
    int64_t depth;
    int units;
    int64_t stride;
  };
  const Block blocks[] = {{64, 3, 2}, {128, block2, 2}, {256, block3, 2}, {512, 3, 1}};
  for (int b = 0; b < 4; ++b) {
    std::string bname = "block" + std::to_string(b + 1);
    Scope bs = s.sub(bname);
    for (int u = 0; u < blocks[b].units; ++u) {
      int64_t stride = u == blocks[b].units - 1 ? blocks[b].stride : 1;
      x = bottleneck(bs.sub("unit_" + std::to_string(u + 1)), x, blocks[b].depth * 4, blocks[b].depth, stride, v2, lo);
    }
    net.end_points[bname] = x;
  }
  if (v2) x = bn_relu(s.sub("postnorm"), x, lo);
  x = ops::mean(s, x, {1, 2}, true, "pool5");
  net.end_points["global_pool"] = x;
  net.features = ops::squeeze(s, x, {1, 2}, "features");
  if (o.num_classes > 0) {
    net.logits = conv_logits(s, x, o, lo, "logits");
    net.end_points["logits"] = net.logits;
  }
  return net;
}

}  // namespace hub::nets
