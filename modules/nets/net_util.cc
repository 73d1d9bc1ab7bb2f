// Shared pieces of the built-in networks (see net_util.h).
#include "modules/nets/net_util.h"

#include <algorithm>

#include "hub/ops/array.h"

namespace hub::nets {

double weight_decay_or(const NetOptions& o, double net_default) {
  return o.weight_decay >= 0 ? o.weight_decay : net_default;
}

double keep_prob_or(const NetOptions& o, double net_default) {
  return o.dropout_keep_prob >= 0 ? o.dropout_keep_prob : net_default;
}

slim::LayerOptions base_options(const NetOptions& o, double default_weight_decay) {
  slim::LayerOptions lo;
  lo.is_training = o.is_training;
  lo.quantize = o.quantize;
  lo.weight_decay = weight_decay_or(o, default_weight_decay);
  return lo;
}

void set_batch_norm(slim::LayerOptions& lo, float decay, float epsilon, bool scale) {
  lo.use_batch_norm = true;
  lo.batch_norm.decay = decay;
  lo.batch_norm.epsilon = epsilon;
  lo.batch_norm.scale = scale;
}

slim::LayerOptions linear(slim::LayerOptions lo) {
  lo.activation = nullptr;
  lo.use_batch_norm = false;
  lo.biases_init = {};
  return lo;
}

void fc_logits(Net& net, const Scope& s, Output x, int64_t num_classes, const std::string& name,
               const slim::LayerOptions& lo) {
  net.logits = slim::fully_connected(s, x, num_classes, name, linear(lo));
  net.end_points["Logits"] = net.logits;
}

Output conv_logits(const Scope& s, Output x, const NetOptions& o, const slim::LayerOptions& lo, const std::string& name,
                   const std::string& squeeze_name) {
  x = slim::conv2d(s, x, o.num_classes, {1, 1}, name, linear(lo));
  return o.spatial_squeeze ? ops::squeeze(s, x, {1, 2}, squeeze_name) : x;
}

void dense_head(Net& net, const Scope& s, Output x, const NetOptions& o, const slim::LayerOptions& lo,
                const DenseHead& h) {
  x = slim::flatten(s, x);
  x = slim::fully_connected(s, x, h.units, h.fc, lo);
  net.end_points[h.fc] = x;
  net.features = x;
  if (o.num_classes > 0) {
    x = slim::dropout(s, x, keep_prob_or(o, h.default_keep), o.is_training, h.dropout);
    fc_logits(net, s, x, o.num_classes, h.logits, lo);
  }
}

void conv_fc_head(Net& net, const Scope& s, Output x, const NetOptions& o, slim::LayerOptions fc, int64_t fc6_kernel,
                  int64_t fc6_depth, double keep) {
  fc.padding = "VALID";
  x = slim::conv2d(s, x, fc6_depth, {fc6_kernel, fc6_kernel}, "fc6", fc);
  x = slim::dropout(s, x, keep, o.is_training, "dropout6");
  fc.padding = "SAME";
  x = slim::conv2d(s, x, 4096, {1, 1}, "fc7", fc);
  net.end_points["fc7"] = x;
  net.features = ops::squeeze(s, x, {1, 2}, "fc7_squeezed");
  if (o.num_classes > 0) {
    x = slim::dropout(s, x, keep, o.is_training, "dropout7");
    net.logits = conv_logits(s, x, o, fc, "fc8", "fc8/squeezed");
    net.end_points["fc8"] = net.logits;
  }
}

std::vector<int64_t> reduced_kernel(const Scope& s, Output x, int64_t k) {
  const Shape& shape = s.graph().spec(x).shape;
  return {shape[1] > 0 ? std::min(shape[1], k) : k, shape[2] > 0 ? std::min(shape[2], k) : k};
}

void pooled_logits_head(Net& net, const Scope& s, Output x, std::vector<int64_t> pool, const std::string& pool_name,
                        const std::string& conv_name, const NetOptions& o, const slim::LayerOptions& lo,
                        double default_keep) {
  Scope ls = s.sub("Logits");
  x = slim::avg_pool2d(ls, x, std::move(pool), {1, 1}, "VALID", pool_name);
  net.end_points[pool_name] = x;
  net.features = ops::squeeze(ls, x, {1, 2}, "features");
  if (o.num_classes > 0) {
    x = slim::dropout(ls, x, keep_prob_or(o, default_keep), o.is_training, "Dropout_1b");
    net.logits = conv_logits(ls, x, o, lo, conv_name);
    net.end_points["Logits"] = net.logits;
  }
}

ops::LrnOptions cifar_lrn() {
  ops::LrnOptions l;
  l.depth_radius = 4;
  l.bias = 1.0f;
  l.alpha = 0.001f / 9.0f;
  l.beta = 0.75f;
  return l;
}

CifarLayers cifar_layers(const NetOptions& o) {
  CifarLayers l;
  l.conv.is_training = o.is_training;
  l.conv.quantize = o.quantize;
  l.conv.weights_init.initializer = "truncated_normal";
  l.conv.weights_init.init_params = {0.0, 5e-2};
  l.fc = l.conv;
  l.fc.weights_init.init_params = {0.0, 0.04};
  l.fc.biases_init.initializer = "constant";
  l.fc.biases_init.init_params = {0.1};
  l.fc.weight_decay = weight_decay_or(o, 0.004);
  l.logits = linear(l.conv);
  l.logits.weights_init.init_params = {0.0, 1.0 / 192.0};
  return l;
}

}  // namespace hub::nets
