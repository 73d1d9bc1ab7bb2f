#include "retrain/head.h"

#include <algorithm>
#include <string>
#include <vector>

#include "hub/core/error.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/matmul.h"
#include "hub/ops/softmax.h"
#include "hub/ops/state.h"

namespace hub::retrain {

FeatureModule check_feature_module(const ModuleSpec& spec, const std::string& handle) {
  const std::string what = "--module " + handle + " is not an image feature-vector module: ";
  std::vector<std::string> names = spec.signature_names();
  FeatureModule f;
  if (std::find(names.begin(), names.end(), "image_feature_vector") != names.end())
    f.signature = "image_feature_vector";
  else if (std::find(names.begin(), names.end(), kDefaultSignature) != names.end())
    f.signature = kDefaultSignature;
  else
    throw_error(Code::kInvalidArgument, what + "it has neither an 'image_feature_vector' nor a 'default' signature");
  const SignatureInfo& sig = spec.signature(f.signature);
  if (sig.inputs.size() != 1)
    throw_error(Code::kInvalidArgument, what + "its " + f.signature + " signature has " +
                                            std::to_string(sig.inputs.size()) + " inputs, expected 1");
  const auto& [in_name, in] = *sig.inputs.begin();
  if (in.dtype != DType::kFloat32 || in.shape.rank() != 4)
    throw_error(Code::kInvalidArgument, what + "input '" + in_name + "' is " + std::string(dtype_name(in.dtype)) +
                                            in.shape.to_string() + ", expected float32 [batch, H, W, C]");
  f.input = in_name;
  auto out = sig.outputs.find("default");
  if (out == sig.outputs.end() && sig.outputs.size() == 1) out = sig.outputs.begin();
  if (out == sig.outputs.end())
    throw_error(Code::kInvalidArgument, what + "its " + f.signature + " signature has no 'default' output");
  if (out->second.dtype != DType::kFloat32 || out->second.shape.rank() != 2 || out->second.shape[1] <= 0)
    throw_error(Code::kInvalidArgument, what + "output '" + out->first + "' is " +
                                            std::string(dtype_name(out->second.dtype)) + out->second.shape.to_string() +
                                            ", expected float32 [batch, D]");
  f.output = out->first;
  f.dim = out->second.shape[1];
  try {
    auto [h, w] = get_expected_image_size(spec);
    f.height = h;
    f.width = w;
    f.channels = get_num_image_channels(spec);
  } catch (const Error&) {
    f.height = in.shape[1];
    f.width = in.shape[2];
    f.channels = in.shape[3];
  }
  if (f.height <= 0 || f.width <= 0 || (f.channels != 1 && f.channels != 3))
    throw_error(Code::kInvalidArgument, what + "its image size " + std::to_string(f.height) + "x" +
                                            std::to_string(f.width) + "x" + std::to_string(f.channels) +
                                            " is not usable");
  return f;
}

Head add_head(const Scope& s, Output features, int64_t dim, int64_t classes, const std::string& final_name,
              const slim::QuantizeOptions& quantize) {
  Scope fr = s.sub("final_retrain_ops");
  ops::VariableOptions w;
  w.initializer = "truncated_normal";
  w.init_params = {0.0, 0.001};
  Head h;
  h.weights = ops::variable(fr.sub("weights"), "final_weights", {dim, classes}, w);
  h.biases = ops::variable(fr.sub("biases"), "final_biases", {classes});
  Output x = slim::quantize_activation(fr.sub("bottleneck"), features, quantize);
  Output weights = slim::quantize_weights(fr.sub("weights"), h.weights, classes, quantize);
  Scope wx = fr.sub("Wx_plus_b");
  h.logits = slim::quantize_activation(wx, ops::add(wx, ops::matmul(wx, x, weights), h.biases), quantize);
  h.probabilities = ops::softmax(s, h.logits, -1, final_name);
  return h;
}

TrainingHead add_training_head(const Scope& s, Output features, int64_t dim, int64_t classes,
                               const std::string& final_name, const slim::QuantizeOptions& quantize) {
  TrainingHead h;
  static_cast<Head&>(h) = add_head(s, features, dim, classes, final_name, quantize);
  h.labels = ops::placeholder(s.sub("input"), DType::kInt64, {kUnknownDim}, "GroundTruthInput");
  h.loss = ops::sparse_softmax_cross_entropy(s.sub("cross_entropy"), h.logits, h.labels);
  return h;
}

}  // namespace hub::retrain
