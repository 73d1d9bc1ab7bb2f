#include "retrain/fine_tune.h"

#include <algorithm>
#include <set>

#include "hub/core/error.h"
#include "hub/ops/state.h"
#include "modules/train/checkpoint.h"

namespace hub::retrain {

namespace {

// "a, b, c, ... (N in all)": a few names for a message.
std::string some_names(const std::vector<std::string>& names) {
  std::string out;
  const size_t shown = std::min<size_t>(names.size(), 5);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

}  // namespace

FineTuner::FineTuner(const ModuleSpec& spec, const FeatureModule& f, int64_t classes, const FineTuneOptions& o) {
  if (!(o.learning_rate > 0))
    throw_error(Code::kInvalidArgument,
                "--fine_tune_learning_rate must be positive, got " + std::to_string(o.learning_rate));
  if (!(o.head_learning_rate > 0))
    throw_error(Code::kInvalidArgument,
                "--learning_rate must be positive, got " + std::to_string(o.head_learning_rate));
  const TagSet train_tags{"train"};
  uses_train_tags_ = spec.has_tag_set(train_tags);
  const TagSet tags = uses_train_tags_ ? train_tags : TagSet{};
  if (uses_train_tags_) {
    // The {train} graph must offer the signature check_feature_module chose in {}.
    const std::vector<std::string> names = spec.signature_names(tags);
    if (std::find(names.begin(), names.end(), f.signature) == names.end())
      throw_error(Code::kInvalidArgument, "--fine_tune: the module's {train} tag set has no '" + f.signature +
                                              "' signature (it has: " + some_names(names) + ")");
  }
  Module trainable(spec, tags, /*trainable=*/true);
  graph_.set_seed(o.seed);
  Scope s(graph_);
  images_ = ops::placeholder(s.sub("input"), DType::kFloat32, {kUnknownDim, f.height, f.width, f.channels}, "images");
  VariableStore module_values;
  OutputMap out = trainable.apply(s, {{f.input, images_}}, f.signature, &module_values, kModuleScope);
  auto feature = out.find(f.output);
  if (feature == out.end())
    throw_error(Code::kInvalidArgument, "--fine_tune: the module's " + tag_set_string(tags) + " '" + f.signature +
                                            "' signature has no '" + f.output + "' output");
  head_ = add_training_head(s, feature->second, f.dim, classes, o.final_tensor_name);

  // The module's trainable variables, by the module's own names.
  const std::string prefix = std::string(kModuleScope) + "/";
  std::vector<std::string> trainable_names;
  for (int id : graph_.variables(/*trainable_only=*/true)) {
    const std::string& name = graph_.node(id).name;
    if (name.rfind(prefix, 0) == 0) trainable_names.push_back(name.substr(prefix.size()));
  }
  std::sort(trainable_names.begin(), trainable_names.end());
  if (trainable_names.empty())
    throw_error(Code::kInvalidArgument, "--fine_tune: module " + spec.source() + " has no trainable variables");
  const std::vector<std::string> scopes = train::split_scopes(o.scopes);
  std::vector<std::string> wanted{graph_.node(head_.weights).name, graph_.node(head_.biases).name};
  for (const std::string& name : trainable_names)
    if (scopes.empty() || train::in_scopes(name, scopes)) wanted.push_back(prefix + name);
  if (wanted.size() == 2)
    throw_error(Code::kInvalidArgument, "--fine_tune_scopes '" + o.scopes + "' matches none of the module's " +
                                            std::to_string(trainable_names.size()) +
                                            " trainable variables: " + some_names(trainable_names));
  grads_ = build_gradients(s, head_.loss, wanted);
  for (const std::string& name : grads_.variables)
    if (name.rfind(prefix, 0) == 0) trained_.push_back(name.substr(prefix.size()));
  std::sort(trained_.begin(), trained_.end());
  if (trained_.empty())
    throw_error(Code::kInvalidArgument,
                "--fine_tune_scopes '" + o.scopes + "' selects only variables the module's '" + f.output +
                    "' output does not depend on; it does depend on some of: " + some_names(trainable_names));

  for (const auto& [name, value] : module_values.items()) variables_.set(name, value);
  variables_.initialize(graph_);  // the head: the frozen head's initial values (same seed and names)
  // On a device backend the variables, gradients and updates stay there.
  SessionOptions options;
  options.fetch_to_host = false;
  session_ = std::make_unique<Session>(graph_, &variables_, options);
  if (session_->backend().device() != Device::kCPU) move_variables(variables_, session_->backend().device());
  head_sgd_ = make_optimizer("sgd", LearningRateSchedule::fixed(o.head_learning_rate));
  module_sgd_ = make_optimizer("sgd", LearningRateSchedule::fixed(o.learning_rate));
}

FineTuner::~FineTuner() = default;

FeedList FineTuner::feeds(const Tensor& images, const Tensor& labels) const {
  return {{images_, images}, {head_.labels, labels}};
}

float FineTuner::step(const Tensor& images, const Tensor& labels, Tensor* logits, Tensor* probabilities) {
  GradientList all, head, module;
  std::vector<Tensor> outputs;
  float value = compute_gradients(*session_, grads_, head_.loss, feeds(images, labels), &all,
                                  {head_.logits, head_.probabilities}, &outputs);
  if (logits) *logits = to_host(outputs[0]);
  if (probabilities) *probabilities = to_host(outputs[1]);
  const std::string prefix = std::string(kModuleScope) + "/";
  for (auto& g : all) (g.first.rfind(prefix, 0) == 0 ? module : head).push_back(std::move(g));
  head_sgd_->apply_gradients(variables_, head);
  module_sgd_->apply_gradients(variables_, module);
  return value;
}

float FineTuner::loss(const Tensor& images, const Tensor& labels) {
  return to_host(session_->run_one(feeds(images, labels), head_.loss)).item<float>();
}

Tensor FineTuner::probabilities(const Tensor& images) {
  return to_host(session_->run_one({{images_, images}}, head_.probabilities));
}

void FineTuner::copy_module_variables(Module& to) const {
  const std::string prefix = std::string(kModuleScope) + "/";
  VariableMap vars = to.variable_map();
  for (const std::string& name : vars.names())
    if (variables_.contains(prefix + name)) vars.at(name).assign(variables_.at(prefix + name));
}

}  // namespace hub::retrain
