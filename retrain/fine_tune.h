// Fine-tuning for retrain (`hub retrain --fine_tune`): the module's own
// variables train together with retrain.py's head, as TF Hub's
// hub.Module(spec, trainable=True, tags={"train"}) under retrain's head.
//
// The training graph: images float32 [batch, H, W, C] -> the module's
// feature signature, applied trainable under the scope "module" (its
// variables are "module/<name>" here) -> add_training_head (head.h). The
// module's graph is its {train} tag set when it has one (batch norm on batch
// statistics, its moving statistics updated by the update ops each step, as
// TF-Slim trains), else {} (uses_train_tags() is false then).
//
// Each step is plain SGD, the head's variables at head_learning_rate and the
// module's selected variables at learning_rate:
//   w -= lr * d loss / d w
// Module variables outside the selection (and non-trainable ones such as
// moving statistics) get no gradient; the update ops still run for every
// batch-norm layer, selected or not (slim's trainable_scopes does the same).
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hub/graph/optimizer.h"
#include "hub/graph/session.h"
#include "hub/module/module.h"
#include "retrain/head.h"

namespace hub::retrain {

struct FineTuneOptions {
  // Comma-separated prefixes of the module's own variable names (as the
  // module names them, without "module/"); empty: every trainable variable.
  std::string scopes;
  double learning_rate = 0.001;      // the module's variables
  double head_learning_rate = 0.01;  // the head's
  std::string final_tensor_name = "final_result";
  uint64_t seed = 0;  // graph seed: the head's initial values, as the frozen head's
};

class FineTuner {
 public:
  // The variables of the scope the module is applied under.
  static constexpr const char* kModuleScope = "module";

  // `f` as check_feature_module(spec) found it; the module starts from the
  // spec's weights. Throws InvalidArgument: a module without trainable
  // variables (naming --fine_tune), scopes matching none of them or only
  // variables the features do not depend on (naming --fine_tune_scopes and
  // listing some variable names), a learning rate <= 0 (naming
  // --fine_tune_learning_rate or --learning_rate), a {train} tag set lacking
  // f's signature.
  FineTuner(const ModuleSpec& spec, const FeatureModule& f, int64_t classes, const FineTuneOptions& options);
  ~FineTuner();
  FineTuner(const FineTuner&) = delete;
  FineTuner& operator=(const FineTuner&) = delete;

  bool uses_train_tags() const { return uses_train_tags_; }
  // The module variables that train (the module's names, sorted).
  const std::vector<std::string>& trained_variables() const { return trained_; }

  // One training step on images float32 [n, H, W, C] and labels int64 [n]:
  // runs the update ops, applies the gradients; returns the loss before it,
  // and, when asked, the logits and probabilities [n, classes] of that same
  // forward pass.
  float step(const Tensor& images, const Tensor& labels, Tensor* logits = nullptr, Tensor* probabilities = nullptr);
  // The loss (no update ops, no step) and the class probabilities
  // [n, classes] of the training graph on a batch.
  float loss(const Tensor& images, const Tensor& labels);
  Tensor probabilities(const Tensor& images);

  // The training graph (for TensorBoard's graph tab).
  const Graph& graph() const { return graph_; }
  // Every variable of the training graph: "module/<name>" and the head's
  // (final_retrain_ops/...). Writes through it change what the next call
  // sees (tests perturb weights with it).
  VariableStore& variables() { return variables_; }
  // Copies the module's current values into `to`, an instance of the same
  // spec (any tag set): each of its variables that the training graph has.
  void copy_module_variables(Module& to) const;

 private:
  FeedList feeds(const Tensor& images, const Tensor& labels) const;

  bool uses_train_tags_ = false;
  std::vector<std::string> trained_;
  Graph graph_;
  Output images_;
  TrainingHead head_;
  GradientOps grads_;
  VariableStore variables_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<Optimizer> head_sgd_, module_sgd_;
};

}  // namespace hub::retrain
