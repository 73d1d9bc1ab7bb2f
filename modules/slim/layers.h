// TF-Slim-style layers over the graph builder: each layer creates its
// variables under its own scope with slim's names (".../weights",
// ".../biases", ".../BatchNorm/beta", ...), so built-in networks have the
// variable names of the published slim checkpoints.
//
// LayerOptions plays the role of slim.arg_scope: one value carried through a
// network's builder holds the defaults every layer uses (activation,
// initializer, weight decay, batch norm, training mode).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hub/graph/graph.h"
#include "hub/ops/batch_norm.h"
#include "hub/ops/state.h"
#include "modules/slim/quantize.h"

namespace hub::slim {

// An activation applied after a layer; empty = linear.
using Activation = std::function<Output(const Scope&, Output)>;
Activation relu();
Activation relu6();

struct LayerOptions {
  Activation activation = relu();
  // slim's default weights initializer is Xavier/Glorot uniform.
  ops::VariableOptions weights_init = [] {
    ops::VariableOptions o;
    o.initializer = "glorot_uniform";
    return o;
  }();
  ops::VariableOptions biases_init;  // zeros
  bool use_biases = true;            // false: slim's biases_initializer=None (no biases)
  double weight_decay = 0.0;         // L2: weight_decay * sum(w^2) / 2 per weight
  double biases_decay = 0.0;         // the same on biases (slim's biases_regularizer)
  bool use_batch_norm = false;       // replaces biases
  ops::BatchNormOptions batch_norm;  // is_training is taken from is_training below
  bool is_training = false;
  bool trainable = true;
  std::string padding = "SAME";
  // Quantization-aware training (modules/slim/quantize.h): conv2d,
  // depthwise_conv2d, separable_conv2d and fully_connected fake-quantize their
  // weights and their output (after the activation, or after the bias / batch
  // norm when linear), with ranges under <layer>/act_quant/.
  QuantizeMode quantize = QuantizeMode::kOff;
};

// Variables of a layer: weights with the options' initializer and weight
// decay (added to kRegularizationLosses).
Output weights_variable(const Scope& s, const Shape& shape, const LayerOptions& o, const std::string& name = "weights");
Output biases_variable(const Scope& s, int64_t size, const LayerOptions& o, const std::string& name = "biases");

// slim.batch_norm with scope s: under s itself, beta [C] (zeros, trainable;
// only if center), gamma [C] (ones, trainable; only if scale), moving_mean
// [C] (zeros) and moving_variance [C] (ones), both non-trainable; then
// FusedBatchNorm (formulas in hub/ops/batch_norm.h): when training, batch
// statistics and AssignMovingAverage updates listed in kUpdateOps
//   moving_mean     <- moving_mean * decay + batch_mean * (1 - decay)
//   moving_variance <- moving_variance * decay + unbiased_variance * (1 - decay),
// otherwise the moving statistics. Layers normalize under <layer>/BatchNorm
// (slim's scope for a layer's normalizer); resnet_v2 names its own
// ("preact", "postnorm"), as slim's checkpoints do. x must be rank 2 or 4
// with a known last (channel) dimension (InvalidArgument otherwise); a scope
// that already holds these variables is AlreadyExists.
Output batch_norm(const Scope& s, Output x, const ops::BatchNormOptions& options);

// conv -> (batch norm | bias unless !use_biases) -> activation, under scope `name`.
Output conv2d(const Scope& s, Output x, int64_t num_outputs, std::vector<int64_t> kernel, const std::string& name,
              const LayerOptions& o, std::vector<int64_t> stride = {1, 1}, int64_t rate = 1);
// Depthwise 3x3-style convolution (slim.separable_conv2d with num_outputs=None):
// weights "depthwise_weights" [kh,kw,C,multiplier].
Output depthwise_conv2d(const Scope& s, Output x, std::vector<int64_t> kernel, const std::string& name,
                        const LayerOptions& o, std::vector<int64_t> stride = {1, 1}, int64_t depth_multiplier = 1);
// slim.separable_conv2d with num_outputs: depthwise "depthwise_weights"
// [kh,kw,C,multiplier] (stride, o's padding), then pointwise
// "pointwise_weights" [1,1,C*multiplier,num_outputs], then (batch norm |
// bias) and activation. o's weight decay applies to both weights.
Output separable_conv2d(const Scope& s, Output x, int64_t num_outputs, std::vector<int64_t> kernel,
                        const std::string& name, const LayerOptions& o, std::vector<int64_t> stride = {1, 1},
                        int64_t depth_multiplier = 1);
Output fully_connected(const Scope& s, Output x, int64_t num_outputs, const std::string& name, const LayerOptions& o);
Output max_pool2d(const Scope& s, Output x, std::vector<int64_t> kernel, std::vector<int64_t> stride,
                  const std::string& padding, const std::string& name);
Output avg_pool2d(const Scope& s, Output x, std::vector<int64_t> kernel, std::vector<int64_t> stride,
                  const std::string& padding, const std::string& name);
// [N, d1, d2, ...] -> [N, d1*d2*...]; the non-batch dims must be known.
Output flatten(const Scope& s, Output x, const std::string& name = "Flatten");
// slim.dropout: keep_prob, identity unless training.
Output dropout(const Scope& s, Output x, double keep_prob, bool is_training, const std::string& name = "Dropout");

}  // namespace hub::slim
