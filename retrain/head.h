// What retrain puts together: an image feature-vector module and retrain.py's
// classification head on its output. The frozen path (retrain.cc) trains the
// head on cached bottlenecks; fine-tuning (fine_tune.h) stacks the same head
// on the module's graph; the export writes module + head as one module.
#pragma once

#include <cstdint>
#include <string>

#include "hub/graph/graph.h"
#include "hub/module/module.h"
#include "modules/slim/quantize.h"

namespace hub::retrain {

// An image feature-vector module: signature `image_feature_vector` (as
// imported modules and TF2 Hub modules name it) or else `default`, with one
// float32 input [batch, H, W, C] and one float32 output [batch, D] (the one
// named "default", or the only one). height/width/channels are the attached
// image info, else the input's static shape.
struct FeatureModule {
  int64_t height = 0, width = 0, channels = 3, dim = 0;
  std::string signature, input, output;
};

// Checks the inference tag set {} of `spec`; throws InvalidArgument saying
// which part is wrong ("--module <handle> is not an image feature-vector
// module: ..."). `handle` must already be redacted (it is printed).
FeatureModule check_feature_module(const ModuleSpec& spec, const std::string& handle);

// retrain.py's head on features [batch, D], under the scope s:
//   final_retrain_ops/weights/final_weights [D, classes] (truncated normal,
//   stddev 0.001), final_retrain_ops/biases/final_biases [classes] (zeros),
//   logits = features * final_weights + final_biases (final_retrain_ops/Wx_plus_b),
//   probabilities = softmax(logits), a node named `final_name`.
// With quantize.mode kFakeQuant (retrain.py's quantized head, `hub retrain
// --quantize`; modules/slim/quantize.h), fake quantization on the features
// (range final_retrain_ops/bottleneck/act_quant/{min,max}), the weights and
// the logits (final_retrain_ops/Wx_plus_b/act_quant/{min,max}); weights and
// logits are then the fake-quantized tensors.
struct Head {
  Output weights, biases, logits, probabilities;
};
Head add_head(const Scope& s, Output features, int64_t dim, int64_t classes, const std::string& final_name,
              const slim::QuantizeOptions& quantize = {});

// add_head plus what training needs: labels, int64 [batch], the placeholder
// input/GroundTruthInput, and loss, the mean sparse softmax cross entropy of
// logits and labels (a float32 scalar under cross_entropy/).
struct TrainingHead : Head {
  Output labels, loss;
};
TrainingHead add_training_head(const Scope& s, Output features, int64_t dim, int64_t classes,
                               const std::string& final_name, const slim::QuantizeOptions& quantize = {});

}  // namespace hub::retrain
