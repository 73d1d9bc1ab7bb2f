// slim's Inception v1 (inception_v1.py), v2 (inception_v2.py) and v3
// (inception_v3.py). arg scope (inception_utils): batch norm decay 0.9997,
// epsilon 0.001, no scale; weight decay 4e-5; ReLU. Convs and pools inside the
// mixed blocks use stride 1 and SAME padding.
#include "hub/ops/array.h"
#include "hub/ops/reduction.h"
#include "modules/nets/net_util.h"

namespace hub::nets {

namespace {

slim::LayerOptions inception_options(const NetOptions& o, double init_stddev) {
  slim::LayerOptions lo = base_options(o, 4e-5);
  set_batch_norm(lo, 0.9997f, 0.001f, false);
  if (init_stddev > 0) {
    lo.weights_init.initializer = "truncated_normal";
    lo.weights_init.init_params = {0.0, init_stddev};
  } else {
    lo.weights_init.initializer = "variance_scaling";
    lo.weights_init.init_params = {2.0};
  }
  return lo;
}

// A conv in a mixed block: k x k (or kh x kw), stride 1 SAME unless given.
struct Conv {
  const slim::LayerOptions& lo;
  Output operator()(const Scope& s, Output x, int64_t depth, std::vector<int64_t> k, const std::string& name,
                    std::vector<int64_t> stride = {1, 1}, const std::string& padding = "SAME") const {
    slim::LayerOptions l = lo;
    l.padding = padding;
    return slim::conv2d(s, x, depth, k, name, l, stride);
  }
};

// Inception v1 mixed block: 1x1 | 1x1->3x3 | 1x1->3x3 | pool->1x1.
Output mixed_v1(const Scope& s, Output x, const std::string& name, const Conv& conv, int64_t b0, int64_t b1a,
                int64_t b1b, int64_t b2a, int64_t b2b, int64_t b3, const std::string& b2b_name = "Conv2d_0b_3x3") {
  Scope m = s.sub(name);
  Output y0 = conv(m.sub("Branch_0"), x, b0, {1, 1}, "Conv2d_0a_1x1");
  Output y1 = conv(m.sub("Branch_1"), x, b1a, {1, 1}, "Conv2d_0a_1x1");
  y1 = conv(m.sub("Branch_1"), y1, b1b, {3, 3}, "Conv2d_0b_3x3");
  Output y2 = conv(m.sub("Branch_2"), x, b2a, {1, 1}, "Conv2d_0a_1x1");
  y2 = conv(m.sub("Branch_2"), y2, b2b, {3, 3}, b2b_name);
  Output y3 = slim::max_pool2d(m.sub("Branch_3"), x, {3, 3}, {1, 1}, "SAME", "MaxPool_0a_3x3");
  y3 = conv(m.sub("Branch_3"), y3, b3, {1, 1}, "Conv2d_0b_1x1");
  return ops::concat(m, {y0, y1, y2, y3}, 3);
}

}  // namespace

Net inception_v1(const Scope& root, Output images, const NetOptions& o, const NetInfo&) {
  Scope s = root.sub("InceptionV1");
  slim::LayerOptions lo = inception_options(o, 0.01);
  Conv conv{lo};
  Net net;
  Output x = conv(s, images, 64, {7, 7}, "Conv2d_1a_7x7", {2, 2});
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "SAME", "MaxPool_2a_3x3");
  x = conv(s, x, 64, {1, 1}, "Conv2d_2b_1x1");
  x = conv(s, x, 192, {3, 3}, "Conv2d_2c_3x3");
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "SAME", "MaxPool_3a_3x3");
  x = mixed_v1(s, x, "Mixed_3b", conv, 64, 96, 128, 16, 32, 32);
  x = mixed_v1(s, x, "Mixed_3c", conv, 128, 128, 192, 32, 96, 64);
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "SAME", "MaxPool_4a_3x3");
  x = mixed_v1(s, x, "Mixed_4b", conv, 192, 96, 208, 16, 48, 64);
  x = mixed_v1(s, x, "Mixed_4c", conv, 160, 112, 224, 24, 64, 64);
  x = mixed_v1(s, x, "Mixed_4d", conv, 128, 128, 256, 24, 64, 64);
  x = mixed_v1(s, x, "Mixed_4e", conv, 112, 144, 288, 32, 64, 64);
  x = mixed_v1(s, x, "Mixed_4f", conv, 256, 160, 320, 32, 128, 128);
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "SAME", "MaxPool_5a_2x2");
  // slim names Mixed_5b's second branch-2 conv "Conv2d_0a_3x3"; checkpoints keep it.
  x = mixed_v1(s, x, "Mixed_5b", conv, 256, 160, 320, 32, 128, 128, "Conv2d_0a_3x3");
  x = mixed_v1(s, x, "Mixed_5c", conv, 384, 192, 384, 48, 128, 128);
  net.end_points["Mixed_5c"] = x;
  pooled_logits_head(net, s, x, {7, 7}, "AvgPool_0a_7x7", "Conv2d_0c_1x1", o, lo, 0.8);
  return net;
}

// Inception v2 (Ioffe & Szegedy's BN-Inception, slim's "6a2"), 224x224x3.
// Conv2d_1a_7x7 is slim.separable_conv2d outside the arg scope: depthwise
// multiplier 8, biases and ReLU, no batch norm, no weight decay. Mixed blocks:
// 1x1 | 1x1 -> 3x3 | 1x1 -> 3x3 -> 3x3 | pool -> 1x1, and two reduction blocks
// (Mixed_4a, Mixed_5a) with stride-2 SAME convs and a 3x3/2 max pool. The
// 1x1 reductions start from N(0, 0.09) and the pool projections from
// N(0, 0.1) (truncated), as slim's definition sets them.
Net inception_v2(const Scope& root, Output images, const NetOptions& o, const NetInfo&) {
  Scope s = root.sub("InceptionV2");
  slim::LayerOptions lo = inception_options(o, -1);
  auto conv = [&](const Scope& sc, Output x, int64_t depth, int64_t k, const std::string& name, double stddev = -1,
                  int64_t stride = 1) {
    slim::LayerOptions l = lo;
    if (stddev > 0) {
      l.weights_init.initializer = "truncated_normal";
      l.weights_init.init_params = {0.0, stddev};
    }
    return slim::conv2d(sc, x, depth, {k, k}, name, l, {stride, stride});
  };
  Net net;
  slim::LayerOptions first = base_options(o, 0.0);
  first.weight_decay = 0;  // the arg scope's regularizer covers slim.conv2d only
  first.weights_init.initializer = "truncated_normal";
  first.weights_init.init_params = {0.0, 1.0};
  Output x = slim::separable_conv2d(s, images, 64, {7, 7}, "Conv2d_1a_7x7", first, {2, 2}, 8);
  net.end_points["Conv2d_1a_7x7"] = x;
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "SAME", "MaxPool_2a_3x3");
  x = conv(s, x, 64, 1, "Conv2d_2b_1x1", 0.1);
  x = conv(s, x, 192, 3, "Conv2d_2c_3x3");
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "SAME", "MaxPool_3a_3x3");
  // b0 | b1a -> b1b | b2a -> b2b -> b2b | pool -> b3.
  auto mixed = [&](const std::string& name, int64_t b0, int64_t b1a, int64_t b1b, int64_t b2a, int64_t b2b, int64_t b3,
                   bool max_pool = false) {
    Scope m = s.sub(name);
    Output y0 = conv(m.sub("Branch_0"), x, b0, 1, "Conv2d_0a_1x1");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, conv(b1, x, b1a, 1, "Conv2d_0a_1x1", 0.09), b1b, 3, "Conv2d_0b_3x3");
    Scope b2 = m.sub("Branch_2");
    Output y2 = conv(b2, x, b2a, 1, "Conv2d_0a_1x1", 0.09);
    y2 = conv(b2, conv(b2, y2, b2b, 3, "Conv2d_0b_3x3"), b2b, 3, "Conv2d_0c_3x3");
    Scope p = m.sub("Branch_3");
    Output y3 = max_pool ? slim::max_pool2d(p, x, {3, 3}, {1, 1}, "SAME", "MaxPool_0a_3x3")
                         : slim::avg_pool2d(p, x, {3, 3}, {1, 1}, "SAME", "AvgPool_0a_3x3");
    y3 = conv(p, y3, b3, 1, "Conv2d_0b_1x1", 0.1);
    x = ops::concat(m, {y0, y1, y2, y3}, 3);
    net.end_points[name] = x;
  };
  // 1x1 -> 3x3/2 | 1x1 -> 3x3 -> 3x3/2 | max pool 3x3/2.
  auto reduction = [&](const std::string& name, int64_t b0a, int64_t b0b, int64_t b1a, int64_t b1b) {
    Scope m = s.sub(name);
    Scope b0 = m.sub("Branch_0");
    Output y0 = conv(b0, conv(b0, x, b0a, 1, "Conv2d_0a_1x1", 0.09), b0b, 3, "Conv2d_1a_3x3", -1, 2);
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, x, b1a, 1, "Conv2d_0a_1x1", 0.09);
    y1 = conv(b1, conv(b1, y1, b1b, 3, "Conv2d_0b_3x3"), b1b, 3, "Conv2d_1a_3x3", -1, 2);
    Output y2 = slim::max_pool2d(m.sub("Branch_2"), x, {3, 3}, {2, 2}, "SAME", "MaxPool_1a_3x3");
    x = ops::concat(m, {y0, y1, y2}, 3);
    net.end_points[name] = x;
  };
  mixed("Mixed_3b", 64, 64, 64, 64, 96, 32);
  mixed("Mixed_3c", 64, 64, 96, 64, 96, 64);
  reduction("Mixed_4a", 128, 160, 64, 96);
  mixed("Mixed_4b", 224, 64, 96, 96, 128, 128);
  mixed("Mixed_4c", 192, 96, 128, 96, 128, 128);
  mixed("Mixed_4d", 160, 128, 160, 128, 160, 96);
  mixed("Mixed_4e", 96, 128, 192, 160, 192, 96);
  reduction("Mixed_5a", 128, 192, 192, 256);
  mixed("Mixed_5b", 352, 192, 320, 160, 224, 128);
  mixed("Mixed_5c", 352, 192, 320, 192, 224, 128, true);
  const std::vector<int64_t> k = reduced_kernel(s, x, 7);
  pooled_logits_head(net, s, x, k, "AvgPool_1a_" + std::to_string(k[0]) + "x" + std::to_string(k[1]), "Conv2d_1c_1x1",
                     o, lo, 0.8);
  return net;
}

Net inception_v3(const Scope& root, Output images, const NetOptions& o, const NetInfo&) {
  Scope s = root.sub("InceptionV3");
  slim::LayerOptions lo = inception_options(o, 0.1);
  Conv conv{lo};
  Net net;
  auto pool_branch = [&](const Scope& b, Output x, bool avg, const std::string& name, std::vector<int64_t> stride,
                         const std::string& padding) {
    return avg ? slim::avg_pool2d(b, x, {3, 3}, stride, padding, name)
               : slim::max_pool2d(b, x, {3, 3}, stride, padding, name);
  };
  Output x = conv(s, images, 32, {3, 3}, "Conv2d_1a_3x3", {2, 2}, "VALID");
  x = conv(s, x, 32, {3, 3}, "Conv2d_2a_3x3", {1, 1}, "VALID");
  x = conv(s, x, 64, {3, 3}, "Conv2d_2b_3x3");
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "VALID", "MaxPool_3a_3x3");
  x = conv(s, x, 80, {1, 1}, "Conv2d_3b_1x1", {1, 1}, "VALID");
  x = conv(s, x, 192, {3, 3}, "Conv2d_4a_3x3", {1, 1}, "VALID");
  x = slim::max_pool2d(s, x, {3, 3}, {2, 2}, "VALID", "MaxPool_5a_3x3");
  // Mixed_5b, 5c, 5d: 35x35.
  for (int i = 0; i < 3; ++i) {
    const char* names[] = {"Mixed_5b", "Mixed_5c", "Mixed_5d"};
    Scope m = s.sub(names[i]);
    Output y0 = conv(m.sub("Branch_0"), x, 64, {1, 1}, "Conv2d_0a_1x1");
    Scope b1 = m.sub("Branch_1");
    Output y1 = i == 1 ? conv(b1, x, 48, {1, 1}, "Conv2d_0b_1x1") : conv(b1, x, 48, {1, 1}, "Conv2d_0a_1x1");
    y1 = i == 1 ? conv(b1, y1, 64, {5, 5}, "Conv_1_0c_5x5") : conv(b1, y1, 64, {5, 5}, "Conv2d_0b_5x5");
    Scope b2 = m.sub("Branch_2");
    Output y2 = conv(b2, x, 64, {1, 1}, "Conv2d_0a_1x1");
    y2 = conv(b2, y2, 96, {3, 3}, "Conv2d_0b_3x3");
    y2 = conv(b2, y2, 96, {3, 3}, "Conv2d_0c_3x3");
    Scope b3 = m.sub("Branch_3");
    Output y3 = pool_branch(b3, x, true, "AvgPool_0a_3x3", {1, 1}, "SAME");
    y3 = conv(b3, y3, i == 0 ? 32 : 64, {1, 1}, "Conv2d_0b_1x1");
    x = ops::concat(m, {y0, y1, y2, y3}, 3);
    net.end_points[names[i]] = x;
  }
  {  // Mixed_6a: 17x17.
    Scope m = s.sub("Mixed_6a");
    Output y0 = conv(m.sub("Branch_0"), x, 384, {3, 3}, "Conv2d_1a_1x1", {2, 2}, "VALID");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, x, 64, {1, 1}, "Conv2d_0a_1x1");
    y1 = conv(b1, y1, 96, {3, 3}, "Conv2d_0b_3x3");
    y1 = conv(b1, y1, 96, {3, 3}, "Conv2d_1a_1x1", {2, 2}, "VALID");
    Output y2 = pool_branch(m.sub("Branch_2"), x, false, "MaxPool_1a_3x3", {2, 2}, "VALID");
    x = ops::concat(m, {y0, y1, y2}, 3);
  }
  for (int i = 0; i < 4; ++i) {  // Mixed_6b..6e
    const char* names[] = {"Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e"};
    const int64_t d = i == 0 ? 128 : i == 3 ? 192 : 160;
    Scope m = s.sub(names[i]);
    Output y0 = conv(m.sub("Branch_0"), x, 192, {1, 1}, "Conv2d_0a_1x1");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, x, d, {1, 1}, "Conv2d_0a_1x1");
    y1 = conv(b1, y1, d, {1, 7}, "Conv2d_0b_1x7");
    y1 = conv(b1, y1, 192, {7, 1}, "Conv2d_0c_7x1");
    Scope b2 = m.sub("Branch_2");
    Output y2 = conv(b2, x, d, {1, 1}, "Conv2d_0a_1x1");
    y2 = conv(b2, y2, d, {7, 1}, "Conv2d_0b_7x1");
    y2 = conv(b2, y2, d, {1, 7}, "Conv2d_0c_1x7");
    y2 = conv(b2, y2, d, {7, 1}, "Conv2d_0d_7x1");
    y2 = conv(b2, y2, 192, {1, 7}, "Conv2d_0e_1x7");
    Scope b3 = m.sub("Branch_3");
    Output y3 = pool_branch(b3, x, true, "AvgPool_0a_3x3", {1, 1}, "SAME");
    y3 = conv(b3, y3, 192, {1, 1}, "Conv2d_0b_1x1");
    x = ops::concat(m, {y0, y1, y2, y3}, 3);
    net.end_points[names[i]] = x;
  }
  if (o.create_aux_logits && o.num_classes > 0) {
    Scope a = s.sub("AuxLogits");
    Output y = slim::avg_pool2d(a, x, {5, 5}, {3, 3}, "VALID", "AvgPool_1a_5x5");
    y = conv(a, y, 128, {1, 1}, "Conv2d_1b_1x1");
    slim::LayerOptions l = lo;
    l.weights_init.initializer = "truncated_normal";
    l.weights_init.init_params = {0.0, 0.01};
    l.padding = "VALID";
    y = slim::conv2d(a, y, 768, {5, 5}, "Conv2d_2a_5x5", l);
    l = linear(l);
    l.weights_init.init_params = {0.0, 0.001};
    y = slim::conv2d(a, y, o.num_classes, {1, 1}, "Conv2d_2b_1x1", l);
    net.end_points["AuxLogits"] = ops::squeeze(a, y, {1, 2}, "SpatialSqueeze");
  }
  {  // Mixed_7a: 8x8.
    Scope m = s.sub("Mixed_7a");
    Scope b0 = m.sub("Branch_0");
    Output y0 = conv(b0, x, 192, {1, 1}, "Conv2d_0a_1x1");
    y0 = conv(b0, y0, 320, {3, 3}, "Conv2d_1a_3x3", {2, 2}, "VALID");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, x, 192, {1, 1}, "Conv2d_0a_1x1");
    y1 = conv(b1, y1, 192, {1, 7}, "Conv2d_0b_1x7");
    y1 = conv(b1, y1, 192, {7, 1}, "Conv2d_0c_7x1");
    y1 = conv(b1, y1, 192, {3, 3}, "Conv2d_1a_3x3", {2, 2}, "VALID");
    Output y2 = pool_branch(m.sub("Branch_2"), x, false, "MaxPool_1a_3x3", {2, 2}, "VALID");
    x = ops::concat(m, {y0, y1, y2}, 3);
  }
  for (int i = 0; i < 2; ++i) {  // Mixed_7b, 7c
    const char* names[] = {"Mixed_7b", "Mixed_7c"};
    Scope m = s.sub(names[i]);
    Output y0 = conv(m.sub("Branch_0"), x, 320, {1, 1}, "Conv2d_0a_1x1");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, x, 384, {1, 1}, "Conv2d_0a_1x1");
    y1 = ops::concat(b1,
                     {conv(b1, y1, 384, {1, 3}, "Conv2d_0b_1x3"),
                      conv(b1, y1, 384, {3, 1}, i == 0 ? "Conv2d_0b_3x1" : "Conv2d_0c_3x1")},
                     3);
    Scope b2 = m.sub("Branch_2");
    Output y2 = conv(b2, x, 448, {1, 1}, "Conv2d_0a_1x1");
    y2 = conv(b2, y2, 384, {3, 3}, "Conv2d_0b_3x3");
    y2 = ops::concat(b2, {conv(b2, y2, 384, {1, 3}, "Conv2d_0c_1x3"), conv(b2, y2, 384, {3, 1}, "Conv2d_0d_3x1")}, 3);
    Scope b3 = m.sub("Branch_3");
    Output y3 = pool_branch(b3, x, true, "AvgPool_0a_3x3", {1, 1}, "SAME");
    y3 = conv(b3, y3, 192, {1, 1}, "Conv2d_0b_1x1");
    x = ops::concat(m, {y0, y1, y2, y3}, 3);
    net.end_points[names[i]] = x;
  }
  const std::vector<int64_t> k = reduced_kernel(s, x, 8);
  pooled_logits_head(net, s, x, k, "AvgPool_1a_" + std::to_string(k[0]) + "x" + std::to_string(k[1]), "Conv2d_1c_1x1",
                     o, lo, 0.8);
  return net;
}

}  // namespace hub::nets
