#include "modules/slim/layers.h"

#include "hub/graph/optimizer.h"
#include "hub/ops/activation.h"
#include "hub/ops/array.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/dropout.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/matmul.h"
#include "hub/ops/pool.h"
#include "hub/ops/reduction.h"

namespace hub::slim {

Activation relu() {
  return [](const Scope& s, Output x) { return ops::relu(s, x); };
}
Activation relu6() {
  return [](const Scope& s, Output x) { return ops::relu6(s, x); };
}

Output weights_variable(const Scope& s, const Shape& shape, const LayerOptions& o, const std::string& name) {
  ops::VariableOptions init = o.weights_init;
  init.trainable = o.trainable;
  Output w = ops::variable(s, name, shape, init);
  if (o.weight_decay > 0 && o.trainable)
    ops::l2_regularizer(s.sub("Regularizer"), w, static_cast<float>(o.weight_decay));
  return w;
}

Output biases_variable(const Scope& s, int64_t size, const LayerOptions& o, const std::string& name) {
  ops::VariableOptions init = o.biases_init;
  init.trainable = o.trainable;
  Output b = ops::variable(s, name, {size}, init);
  if (o.biases_decay > 0 && o.trainable)
    ops::l2_regularizer(s.sub("Regularizer"), b, static_cast<float>(o.biases_decay));
  return b;
}

Output batch_norm(const Scope& s, Output x, const ops::BatchNormOptions& o) {
  const Shape& shape = s.graph().spec(x).shape;
  if ((shape.rank() != 2 && shape.rank() != 4) || shape.dim(-1) == kUnknownDim)
    throw_error(Code::kInvalidArgument, "batch_norm under '" + s.prefix() + "': input '" + s.graph().tensor_name(x) +
                                            "' must be rank 2 or 4 with a known channel dimension, got " +
                                            shape.to_string());
  const Shape c{shape.dim(-1)};
  auto var = [&](const std::string& name, const char* init, bool trainable) {
    ops::VariableOptions v;
    v.initializer = init;
    v.trainable = trainable;
    return ops::variable(s, name, c, v);
  };
  Output beta =
      o.center ? var("beta", "zeros", true) : ops::constant(s, Tensor::zeros(DType::kFloat32, c), "beta_default");
  Output gamma;
  if (o.scale) {
    gamma = var("gamma", "ones", true);
  } else {
    Tensor ones(DType::kFloat32, c);
    ones.fill(1.0);
    gamma = ops::constant(s, ones, "gamma_default");
  }
  Output moving_mean = var("moving_mean", "zeros", false);
  Output moving_variance = var("moving_variance", "ones", false);
  std::vector<Output> bn =
      ops::fused_batch_norm(s, x, gamma, beta, moving_mean, moving_variance, o.epsilon, o.is_training);
  if (o.is_training) {
    ops::assign_moving_average(s, moving_mean, bn[1], o.decay, "AssignMovingAvg");
    ops::assign_moving_average(s, moving_variance, bn[3], o.decay, "AssignMovingAvg_1");
  }
  return bn[0];
}

namespace {
QuantizeOptions quantize_options(const LayerOptions& o) {
  QuantizeOptions q;
  q.mode = o.quantize;
  q.is_training = o.is_training;
  return q;
}

// A layer's weights variable as its op reads it (fake-quantized when asked),
// `out_channels` its output channels (the shape's trailing dims).
Output layer_weights(const Scope& ls, const Shape& shape, int64_t out_channels, const LayerOptions& o,
                     const std::string& name = "weights") {
  return quantize_weights(ls, weights_variable(ls, shape, o, name), out_channels, quantize_options(o));
}

// (batch norm | bias) then activation, then the output's fake quant.
Output finish(const Scope& ls, Output y, int64_t channels, const LayerOptions& o) {
  if (o.use_batch_norm) {
    ops::BatchNormOptions bn = o.batch_norm;
    bn.is_training = o.is_training;
    y = slim::batch_norm(ls.sub("BatchNorm"), y, bn);
  } else if (o.use_biases) {
    y = ops::bias_add(ls, y, biases_variable(ls, channels, o));
  }
  return quantize_activation(ls, o.activation ? o.activation(ls, y) : y, quantize_options(o));
}

int64_t channels_of(const Scope& s, Output x, const std::string& layer) {
  const Shape& shape = s.graph().spec(x).shape;
  if (shape.rank() < 1 || shape.dim(-1) < 0)
    throw_error(Code::kInvalidArgument,
                "layer '" + layer + "': input " + shape.to_string() + " needs a known last (channel) dimension");
  return shape.dim(-1);
}
}  // namespace

Output conv2d(const Scope& s, Output x, int64_t num_outputs, std::vector<int64_t> kernel, const std::string& name,
              const LayerOptions& o, std::vector<int64_t> stride, int64_t rate) {
  Scope ls = s.sub(name);
  int64_t c = channels_of(s, x, ls.prefix());
  Output w = layer_weights(ls, {kernel[0], kernel[1], c, num_outputs}, num_outputs, o);
  ops::ConvOptions co;
  co.strides = stride;
  co.padding = o.padding;
  co.dilations = {rate, rate};
  return finish(ls, ops::conv2d(ls, x, w, co), num_outputs, o);
}

Output depthwise_conv2d(const Scope& s, Output x, std::vector<int64_t> kernel, const std::string& name,
                        const LayerOptions& o, std::vector<int64_t> stride, int64_t depth_multiplier) {
  Scope ls = s.sub(name);
  int64_t c = channels_of(s, x, ls.prefix());
  Output w =
      layer_weights(ls, {kernel[0], kernel[1], c, depth_multiplier}, c * depth_multiplier, o, "depthwise_weights");
  ops::ConvOptions co;
  co.strides = stride;
  co.padding = o.padding;
  return finish(ls, ops::depthwise_conv2d(ls, x, w, co), c * depth_multiplier, o);
}

Output separable_conv2d(const Scope& s, Output x, int64_t num_outputs, std::vector<int64_t> kernel,
                        const std::string& name, const LayerOptions& o, std::vector<int64_t> stride,
                        int64_t depth_multiplier) {
  Scope ls = s.sub(name);
  int64_t c = channels_of(s, x, ls.prefix());
  Output dw =
      layer_weights(ls, {kernel[0], kernel[1], c, depth_multiplier}, c * depth_multiplier, o, "depthwise_weights");
  Output pw = layer_weights(ls, {1, 1, c * depth_multiplier, num_outputs}, num_outputs, o, "pointwise_weights");
  ops::ConvOptions co;
  co.strides = stride;
  co.padding = o.padding;
  Output y = ops::depthwise_conv2d(ls, x, dw, co);
  ops::ConvOptions point;
  point.padding = "VALID";
  return finish(ls, ops::conv2d(ls, y, pw, point), num_outputs, o);
}

Output fully_connected(const Scope& s, Output x, int64_t num_outputs, const std::string& name, const LayerOptions& o) {
  Scope ls = s.sub(name);
  int64_t c = channels_of(s, x, ls.prefix());
  Output w = layer_weights(ls, {c, num_outputs}, num_outputs, o);
  return finish(ls, ops::matmul(ls, x, w), num_outputs, o);
}

Output max_pool2d(const Scope& s, Output x, std::vector<int64_t> kernel, std::vector<int64_t> stride,
                  const std::string& padding, const std::string& name) {
  return ops::max_pool(s.sub(name), x, kernel, stride, padding);
}

Output avg_pool2d(const Scope& s, Output x, std::vector<int64_t> kernel, std::vector<int64_t> stride,
                  const std::string& padding, const std::string& name) {
  return ops::avg_pool(s.sub(name), x, kernel, stride, padding);
}

Output flatten(const Scope& s, Output x, const std::string& name) {
  const Shape& shape = s.graph().spec(x).shape;
  int64_t k = 1;
  for (int i = 1; i < shape.rank(); ++i) {
    if (shape[i] < 0)
      throw_error(Code::kInvalidArgument, "flatten: input " + shape.to_string() + " has unknown non-batch dims");
    k *= shape[i];
  }
  return ops::reshape(s.sub(name), x, {-1, k});
}

Output dropout(const Scope& s, Output x, double keep_prob, bool is_training, const std::string& name) {
  return ops::dropout(s.sub(name), x, 1.0 - keep_prob, is_training);
}

}  // namespace hub::slim
